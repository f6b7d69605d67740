
// ---------------------------------------------------------------------------
// Batch-invariant linear for token blocks of up to 64 rows, weights streamed
// straight into registers (bf16, sm_90).
//
// y[m, n] = x[m, k] W[n, k]^T (+ bias) with exactly the per-output arithmetic
// of linear_mma.cu (k in `parts` equal slices from the weight's shape, each
// slice summed from zero in ascending 32-wide chunks, every chunk as the
// same two mma.m16n8k16 steps with lane (g, t) holding k 8t..8t+7 of weight
// rows g and g + 8 and of token g, the slices' sums added in slice order),
// so a row's bits are the small-row kernel's whatever the batch. What
// differs is the data movement, for 9-64 rows per block where the
// small-row kernel re-reads every token from L2 for each 16 columns and the
// tiled kernel pays a shared-memory round trip for every weight byte:
// each warp owns 32 output columns (two 16-row A tiles) and loads their
// weights from global memory into registers, the next stage's loads in
// flight while the current stage multiplies; the block's tokens (one block
// of up to 64) are staged once per 64-wide k stage in shared memory through
// cp.async, STREAM_STAGES deep, and read by every warp. Weight bytes: one
// pass; shared-memory traffic per weight byte: the tokens only. The k
// slices are the blocks of a cluster, combined through distributed shared
// memory in slice order as in linear_tiles.cu.

constexpr int STREAM_BK = 64;
constexpr int STREAM_STAGES = 4;

