// Kernels only the lab runs (included after the project's kernels): a pure
// read stream (the ceiling of any weight-streaming kernel) and a tensor-core
// linear that stages its weights through shared memory with cp.async (same
// arithmetic as linear_mma_tile1; measured slower on the H200, kept as the
// negative result it is).
__global__ void stream_read(const uint4* p, size_t n16, float* sink) {
    pdl_launch_dependents();
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    uint4 a[4];
#pragma unroll
    for (int u = 0; u < 4; u++) a[u] = (i + u * stride < n16) ? p[i + u * stride] : make_uint4(0, 0, 0, 0);
    pdl_wait();
#pragma unroll
    for (int u = 0; u < 4; u++) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w;
    for (i += 4 * stride; i < n16; i += 4 * stride) {
#pragma unroll
        for (int u = 0; u < 4; u++) a[u] = (i + u * stride < n16) ? p[i + u * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < 4; u++) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w;
    }
    if (acc == 0x12345678u) sink[0] = 1.f;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// A cp.async ring of ST stages per warp (each 16 rows x 32*KU k), ST-1 stages issued before pdl_wait.
template <int ST, int KU>
__global__ void mma1_cpasync(bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int parts, int silu) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int ROWB = 64 * KU + 64;  // bytes per row in smem (padded: stride = 64 mod 128)
    constexpr int STB = 16 * ROWB;      // bytes per stage
    pdl_launch_dependents();
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int col0 = blockIdx.x * 16;
    int part = warp % parts, span = k / parts, kb = part * span;
    unsigned char* ring = smem_raw + (size_t)warp * ST * STB;
    float* partial = (float*)(smem_raw + (size_t)(blockDim.x >> 5) * ST * STB);
    int nst = span / (32 * KU);
    // copy lane mapping: each instruction covers rows (lane / LPR) .. with LPR lanes per row
    constexpr int LPR = 4 * KU;  // 16B pieces per row (64*KU bytes / 16)
    auto issue = [&](int s) {
        unsigned char* dst = ring + (s % ST) * STB;
        int koff = kb + s * 32 * KU;
#pragma unroll
        for (int it = 0; it < (16 * LPR) / 32; it++) {
            int piece = it * 32 + lane;
            int r = piece / LPR, c = piece % LPR;
            const bf16* src = w + (size_t)min(col0 + r, n - 1) * k + koff + c * 8;
            cp_async16(dst + r * ROWB + c * 16, src);
        }
    };
#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < nst) issue(s);
        cp_commit();
    }
    pdl_wait();
    bool live = g < m;
    const bf16* xr = x + (size_t)min(g, m - 1) * k + 8 * t + kb;
    const Frag zero{0u, 0u, 0u, 0u};
    float acc[1][4] = {{0.f, 0.f, 0.f, 0.f}};
    for (int s = 0; s < nst; s++) {
        Frag xv[KU];
#pragma unroll
        for (int u = 0; u < KU; u++) xv[u] = live ? ld_frag(xr + s * 32 * KU + 32 * u) : zero;
        if (s + ST - 1 < nst) issue(s + ST - 1);
        cp_commit();
        cp_wait<ST - 1>();
        __syncwarp();
        const unsigned char* src = ring + (s % ST) * STB;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            Frag lo = *(const Frag*)(src + g * ROWB + u * 64 + t * 16);
            Frag hi = *(const Frag*)(src + (g + 8) * ROWB + u * 64 + t * 16);
            mma_chunk(acc[0], lo, hi, xv[u]);
        }
        __syncwarp();
    }
    const bf16* wlo = w + (size_t)min(col0 + g, n - 1) * k + 8 * t + kb;
    const bf16* whi = w + (size_t)min(col0 + g + 8, n - 1) * k + 8 * t + kb;
    for (int kc = nst * 32 * KU; kc < span; kc += 32) {
        Frag lo = ld_frag(wlo + kc), hi = ld_frag(whi + kc), xv = live ? ld_frag(xr + kc) : zero;
        mma_chunk(acc[0], lo, hi, xv);
    }
    mma_store<1>(acc, y, nullptr, m, n, parts, silu, col0, partial);
}

template <int ST, int KU>
static void launch_cpasync(bf16* y, const bf16* x, const Lin& L, int silu) {
    int n = L.n, k = L.k, parts = k_parts(k, n);
    size_t ring = (size_t)parts * ST * 16 * (64 * KU + 64);
    size_t smem = ring + parts * 4 * 32 * 4;
    static bool attr = false;
    if (!attr) { CK(cudaFuncSetAttribute(mma1_cpasync<ST, KU>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)); attr = true; }
    launch(mma1_cpasync<ST, KU>, dim3((n + 15) / 16), dim3(32 * parts), smem, y, x, (const bf16*)L.w, 1, k, n, parts, silu);
}

static void lab_linear(int method, bf16* y, const bf16* x, const Lin& L, int silu) {
    int n = L.n, k = L.k, parts = k_parts(k, n);
    size_t smem = parts > 1 ? parts * 4 * 32 * 4 : 0;
    switch (method) {
        case 3: launch(linear_mma_tile1_bf16, dim3((n + 15) / 16), dim3(32 * parts), smem, y, x, (const bf16*)L.w, (const bf16*)nullptr, 1, k, n, parts, silu); break;
        case 4: launch_cpasync<4, 4>(y, x, L, silu); break;
        case 5: launch_cpasync<6, 4>(y, x, L, silu); break;
        case 6: launch_cpasync<4, 8>(y, x, L, silu); break;
        default: printf("no method %d\n", method); exit(1);
    }
}
