
// ---------------------------------------------------------------------------
// Batch-invariant small-row linear on tensor cores (bf16, sm_80+).
//
// y[m, n] = x[m, k] W[n, k]^T (+ bias) with the weights as the 16-row A
// operand of mma.m16n8k16 and the tokens as its 8-column B operand ("swap
// A and B"): a block owns 16 output columns, each of its warps one of `parts` equal slices
// of k, walks its slice in ascending 32-wide chunks, and runs every token
// tile of 8 rows through the same chunk sequence, reusing the weight
// fragments it loaded once. Within a chunk, lane (g, t) holds 8 contiguous
// k of weight rows g and g + 8 and of token g; both operands use the same
// k-to-fragment map, so the dot products are exact dot products. A token's
// result depends only on its own row, the chunk order and the slice order
// (the slices' partial sums are added in slice order in shared memory), none
// of which depends on m or on the other tokens: outputs are bit-identical
// whatever batch they are computed in.

struct Frag { unsigned int a, b, c, d; };

__device__ __forceinline__ Frag ld_frag(const bf16* p) {
    uint4 v = *(const uint4*)p;
    return Frag{v.x, v.y, v.z, v.w};
}

// ld_frag as streaming data (ld.global.cs: evict-first in L1 and L2).
__device__ __forceinline__ Frag ld_frag_cs(const bf16* p) {
    uint4 v = __ldcs((const uint4*)p);
    return Frag{v.x, v.y, v.z, v.w};
}

__device__ __forceinline__ void mma_bf16(float (&acc)[4], unsigned int a0, unsigned int a1, unsigned int a2,
                                         unsigned int a3, unsigned int b0, unsigned int b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// One 32-wide chunk: two mma steps (k 0..3 and 4..7 of each lane's 8).
__device__ __forceinline__ void mma_chunk(float (&acc)[4], const Frag& lo, const Frag& hi, const Frag& x) {
    mma_bf16(acc, lo.a, hi.a, lo.b, hi.b, x.a, x.b);
    mma_bf16(acc, lo.c, hi.c, lo.d, hi.d, x.c, x.d);
}

// The slices' partial sums added in slice order into part 0's warp (through
// shared memory); whether this warp holds the totals.
template <int NT>
__device__ __forceinline__ bool mma_sum_parts(float (&acc)[NT][4], int parts, float* partial) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int part = warp % parts;
    if (parts > 1) {
        // Warp w's acc[tt][q] of this lane.
        auto at = [&](int w, int tt, int q) -> float& { return partial[((w * NT + tt) * 4 + q) * 32 + lane]; };
        __syncthreads();  // the previous token block's partial sums are read
#pragma unroll
        for (int tt = 0; tt < NT; tt++)
#pragma unroll
            for (int q = 0; q < 4; q++) at(warp, tt, q) = acc[tt][q];
        __syncthreads();
        if (part != 0) return false;
        for (int p = 1; p < parts; p++) {
#pragma unroll
            for (int tt = 0; tt < NT; tt++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[tt][q] += at(warp + p, tt, q);
        }
    }
    return true;
}

// Adds the k slices' partial sums (mma_sum_parts) and stores the tile, with
// the bias and the optional SiLU-and-mul epilogue.
template <int NT>
__device__ __forceinline__ void mma_store(float (&acc)[NT][4], bf16* y, const bf16* bias, int m, int n, int parts,
                                          bool silu, int col0, float* partial) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (!mma_sum_parts<NT>(acc, parts, partial)) return;
    // acc[tt] = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]: column col0 + g (+8), token tt*8 + 2t (+1).
#pragma unroll
    for (int q = 0; q < 4; q++) {
        int col = col0 + g + (q >= 2 ? 8 : 0);
        float b = (bias && col < n) ? ld(&bias[col]) : 0.f;
#pragma unroll
        for (int tt = 0; tt < NT; tt++) {
            int tok = tt * 8 + 2 * t + (q & 1);
            float v = acc[tt][q] + b;
            if (silu) {
                // Interleaved gate|up: even column = gate_i, the next (lane ^ 4) = up_i,
                // each rounded to bf16 first as if stored.
                float u = __shfl_xor_sync(0xffffffffu, v, 4);
                bf16 tg, tu;
                st(&tg, v);
                st(&tu, u);
                float gv = ld(&tg), uv = ld(&tu);
                if ((g & 1) == 0 && col + 1 < n && tok < m)
                    st(&y[(size_t)tok * (n / 2) + col / 2], SILU_AND_MUL(gv, uv));
            } else if (col < n && tok < m) {
                st(&y[(size_t)tok * n + col], v);
            }
        }
    }
}