// NT token tiles of 8 (the block's tokens), WARPS warps of 32 columns.
// Dynamic shared memory: max(STREAM_STAGES x 8 NT x 128 bytes, 2 NT x 4 x
// 32 WARPS floats).
template <int NT, int WARPS, int DEPTH>
__device__ __forceinline__ void linear_stream(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                              int k, int n, int parts, int flags) {
    constexpr int NTHREADS = 32 * WARPS, XROWS = 8 * NT, STAGE_UNITS = XROWS * 8;
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    int part = blockIdx.x, tok0 = blockIdx.y * 64, col0 = (blockIdx.z * WARPS + warp) * 32;
    int span = k / parts, kb = part * span, nst = (span + STREAM_BK - 1) / STREAM_BK;
    const bf16* wrow[2][2];
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
        for (int h = 0; h < 2; h++) wrow[a][h] = w + (size_t)min(col0 + 16 * a + 8 * h + g, n - 1) * k + kb + 8 * t;
    const Frag zero{0u, 0u, 0u, 0u};
    // Stage s's weights: [chunk][A tile][rows g / g + 8]; chunks past the
    // slice (its last 32 k when it ends mid-stage) are zeros, never used.
    auto load_w = [&](Frag (&wf)[2][2][2], int s) {
#pragma unroll
        for (int c = 0; c < 2; c++) {
            int kc = s * STREAM_BK + 32 * c;
#pragma unroll
            for (int a = 0; a < 2; a++)
#pragma unroll
                for (int h = 0; h < 2; h++) wf[c][a][h] = kc < span ? ld_frag(wrow[a][h] + kc) : zero;
        }
    };
    // Stage s's tokens into ring slot s % STREAM_STAGES (rows past m repeat
    // the last row: their outputs are never stored).
    auto load_x = [&](int s) {
        uint4* buf = tiles + (s % STREAM_STAGES) * STAGE_UNITS;
        for (int i = tid; i < STAGE_UNITS; i += NTHREADS) {
            int r = i >> 3, u = i & 7;
            if (s * STREAM_BK + u * 8 >= span) continue;
            const bf16* src = x + (size_t)min(tok0 + r, m - 1) * k + kb + s * STREAM_BK + u * 8;
            cp_async16(buf + tile_unit(r, u), src);
        }
    };
    float acc[2][NT][4];
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
        for (int b = 0; b < NT; b++) acc[a][b][0] = acc[a][b][1] = acc[a][b][2] = acc[a][b][3] = 0.f;
    auto compute = [&](const Frag (&wf)[2][2][2], int s) {
        const uint4* xbuf = tiles + (s % STREAM_STAGES) * STAGE_UNITS;
        int chunks = min(2, (span - s * STREAM_BK) / 32);
#pragma unroll
        for (int c = 0; c < 2; c++) {
            if (c < chunks) {
                Frag xb[NT];
#pragma unroll
                for (int b = 0; b < NT; b++) xb[b] = frag_at(xbuf, b * 8 + g, 4 * c + t);
#pragma unroll
                for (int a = 0; a < 2; a++)
#pragma unroll
                    for (int b = 0; b < NT; b++)
                        mma_step(acc[a][b], wf[c][a][0].a, wf[c][a][1].a, wf[c][a][0].b, wf[c][a][1].b, xb[b].a,
                                 xb[b].b);
#pragma unroll
                for (int a = 0; a < 2; a++)
#pragma unroll
                    for (int b = 0; b < NT; b++)
                        mma_step(acc[a][b], wf[c][a][0].c, wf[c][a][1].c, wf[c][a][0].d, wf[c][a][1].d, xb[b].c,
                                 xb[b].d);
            }
        }
    };
    // Stage s + 1's weights (DEPTH 2) or s + 1 and s + 2's (DEPTH 3) are in
    // flight while stage s multiplies.
    Frag w0[2][2][2], w1[2][2][2], w2[2][2][2];
    // Weights never depend on the previous kernel: the first stages' loads
    // go out before `pdl_wait`.
    load_w(w0, 0);
    if (DEPTH == 3 && nst > 1) load_w(w1, 1);
    pdl_wait();
#pragma unroll
    for (int s = 0; s < STREAM_STAGES - 1; s++) {
        if (s < nst) load_x(s);
        cp_async_commit();
    }
    // Waits for stage s's tokens and frees the slot stage s - 1 used.
    auto next_x = [&](int s) {
        cp_async_wait<STREAM_STAGES - 2>();
        __syncthreads();
        if (s + STREAM_STAGES - 1 < nst) load_x(s + STREAM_STAGES - 1);
        cp_async_commit();
    };
    if (DEPTH == 2) {
        for (int s = 0; s < nst; s += 2) {
            if (s + 1 < nst) load_w(w1, s + 1);
            next_x(s);
            compute(w0, s);
            if (s + 1 >= nst) break;
            if (s + 2 < nst) load_w(w0, s + 2);
            next_x(s + 1);
            compute(w1, s + 1);
        }
    } else {
        for (int s = 0; s < nst; s += 3) {
            if (s + 2 < nst) load_w(w2, s + 2);
            next_x(s);
            compute(w0, s);
            if (s + 1 >= nst) break;
            if (s + 3 < nst) load_w(w0, s + 3);
            next_x(s + 1);
            compute(w1, s + 1);
            if (s + 2 >= nst) break;
            if (s + 4 < nst) load_w(w1, s + 4);
            next_x(s + 2);
            compute(w2, s + 2);
        }
    }
    cp_async_wait<0>();
    __syncthreads();
    unsigned int rank = 0;
    constexpr int NACC = 2 * NT * 4;
    if (parts > 1) {
        float* partial = (float*)tiles;
#pragma unroll
        for (int a = 0; a < 2; a++)
#pragma unroll
            for (int b = 0; b < NT; b++)
#pragma unroll
                for (int q = 0; q < 4; q++) partial[((a * NT + b) * 4 + q) * NTHREADS + tid] = acc[a][b][q];
        cluster_sync();
        rank = cluster_rank();
#pragma unroll
        for (int i = 0; i < NACC; i++) {
            if (i % parts != (int)rank) continue;
            const float* p = partial + i * NTHREADS + tid;
            float v = ld_cluster(p, 0);
            for (int r = 1; r < parts; r++) v += ld_cluster(p, r);
            acc[i / (NT * 4)][(i / 4) % NT][i % 4] = v;
        }
        cluster_sync();
    }
    bool silu = flags & 1;
    // acc[a][b] = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]: column
    // col0 + 16a + g (+8), token tok0 + 8b + 2t (+1).
#pragma unroll
    for (int a = 0; a < 2; a++) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            int col = col0 + a * 16 + g + (q >= 2 ? 8 : 0);
            float bv = (bias && col < n) ? ld(&bias[col]) : 0.f;
#pragma unroll
            for (int b = 0; b < NT; b++) {
                if (parts > 1 && ((a * NT + b) * 4 + q) % parts != (int)rank) continue;
                int tok = tok0 + b * 8 + 2 * t + (q & 1);
                float v = acc[a][b][q] + bv;
                if (silu) {
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
}

// Token tiles per block from the rows: a block of 64 tokens, or the rows
// when fewer (tiles of 8). One kernel per tile count keeps each one's
// accumulators in registers.
#define LINEAR_STREAM(NT, WARPS, DEPTH)                                                                    \
    extern "C" __global__ void __launch_bounds__(32 * WARPS)                                               \
        linear_stream_t##NT##_w##WARPS##_d##DEPTH##_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, \
                                                         int m, int k, int n, int parts, int flags) {     \
        linear_stream<NT, WARPS, DEPTH>(y, x, w, bias, m, k, n, parts, flags);                             \
    }
LINEAR_STREAM(2, 4, 2)
LINEAR_STREAM(3, 4, 2)
LINEAR_STREAM(4, 4, 2)
LINEAR_STREAM(6, 4, 2)
LINEAR_STREAM(8, 4, 2)
LINEAR_STREAM(2, 4, 3)
LINEAR_STREAM(3, 4, 3)
LINEAR_STREAM(4, 4, 3)
LINEAR_STREAM(6, 4, 3)
LINEAR_STREAM(8, 4, 3)
LINEAR_STREAM(2, 2, 3)
LINEAR_STREAM(4, 2, 3)
LINEAR_STREAM(8, 2, 3)
