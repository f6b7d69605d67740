// The wgmma bits check (wgmma_bits.rs, `specula-gpu-check --wgmma-bits`),
// compiled on its own for sm_90a (not part of the engine's source): does a warpgroup's
// wgmma.mma_async give the bits of the mma.sync.m16n8k16 steps the engine's
// linears use (linear_mma.cu, linear_tiles.cu), and are a token's bits
// the same whatever the instruction's token count N? If both hold, a
// wgmma linear for many rows can stand beside the small-row kernel without
// breaking batch invariance (issue 18, item 3).
//
// Both kernels compute D[64, N] = C + A[64, K] B[N, K]^T for one block:
// A the weight rows, B the token rows (k contiguous in both), C and D f32,
// k in ascending 16-wide steps. wg_mma: four warps, warp w rows 16w..16w+15,
// one mma.m16n8k16 per 8 tokens and step, operands in the standard fragment
// order read from global memory. wg_wgmma: one warpgroup, one
// wgmma.m64nNk16 per step, both operands staged in shared memory in the
// no-swizzle K-major layout. D is stored in the accumulator order both
// share: thread (warp w, lane 4g + t) holds, per 8 tokens j, rows 16w + g
// and 16w + g + 8 of tokens 8j + 2t and 8j + 2t + 1.

// The bf16 element (r, k) of a [rows, 16] tile in the no-swizzle K-major
// layout: core matrices of 8 rows x 8 k (16 bytes a row, 128 a matrix),
// matrix (r / 8, k / 8) at byte ((r / 8) x 2 + k / 8) x 128: the two k
// halves of a row group 128 bytes apart (the leading byte offset), row
// groups 256 bytes apart (the stride byte offset).
__device__ __forceinline__ int wg_offset(int r, int k) { return (((r >> 3) * 2 + (k >> 3)) << 6) + ((r & 7) << 3) + (k & 7); }

// wg_desc_at for a shared-memory pointer.
__device__ __forceinline__ unsigned long long wg_desc(const void* p, unsigned lbo, unsigned sbo) {
    return wg_desc_at(smem_addr(p), lbo, sbo);
}

// One wgmma.m64nNk16 (bf16 in, f32 accumulate into d: N / 2 floats a thread).
template <int N>
__device__ __forceinline__ void wgmma_step(float* d, unsigned long long da, unsigned long long db);
template <>
__device__ __forceinline__ void wgmma_step<8>(float* d, unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "l"(da), "l"(db), "r"(1));
}
template <>
__device__ __forceinline__ void wgmma_step<16>(float* d, unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "l"(da), "l"(db), "r"(1));
}
template <>
__device__ __forceinline__ void wgmma_step<64>(float* d, unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_step<32>(float* d, unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "r"(1));
}
template <>
__device__ __forceinline__ void wgmma_step<128>(float* d, unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1));
}

// Thread (w, g, t)'s accumulators from c [64, N] (f32, row-major), or into d_out.
template <int N>
__device__ __forceinline__ void wg_frag_io(float* acc, float* mat, bool store) {
    int w = threadIdx.x >> 5, l = threadIdx.x & 31, g = l >> 2, t = l & 3;
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            int r = 16 * w + g + (q >= 2 ? 8 : 0), c = 8 * j + 2 * t + (q & 1);
            if (store) mat[r * N + c] = acc[4 * j + q];
            else acc[4 * j + q] = mat[r * N + c];
        }
    }
}

template <int N>
__device__ void wg_wgmma(float* d_out, const bf16* a, const bf16* b, float* c, int k) {
    __shared__ __align__(128) bf16 sa[64 * 16];
    __shared__ __align__(128) bf16 sb[N * 16];
    float d[N / 2];
    wg_frag_io<N>(d, c, false);
    for (int k0 = 0; k0 < k; k0 += 16) {
        for (int i = threadIdx.x; i < 64 * 16; i += 128) sa[wg_offset(i >> 4, i & 15)] = a[(size_t)(i >> 4) * k + k0 + (i & 15)];
        for (int i = threadIdx.x; i < N * 16; i += 128) sb[wg_offset(i >> 4, i & 15)] = b[(size_t)(i >> 4) * k + k0 + (i & 15)];
        // Generic-proxy stores, then the async proxy (wgmma) reads them.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        wgmma_step<N>(d, wg_desc(sa, 128, 256), wg_desc(sb, 128, 256));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        __syncthreads();
    }
    wg_frag_io<N>(d, d_out, true);
}

// Two bf16 at p (4-byte aligned) as one mma operand register (the lower k in the low half).
__device__ __forceinline__ unsigned wg_pair(const bf16* p) { return *(const unsigned*)p; }

template <int N>
__device__ void wg_mma(float* d_out, const bf16* a, const bf16* b, float* c, int k) {
    int w = threadIdx.x >> 5, l = threadIdx.x & 31, g = l >> 2, t = l & 3;
    float d[N / 2];
    wg_frag_io<N>(d, c, false);
    const bf16* r0 = a + (size_t)(16 * w + g) * k;
    const bf16* r1 = r0 + (size_t)8 * k;
    for (int k0 = 0; k0 < k; k0 += 16) {
        unsigned a0 = wg_pair(r0 + k0 + 2 * t), a1 = wg_pair(r1 + k0 + 2 * t);
        unsigned a2 = wg_pair(r0 + k0 + 2 * t + 8), a3 = wg_pair(r1 + k0 + 2 * t + 8);
#pragma unroll
        for (int j = 0; j < N / 8; j++) {
            const bf16* bt = b + (size_t)(8 * j + g) * k + k0 + 2 * t;
            unsigned b0 = wg_pair(bt), b1 = wg_pair(bt + 8);
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};\n"
                : "+f"(d[4 * j]), "+f"(d[4 * j + 1]), "+f"(d[4 * j + 2]), "+f"(d[4 * j + 3])
                : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
    }
    wg_frag_io<N>(d, d_out, true);
}

// wgmma_bits_{wgmma,mma}_N for the token counts the check compares (N = 8
// is the engine's token tile); one block of 128 threads each.
#define WG_KERNELS(N)                                                                                     \
    extern "C" __global__ void __launch_bounds__(128)                                                     \
        wgmma_bits_wgmma_##N(float* d, const bf16* a, const bf16* b, float* c, int k) {                   \
        wg_wgmma<N>(d, a, b, c, k);                                                                       \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(128)                                                     \
        wgmma_bits_mma_##N(float* d, const bf16* a, const bf16* b, float* c, int k) {                     \
        wg_mma<N>(d, a, b, c, k);                                                                         \
    }
WG_KERNELS(8)
WG_KERNELS(16)
WG_KERNELS(64)