// KU: chunks whose weight loads are in flight together (any KU gives the same bits).
template <int NT, int KU>
__device__ __forceinline__ void linear_mma_block(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                                 int k, int n, int parts, bool silu, int col0, float* partial) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int part = warp % parts, span = k / parts, kb = part * span, ke = kb + span;
    const bf16* wlo = w + (size_t)min(col0 + g, n - 1) * k + 8 * t;
    const bf16* whi = w + (size_t)min(col0 + g + 8, n - 1) * k + 8 * t;
    const bf16* xr[NT];
    bool live[NT];
#pragma unroll
    for (int tt = 0; tt < NT; tt++) {
        int tok = tt * 8 + g;
        live[tt] = tok < m;
        xr[tt] = x + (size_t)min(tok, m - 1) * k + 8 * t;
    }
    float acc[NT][4];
#pragma unroll
    for (int tt = 0; tt < NT; tt++) acc[tt][0] = acc[tt][1] = acc[tt][2] = acc[tt][3] = 0.f;
    pdl_wait();
    const Frag zero{0u, 0u, 0u, 0u};
    int kc = kb;
    for (; kc + 32 * KU <= ke; kc += 32 * KU) {
        Frag lo[KU], hi[KU];
#pragma unroll
        for (int u = 0; u < KU; u++) {
            lo[u] = ld_frag(wlo + kc + 32 * u);
            hi[u] = ld_frag(whi + kc + 32 * u);
        }
#pragma unroll
        for (int tt = 0; tt < NT; tt++) {
#pragma unroll
            for (int u = 0; u < KU; u++) {
                Frag xv = live[tt] ? ld_frag(xr[tt] + kc + 32 * u) : zero;
                mma_chunk(acc[tt], lo[u], hi[u], xv);
            }
        }
    }
    for (; kc < ke; kc += 32) {
        Frag lo = ld_frag(wlo + kc), hi = ld_frag(whi + kc);
#pragma unroll
        for (int tt = 0; tt < NT; tt++) {
            Frag xv = live[tt] ? ld_frag(xr[tt] + kc) : zero;
            mma_chunk(acc[tt], lo, hi, xv);
        }
    }
    mma_store<NT>(acc, y, bias, m, n, parts, silu, col0, partial);
}

// Blocks of `groups` x `parts` warps: `groups` tiles of 16 output columns,
// one warp per slice of k each; tokens in blocks of up to 64 (8 tiles of 8).
// flags: bit 0 SiLU epilogue. Launched as a programmatic dependent, it waits
// for the previous kernel before its first load.
// Dynamic shared memory: groups x parts x min(8, tiles) x 4 x 32 floats when
// parts > 1.
template <int KU>
__device__ void linear_mma(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k, int n, int parts,
                           int groups, int flags) {
    extern __shared__ float partial[];
    pdl_launch_dependents();
    int col0 = (blockIdx.x * groups + (threadIdx.x >> 5) / parts) * 16;
    bool silu = flags & 1;
    int yw = silu ? n / 2 : n;
    for (int m0 = 0; m0 < m; m0 += 64) {
        const bf16* xt = x + (size_t)m0 * k;
        bf16* yt = y + (size_t)m0 * yw;
        int mt = min(64, m - m0);
#define MMA_CASE(NT) \
    case NT: linear_mma_block<NT, KU>(yt, xt, w, bias, mt, k, n, parts, silu, col0, partial); break;
        switch ((mt + 7) / 8) {
            MMA_CASE(1) MMA_CASE(2) MMA_CASE(3) MMA_CASE(4) MMA_CASE(5) MMA_CASE(6) MMA_CASE(7)
            default: linear_mma_block<8, KU>(yt, xt, w, bias, mt, k, n, parts, silu, col0, partial); break;
        }
#undef MMA_CASE
    }
}

