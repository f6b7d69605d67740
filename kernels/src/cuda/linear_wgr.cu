
// ---------------------------------------------------------------------------
// Batch-invariant linear on warpgroup mma with the tokens resident in shared
// memory and the weights streamed straight into registers (sm_90a only), for
// tiles of 16-64 tokens.
//
// The same sums as linear_wg.cu (and so as linear_mma.cu and
// linear_tiles.cu): k in `parts` slices from the weight's shape, each summed
// from zero in ascending 32-wide chunks as the same two k16 steps, the
// slices added in slice order through the cluster. What differs is the data
// path. linear_wg.cu streams weights and tokens through shared-memory
// stages and pays two barriers, a token transpose and a wait for its wgmma
// every 64 k. Here a block first copies its tokens' k slice (or a window of
// it, when the slice does not fit) transposed into the wgmma B layout once;
// then each warp loads its own 16 weight rows' fragments from global memory
// straight into registers, KU chunks a stage, double-buffered as the
// one-token-tile kernel does (linear_mma_tile1: the next stage's loads in
// flight while this one multiplies, the first issued before
// `griddepcontrol.wait`), and runs its warpgroup's wgmma on them with no
// barrier until the next window. The weights' fragment order is the
// mma.m16n8k16 one (lane (g, t) holds k 8t..8t+7 of rows g and g + 8 of its
// warp's 16), which is wgmma's register A layout.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Blocks of WGS warpgroups, each 64 output columns x the BM tokens of the
// block's tile; KU chunks of 32 k a stage; `window` chunks of tokens
// resident at a time (a multiple of KU, the shared memory's size: window x
// BM x 64 bytes). Grid and cluster as linear_wg.cu's.
template <int WGS, int BM, int KU>
__device__ __forceinline__ void linear_wgr(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k,
                                           int n, int parts, int window, int flags) {
    constexpr int NTHREADS = 128 * WGS, BN = 64 * WGS;
    static_assert(BM % 16 == 0 && BM <= 64, "wgmma N of 16-64");
    extern __shared__ uint4 xs[];
    pdl_launch_dependents();
    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    int span = k / parts, kb = part * span, nch = span / 32, nst = (nch + KU - 1) / KU;
    int wc = (warp >> 2) * 64 + (warp & 3) * 16;
    const bf16* wlo = w + (size_t)min(col0 + wc + g, n - 1) * k + kb + 8 * t;
    const bf16* whi = w + (size_t)min(col0 + wc + g + 8, n - 1) * k + kb + 8 * t;
    Frag lo0[KU], hi0[KU], lo1[KU], hi1[KU];
    // Stage s's weight fragments (chunks past the slice left as they are).
    auto load = [&](Frag (&lo)[KU], Frag (&hi)[KU], int s) {
#pragma unroll
        for (int u = 0; u < KU; u++) {
            int c = s * KU + u;
            if (c < nch) {
                lo[u] = ld_frag(wlo + 32 * c);
                hi[u] = ld_frag(whi + 32 * c);
            }
        }
    };
    // Chunks [c0, c0 + window) of the block's tokens into the wgmma layout:
    // piece (row r, chunk c) is the row's 64 bytes of the chunk, stored with
    // its 4-byte words transposed (linear_wg.cu's transpose_x).
    auto load_window = [&](int c0) {
        int chunks = min(window, nch - c0), pieces = BM * chunks;
        for (int p = tid; p < pieces; p += NTHREADS) {
            int r = p % BM, c = p / BM;
            const uint4* src = (const uint4*)(x + (size_t)min(tok0 + r, m - 1) * k + kb + (c0 + c) * 32);
            uint4 h[4];
#pragma unroll
            for (int q = 0; q < 4; q++) h[q] = src[q];
            uint4* dst = xs + 4 * c * BM + r;
            dst[0] = make_uint4(h[0].x, h[1].x, h[2].x, h[3].x);
            dst[BM] = make_uint4(h[0].y, h[1].y, h[2].y, h[3].y);
            dst[2 * BM] = make_uint4(h[0].z, h[1].z, h[2].z, h[3].z);
            dst[3 * BM] = make_uint4(h[0].w, h[1].w, h[2].w, h[3].w);
        }
        // The stores are read by wgmma (the async proxy).
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
    };
    float acc[1][BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; j++) acc[0][j][0] = acc[0][j][1] = acc[0][j][2] = acc[0][j][3] = 0.f;
    unsigned int xbase = smem_addr(xs);
    // Stage s's wgmma steps on (lo, hi); a stage starting a new window first
    // waits for every warp to be done with the last one and loads it.
    auto multiply = [&](Frag (&lo)[KU], Frag (&hi)[KU], int s) {
        int first = s * KU, win0 = first - first % window;
        if (first > 0 && first % window == 0) {
            __syncthreads();
            load_window(first);
        }
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int u = 0; u < KU; u++) {
            int c = first + u;
            if (c < nch) {
                unsigned int at = xbase + 4 * (c - win0) * BM * 16;
                unsigned long long d1 = wg_desc_at(at, BM * 16, 128);
                unsigned long long d2 = wg_desc_at(at + 2 * BM * 16, BM * 16, 128);
                wg_mma_rs<BM>(acc[0], Frag{lo[u].a, hi[u].a, lo[u].b, hi[u].b}, d1);
                wg_mma_rs<BM>(acc[0], Frag{lo[u].c, hi[u].c, lo[u].d, hi[u].d}, d2);
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
        for (int u = 0; u < KU; u++) {
            wg_hold(lo[u].a), wg_hold(lo[u].b), wg_hold(lo[u].c), wg_hold(lo[u].d);
            wg_hold(hi[u].a), wg_hold(hi[u].b), wg_hold(hi[u].c), wg_hold(hi[u].d);
        }
#pragma unroll
        for (int j = 0; j < BM / 8; j++)
            wg_hold(acc[0][j][0]), wg_hold(acc[0][j][1]), wg_hold(acc[0][j][2]), wg_hold(acc[0][j][3]);
    };
    load(lo0, hi0, 0);
    pdl_wait();
    load_window(0);
    for (int s = 0; s < nst; s += 2) {
        if (s + 1 < nst) load(lo1, hi1, s + 1);
        multiply(lo0, hi0, s);
        if (s + 2 < nst) load(lo0, hi0, s + 2);
        if (s + 1 < nst) multiply(lo1, hi1, s + 1);
    }
    __syncthreads();  // every warp is done with the tokens: the partial sums reuse their room
    tiles_store<1, BM / 8, NTHREADS>(acc, (float*)xs, y, bias, m, n, parts, flags & 1, col0 + wc, tok0);
}

#define LINEAR_WGR(WGS, BM, KU)                                                                           \
    extern "C" __global__ void __launch_bounds__(128 * WGS)                                                \
        linear_wgr_##WGS##_##BM##_##KU##_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, \
                                             int k, int n, int parts, int window, int flags) {             \
        linear_wgr<WGS, BM, KU>(y, x, w, bias, m, k, n, parts, window, flags);                             \
    }
LINEAR_WGR(1, 32, 8)
LINEAR_WGR(2, 32, 8)
LINEAR_WGR(1, 64, 8)
LINEAR_WGR(2, 64, 8)
LINEAR_WGR(1, 64, 4)
LINEAR_WGR(2, 64, 4)

#endif
