
// ---------------------------------------------------------------------------
// Weights asked into L2 ahead of their use, on the side stream, while the
// main stream runs kernels that read almost nothing from memory (the
// attention over a short context): the projection after the attention then
// reads its weights from L2 (l2_prefetch.rs says where the engine does it).
// Up to four byte ranges; thread i of the grid asks for lines i, i + n, ...
// of each (`prefetch.global.L2`, nothing written, no register waited on);
// `last` asks for them with the evict-last priority, so that the cache
// lines streamed meanwhile (the key-value cache) go first. Weights are
// never written, so the requests go out before the wait on the kernel
// before (which is only the side stream's previous work).

__device__ __forceinline__ void l2_prefetch_range(const char* p, unsigned long long bytes, int last, size_t i,
                                                  size_t n) {
    for (size_t b = i * 128; b < bytes; b += n * 128) {
#if __CUDA_ARCH__ >= 800
        if (last) asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p + b));
        else asm volatile("prefetch.global.L2 [%0];" ::"l"(p + b));
#else
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p + b));
#endif
    }
}

extern "C" __global__ void l2_prefetch(const char* p0, unsigned long long n0, const char* p1, unsigned long long n1,
                                       const char* p2, unsigned long long n2, const char* p3, unsigned long long n3,
                                       int last) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)gridDim.x * blockDim.x;
    if (p0) l2_prefetch_range(p0, n0, last, i, n);
    if (p1) l2_prefetch_range(p1, n1, last, i, n);
    if (p2) l2_prefetch_range(p2, n2, last, i, n);
    if (p3) l2_prefetch_range(p3, n3, last, i, n);
    pdl_enter();
}