// NT token tiles (m <= 8 NT), groups = 1: the same arithmetic as
// linear_mma_block<NT, KU>, with the weight and token loads double-buffered
// in registers (the next KU chunks in flight while the current ones
// multiply) and the first KU chunks' weights issued before `pdl_wait`:
// weights never depend on the previous kernel, so their stream starts while
// it drains. One tile takes eight chunks a stage; two or four take four (the
// registers of two stages of every tile). `out` names the weight rows (output
// columns) of the lane's rows g and g + 8 (`out.col(g, hi)`) and stores the
// sums (`out.store(acc, partial)`).
template <int NT, int KU, class Out>
__device__ __forceinline__ void linear_mma_pipelined(const bf16* x, const bf16* w, int m, int k, int n, int parts,
                                                     float* partial, const Out& out) {
    constexpr int STAGE = 32 * KU;
    pdl_launch_dependents();
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int part = warp % parts, span = k / parts, kb = part * span;
    const bf16* wlo = w + (size_t)min(out.col(g, false), n - 1) * k + 8 * t + kb;
    const bf16* whi = w + (size_t)min(out.col(g, true), n - 1) * k + 8 * t + kb;
    bool live[NT];
    const bf16* xr[NT];
#pragma unroll
    for (int tt = 0; tt < NT; tt++) {
        int tok = tt * 8 + g;
        live[tt] = tok < m;
        xr[tt] = x + (size_t)min(tok, m - 1) * k + 8 * t + kb;
    }
    float acc[NT][4];
#pragma unroll
    for (int tt = 0; tt < NT; tt++) acc[tt][0] = acc[tt][1] = acc[tt][2] = acc[tt][3] = 0.f;
    const Frag zero{0u, 0u, 0u, 0u};
    int stages = span / STAGE;
    Frag lo0[KU], hi0[KU], x0[NT][KU], lo1[KU], hi1[KU], x1[NT][KU];
    if (stages > 0) {
#pragma unroll
        for (int u = 0; u < KU; u++) {
            lo0[u] = ld_frag(wlo + 32 * u);
            hi0[u] = ld_frag(whi + 32 * u);
        }
    }
    pdl_wait();
    if (stages > 0) {
#pragma unroll
        for (int tt = 0; tt < NT; tt++)
#pragma unroll
            for (int u = 0; u < KU; u++) x0[tt][u] = live[tt] ? ld_frag(xr[tt] + 32 * u) : zero;
    }
    // Issues the loads of the stage at offset o into one of the two buffers.
    auto load_stage = [&](Frag (&lo)[KU], Frag (&hi)[KU], Frag (&xs)[NT][KU], int o) {
#pragma unroll
        for (int u = 0; u < KU; u++) {
            lo[u] = ld_frag(wlo + o + 32 * u);
            hi[u] = ld_frag(whi + o + 32 * u);
#pragma unroll
            for (int tt = 0; tt < NT; tt++) xs[tt][u] = live[tt] ? ld_frag(xr[tt] + o + 32 * u) : zero;
        }
    };
    auto multiply = [&](Frag (&lo)[KU], Frag (&hi)[KU], Frag (&xs)[NT][KU]) {
#pragma unroll
        for (int tt = 0; tt < NT; tt++)
#pragma unroll
            for (int u = 0; u < KU; u++) mma_chunk(acc[tt], lo[u], hi[u], xs[tt][u]);
    };
    for (int s = 0; s < stages; s += 2) {
        int o1 = (s + 1) * STAGE, o2 = (s + 2) * STAGE;
        if (s + 1 < stages) load_stage(lo1, hi1, x1, o1);
        multiply(lo0, hi0, x0);
        if (s + 2 < stages) load_stage(lo0, hi0, x0, o2);
        if (s + 1 < stages) multiply(lo1, hi1, x1);
    }
    for (int kc = stages * STAGE; kc < span; kc += 32) {
        Frag lo = ld_frag(wlo + kc), hi = ld_frag(whi + kc);
#pragma unroll
        for (int tt = 0; tt < NT; tt++) {
            Frag xv = live[tt] ? ld_frag(xr[tt] + kc) : zero;
            mma_chunk(acc[tt], lo, hi, xv);
        }
    }
    out.template store<NT>(acc, partial);
}

