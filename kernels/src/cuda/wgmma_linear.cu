
// ---------------------------------------------------------------------------
// A linear for 32-128 rows on warpgroup mma, for timing against the
// engine's forms (wgmma_linear.rs, `specula-gpu-check --wgmma-timing`;
// compiled with wgmma_bits.cu for sm_90a, not part of the engine). Block
// (column tile blockIdx.x, k slice blockIdx.y) of one warpgroup computes
// part[slice][t][c] = sum over its k slice of x[t][k] W[c][k] for 64 output
// columns c and all N tokens t (rows past m read row m - 1 and are not
// stored): stages of 64 k (64 weight rows and N token rows, 16-byte
// cp.async chunks) STAGES deep in shared memory, each consumed by four
// wgmma.m64nNk16 steps. Both operands in the no-swizzle K-major layout:
// chunk (row r, k group kg) of a stage's R-row operand at
// ((kg x R / 8 + r / 8) x 8 + r % 8) x 16 bytes, so a k16 step's operand
// starts at its k group x R / 8 x 128 bytes, core matrices 128 bytes apart
// along the rows (stride offset) and R x 16 bytes apart along k (leading
// offset). wgmma_reduce sums the slices in order into bf16 y.

constexpr int WL_BK = 64;
constexpr int WL_STAGES = 4;

template <int N>
__device__ void wgmma_linear(float* part, const bf16* x, const bf16* w, int m, int k, int n, int parts) {
    extern __shared__ __align__(128) unsigned char wl_smem[];
    constexpr int A_BYTES = 64 * WL_BK * 2, B_BYTES = N * WL_BK * 2, STAGE = A_BYTES + B_BYTES;
    int tid = threadIdx.x, c0 = blockIdx.x * 64, p = blockIdx.y;
    int span = k / parts, kb = p * span, nst = span / WL_BK;
    auto load = [&](int s) {
        unsigned char* stage = wl_smem + (s % WL_STAGES) * STAGE;
        int k0 = kb + s * WL_BK;
        for (int i = tid; i < 64 * 8; i += 128) {
            int r = i >> 3, kg = i & 7;
            cp_async16(stage + ((kg * 8 + (r >> 3)) * 8 + (r & 7)) * 16,
                          w + (size_t)min(c0 + r, n - 1) * k + k0 + kg * 8);
        }
        for (int i = tid; i < N * 8; i += 128) {
            int t = i >> 3, kg = i & 7;
            cp_async16(stage + A_BYTES + ((kg * (N / 8) + (t >> 3)) * 8 + (t & 7)) * 16,
                          x + (size_t)min(t, m - 1) * k + k0 + kg * 8);
        }
    };
    for (int s = 0; s < WL_STAGES - 1; s++) {
        if (s < nst) load(s);
        cp_async_commit();
    }
    float d[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; i++) d[i] = 0.f;
    for (int s = 0; s < nst; s++) {
        // Stage s has landed when at most STAGES - 2 later groups are pending.
        cp_async_wait<WL_STAGES - 2>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        // The buffer stage s + STAGES - 1 fills was read by stage s - 1's
        // steps, all complete (waited below, then the barrier above).
        if (s + WL_STAGES - 1 < nst) load(s + WL_STAGES - 1);
        cp_async_commit();
        unsigned char* stage = wl_smem + (s % WL_STAGES) * STAGE;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < WL_BK / 16; j++) {
            unsigned long long da = wg_desc(stage + 2 * j * 8 * 128, 8 * 128, 128);
            unsigned long long db = wg_desc(stage + A_BYTES + 2 * j * (N / 8) * 128, (N / 8) * 128, 128);
            wgmma_step<N>(d, da, db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    // d: thread (warp w, lane 4g + t4) holds columns c0 + 16w + g (+ 8) of
    // tokens 8j + 2t4 (+ 1).
    int w4 = tid >> 5, l = tid & 31, g = l >> 2, t4 = l & 3;
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            int c = c0 + 16 * w4 + g + (q >= 2 ? 8 : 0), t = 8 * j + 2 * t4 + (q & 1);
            if (c < n && t < m) part[((size_t)p * m + t) * n + c] = d[4 * j + q];
        }
    }
}

// y[t][c] = bf16(sum over slices in order of part[slice][t][c]).
__device__ void wgmma_reduce_body(bf16* y, const float* part, int m, int n, int parts) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, total = (size_t)m * n;
    if (i >= total) return;
    float v = part[i];
    for (int s = 1; s < parts; s++) v += part[(size_t)s * total + i];
    st(&y[i], v);
}

extern "C" __global__ void __launch_bounds__(128)
    wgmma_linear_64(float* part, const bf16* x, const bf16* w, int m, int k, int n, int parts) {
    wgmma_linear<64>(part, x, w, m, k, n, parts);
}
extern "C" __global__ void __launch_bounds__(128)
    wgmma_linear_128(float* part, const bf16* x, const bf16* w, int m, int k, int n, int parts) {
    wgmma_linear<128>(part, x, w, m, k, n, parts);
}
extern "C" __global__ void wgmma_reduce(bf16* y, const float* part, int m, int n, int parts) {
    wgmma_reduce_body(y, part, m, n, parts);
}