// A block's 16 consecutive output columns, stored as mma_store does.
struct TileColumns {
    bf16* y;
    const bf16* bias;
    int m, n, parts, flags, col0;
    __device__ int col(int g, bool hi) const { return col0 + g + (hi ? 8 : 0); }
    template <int NT>
    __device__ void store(float (&acc)[NT][4], float* partial) const {
        mma_store<NT>(acc, y, bias, m, n, parts, flags & 1, col0, partial);
    }
};

#define LINEAR_MMA_TILES(NT, KU)                                                                                \
    extern "C" __global__ void linear_mma_tile##NT##_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, \
                                                          int m, int k, int n, int parts, int flags) {          \
        extern __shared__ float tile_partial[];                                                                 \
        TileColumns out{y, bias, m, n, parts, flags, (int)blockIdx.x * 16};                                     \
        linear_mma_pipelined<NT, KU>(x, w, m, k, n, parts, tile_partial, out);                                  \
    }
// One token tile (m <= 8): eight chunks a stage; two and four tiles (m <= 16,
// 32): four.
LINEAR_MMA_TILES(1, 8)
LINEAR_MMA_TILES(2, 4)
LINEAR_MMA_TILES(4, 4)
LINEAR_MMA_TILES(8, 2)

// The same with two column tiles a block (blocks of 2 x parts warps: warp w
// the tile w / parts, the k slice w % parts): the warps of one slice load the
// same tokens together, which L1 then serves once; the same bits. Kernels of
// their own: the one-tile kernels reading a tile index from the warp got other
// machine code and ran 2-5% slower (results/h200/b64-2026-12-05, calls 4-5).
#define LINEAR_MMA_TILES_G2(NT, KU)                                                                             \
    extern "C" __global__ void linear_mma_tile##NT##_g2_bf16(bf16* y, const bf16* x, const bf16* w,            \
                                                             const bf16* bias, int m, int k, int n, int parts,  \
                                                             int flags) {                                       \
        extern __shared__ float tile_partial[];                                                                 \
        int col0 = ((int)blockIdx.x * 2 + (int)(threadIdx.x >> 5) / parts) * 16;                                \
        TileColumns out{y, bias, m, n, parts, flags, col0};                                                     \
        linear_mma_pipelined<NT, KU>(x, w, m, k, n, parts, tile_partial, out);                                  \
    }
LINEAR_MMA_TILES_G2(1, 8)
LINEAR_MMA_TILES_G2(2, 4)
LINEAR_MMA_TILES_G2(4, 4)
LINEAR_MMA_TILES_G2(8, 2)

#define LINEAR_MMA(KU)                                                                                         \
    extern "C" __global__ void linear_mma_ku##KU##_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, \
                                                        int m, int k, int n, int parts, int groups, int flags) { \
        linear_mma<KU>(y, x, w, bias, m, k, n, parts, groups, flags);                                          \
    }
LINEAR_MMA(4)
LINEAR_MMA(8)

