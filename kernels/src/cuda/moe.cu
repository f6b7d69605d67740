
// ---------------------------------------------------------------------------
// Mixture of experts (DeepSeek V2/V3, Kimi, Qwen3-MoE) for any number of
// rows, batch-invariant: router logits in f32 per row; routing per row from
// its own logits (the CPU engine's router.rs); a plan that lists each
// expert's (row, slot) pairs in row order; grouped products that read only
// the routed experts' weights (one launch per projection for every expert);
// the routed outputs summed per row in ascending expert id.

// logits[r, e] = x[r] . gate[e] in f32 (warp_dot: the order depends on k
// alone). One warp per expert; row groups over grid.y.
template <typename T>
__device__ void moe_router_logits(float* logits, const T* x, const T* gate, int rows, int k, int experts, int vec) {
    int e = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (e >= experts) return;
    const T* w = gate + (size_t)e * k;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        float acc = warp_dot(w, x + (size_t)r * k, k, vec != 0, lane);
        if (lane == 0) logits[(size_t)r * experts + e] = acc;
    }
}

// The router logits of rows the block normalises itself (moe_route with a
// norm): per row of the block (grid.y strided), the post-attention RMSNorm
// of residual + attn (rms_norm_row: rms_norm_residual's bits, as its
// NORM_THREADS threads sum) into dynamic shared memory, kept in `normed` by the
// first column of blocks, then each warp's expert logit from it (warp_dot:
// the bits of reading the stored row).
template <typename T>
__device__ void moe_router_logits_normed(float* logits, T* normed, const T* residual, const T* attn, const T* norm_w,
                                         float eps, const T* gate, int rows, int k, int experts) {
    extern __shared__ float smem[];
    T* row = (T*)smem;
    int e = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        size_t o = (size_t)r * k;
        rms_norm_row(row, blockIdx.x == 0 ? normed + o : nullptr, residual + o, attn + o, norm_w, eps, k);
        __syncthreads();
        if (e < experts) {
            float acc = warp_dot(gate + (size_t)e * k, row, k, true, lane);
            if (lane == 0) logits[(size_t)r * experts + e] = acc;
        }
        __syncthreads();
    }
}

// Router logits and routing in one launch: every block computes its
// experts' logits for its rows (moe_router_logits), and the last block to
// finish (a ticket counter, zero between launches, which it resets) routes
// every row and lays out the pairs (moe_route_plan) from the logits the
// other blocks left in L2. Before waiting on the kernel before it, each
// warp of the first row group asks L2 for its expert's gate row (weights:
// no kernel writes them). With norm_w, x is made here: the post-attention norm of residual +
// attn (moe_router_logits_normed), left in normed for the experts; the
// residual is not written (the next norm adds attn: moe_combine_norm).
// Dynamic shared memory: moe_route_plan's, or a row of T if more.
template <typename T>
__device__ void moe_route(float* logits, const T* x, const T* gate, int k, int vec, unsigned int* ticket,
                          const float* bias, int rows, int experts, int top_k, int n_group, int topk_group, int flags,
                          float scaling, int shared, int chunk, int slot_cap, int* ids, float* wts, int4* slots,
                          int* pair_row, int* pair_route, unsigned long long* stats, T* normed, const T* residual,
                          const T* attn, const T* norm_w, float eps) {
    int e = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (blockIdx.y == 0 && e < experts)
        prefetch_l2_span(gate + (size_t)e * k, (size_t)k * sizeof(T), threadIdx.x & 31, 32);
    pdl_enter();
    if (norm_w) moe_router_logits_normed(logits, normed, residual, attn, norm_w, eps, gate, rows, k, experts);
    else if (e < experts) moe_router_logits(logits, x, gate, rows, k, experts, vec);
    moe_route_tail(logits, ticket, bias, rows, experts, top_k, n_group, topk_group, flags, scaling, shared, chunk,
                   slot_cap, ids, wts, slots, pair_row, pair_route, stats);
}

#define P_MOE_ROUTE(T) (float* logits, const T* x, const T* gate, int k, int vec, unsigned int* ticket, const float* bias, int rows, int experts, int top_k, int n_group, int topk_group, int flags, float scaling, int shared, int chunk, int slot_cap, int* ids, float* wts, int4* slots, int* pair_row, int* pair_route, unsigned long long* stats, T* normed, const T* residual, const T* attn, const T* norm_w, float eps)
#define A_MOE_ROUTE (logits, x, gate, k, vec, ticket, bias, rows, experts, top_k, n_group, topk_group, flags, scaling, shared, chunk, slot_cap, ids, wts, slots, pair_row, pair_route, stats, normed, residual, attn, norm_w, eps)
// moe_route enters as a programmatic dependent itself (after its prefetch).
KERNELS_ENTERED(moe_route, moe_route, T_ONLY, P_MOE_ROUTE, A_MOE_ROUTE, NO_ENTER)

// moe_route for a single row whose logit blocks (gridDim.x, at most 8:
// MOE_ROUTE_CLUSTER in moe_route.rs) are one thread-block cluster: each block keeps its warps'
// logits in its shared memory (and stores them to `logits`, which nothing
// waits for); after a cluster barrier warp 0 of block 0 gathers them
// (ld_cluster), and after a second, which lets the other blocks leave, routes
// the row and lays out its plan exactly as moe_route_plan does for one row
// (moe_route_routes from the gathered logits, then moe_plan_one_row): no
// logits round trip through L2 and no ticket. Dynamic shared memory: score,
// choice and the gathered logits (experts floats each), then a float per warp
// of the block.
template <typename T>
__device__ void moe_route_one(float* logits, const T* x, const T* gate, int k, int vec, const float* bias,
                              int experts, int top_k, int n_group, int topk_group, int flags, float scaling,
                              int shared, int slot_cap, int* ids, float* wts, int4* slots, int* pair_row,
                              int* pair_route, unsigned long long* stats) {
    extern __shared__ float smem[];
    float *score = smem, *choice = smem + experts, *lg = smem + 2 * experts, *mine = smem + 3 * experts;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, e = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (e < experts) prefetch_l2_span(gate + (size_t)e * k, (size_t)k * sizeof(T), lane, 32);
    pdl_enter();
    if (e < experts) {
        float acc = warp_dot(gate + (size_t)e * k, x, k, vec != 0, lane);
        if (lane == 0) {
            mine[warp] = acc;
            logits[e] = acc;
        }
    }
    cluster_sync();  // every block's logits are in its shared memory
    int per = blockDim.x >> 5;
    if (blockIdx.x == 0 && warp == 0)
        for (int i = lane; i < experts; i += 32) lg[i] = ld_cluster(&mine[i % per], i / per);
    cluster_sync();  // the logits are gathered: no block's shared memory is read after this
    if (blockIdx.x != 0 || warp != 0) return;
    moe_route_routes<true>(lg, bias, experts, top_k, n_group, topk_group, flags, scaling, shared, score, choice, ids,
                           wts, nullptr, lane);
    moe_plan_one_row(ids, top_k, shared, slot_cap, slots, pair_row, pair_route, stats, lane);
}

#define P_MOE_ROUTE_ONE(T) (float* logits, const T* x, const T* gate, int k, int vec, const float* bias, int experts, int top_k, int n_group, int topk_group, int flags, float scaling, int shared, int slot_cap, int* ids, float* wts, int4* slots, int* pair_row, int* pair_route, unsigned long long* stats)
#define A_MOE_ROUTE_ONE (logits, x, gate, k, vec, bias, experts, top_k, n_group, topk_group, flags, scaling, shared, slot_cap, ids, wts, slots, pair_row, pair_route, stats)
// moe_route_one enters as a programmatic dependent itself (after its prefetch).
KERNELS_ENTERED(moe_route_one, moe_route_one, T_ONLY, P_MOE_ROUTE_ONE, A_MOE_ROUTE_ONE, NO_ENTER)

// One value of an mma tile stored as mma_store stores it: with `silu`
// (interleaved gate|up columns), lanes g and g ^ 1 hold a column pair's gate
// and up, each rounded to bf16 first as if stored, and the even one stores
// SILU_AND_MUL(gate, up) at y[row * (n / 2) + col / 2]; else y[row * n +
// col] = v. Every lane of the warp calls it (the shuffle); `live`: the
// lane's token is one of the tile's. (mma_store and linear_tiles spell the
// same lines out: calling this from them changed the dense kernels' machine
// code, which is tuned and measured as it is.)
__device__ __forceinline__ void moe_mma_put(bf16* y, size_t row, float v, int col, int n, bool silu, bool live) {
    int g = (threadIdx.x & 31) >> 2;
    if (silu) {
        float u = __shfl_xor_sync(0xffffffffu, v, 4);
        bf16 tg, tu;
        st(&tg, v);
        st(&tu, u);
        float gv = ld(&tg), uv = ld(&tu);
        if ((g & 1) == 0 && col + 1 < n && live) st(&y[row * (n / 2) + col / 2], SILU_AND_MUL(gv, uv));
    } else if (col < n && live) {
        st(&y[row * n + col], v);
    }
}

// The tile's sums (k slices added by mma_sum_parts) stored as mma_store
// stores them without a bias, token tok's values (pair p0 + m0 + tok) in row
// orow[tok & 1] of y (the lane's tokens 2t and 2t + 1).
__device__ __forceinline__ void moe_mma_store(float (&acc)[1][4], bf16* y, const int (&orow)[2], int mt, int n,
                                              int parts, bool silu, int col0, float* partial) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (!mma_sum_parts<1>(acc, parts, partial)) return;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        int col = col0 + g + (q >= 2 ? 8 : 0);
        int tok = 2 * t + (q & 1);
        // + 0.f as mma_store adds its absent bias (-0 stored as +0).
        moe_mma_put(y, orow[q & 1], acc[0][q] + 0.f, col, n, silu, tok < mt);
    }
}

// One warp's share of the grouped small-row linear on tensor cores (bf16):
// the 16 output columns from col0 of y[orow(p)] = x[irow(p)] W^T for the
// cnt >= 1 pairs p0.. of one expert (W = we, [n, k]), irow(p) = pair_row[p]
// when gathering, else p; orow(p) = pair_route[p] when given (the output by
// route), else p. Each 8-pair tile runs linear_mma_tile1's arithmetic (k
// split in `parts` by the weight's shape, 32-wide chunks in order, weight
// loads double-buffered), so a pair's result does not depend on how many
// pairs share its expert. The first stage's weights are asked for before the
// pairs' rows are read, and the chunks past the last whole stage are loaded
// together, then multiplied in order (the same products in the same order as
// one chunk at a time, with one wait on memory instead of one a chunk:
// V2-Lite's down, k = 1408, is five stages and four chunks). silu:
// SiLU-and-mul epilogue (interleaved gate|up rows; y then n / 2 wide). Every
// warp of the block calls it with the same pairs.
// With CS the weights are loaded as streaming data (ld.global.cs: evict-first
// in L2), so they do not push out what the L2 was asked to keep.
template <bool CS = false>
__device__ __forceinline__ void moe_mma_tile(bf16* y, const bf16* x, const bf16* we, int p0, int cnt,
                                             const int* pair_row, const int* pair_route, int k, int n, int parts,
                                             bool silu, int col0, float* partial) {
    constexpr int KU = 8, STAGE = 32 * KU;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int part = warp % parts, span = k / parts, kb = part * span;
    const bf16* wlo = we + (size_t)min(col0 + g, n - 1) * k + 8 * t + kb;
    const bf16* whi = we + (size_t)min(col0 + g + 8, n - 1) * k + 8 * t + kb;
    const Frag zero{0u, 0u, 0u, 0u};
    int stages = span / STAGE, rest = (span - stages * STAGE) / 32;
    Frag lo0[KU], hi0[KU], x0[KU], lo1[KU], hi1[KU], x1[KU];
    auto ld_w = [](const bf16* p) { return CS ? ld_frag_cs(p) : ld_frag(p); };
    auto load_weights = [&](Frag (&lo)[KU], Frag (&hi)[KU], int o) {
#pragma unroll
        for (int u = 0; u < KU; u++) {
            lo[u] = ld_w(wlo + o + 32 * u);
            hi[u] = ld_w(whi + o + 32 * u);
        }
    };
    if (stages > 0) load_weights(lo0, hi0, 0);
    for (int m0 = 0; m0 < cnt; m0 += 8) {
        int mt = min(8, cnt - m0);
        bool live = g < mt;
        int p = p0 + m0 + min(g, mt - 1);
        int row = pair_row ? pair_row[p] : p;
        const bf16* xr = x + (size_t)row * k + 8 * t + kb;
        int orow[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int q = p0 + m0 + min(2 * t + i, mt - 1);
            orow[i] = pair_route ? pair_route[q] : q;
        }
        float acc[1][4] = {{0.f, 0.f, 0.f, 0.f}};
        auto load_tokens = [&](Frag (&xs)[KU], int o) {
#pragma unroll
            for (int u = 0; u < KU; u++) xs[u] = live ? ld_frag(xr + o + 32 * u) : zero;
        };
        if (stages > 0) {
            if (m0 > 0) load_weights(lo0, hi0, 0);
            load_tokens(x0, 0);
        }
        for (int s = 0; s < stages; s += 2) {
            int o1 = (s + 1) * STAGE, o2 = (s + 2) * STAGE;
            if (s + 1 < stages) {
                load_weights(lo1, hi1, o1);
                load_tokens(x1, o1);
            }
#pragma unroll
            for (int u = 0; u < KU; u++) mma_chunk(acc[0], lo0[u], hi0[u], x0[u]);
            if (s + 2 < stages) {
                load_weights(lo0, hi0, o2);
                load_tokens(x0, o2);
            }
            if (s + 1 < stages) {
#pragma unroll
                for (int u = 0; u < KU; u++) mma_chunk(acc[0], lo1[u], hi1[u], x1[u]);
            }
        }
        if (rest > 0) {
            // Into the second buffer, which the stages no longer read.
            int o = stages * STAGE;
#pragma unroll
            for (int u = 0; u < KU - 1; u++) {
                if (u < rest) {
                    lo1[u] = ld_w(wlo + o + 32 * u);
                    hi1[u] = ld_w(whi + o + 32 * u);
                    x1[u] = live ? ld_frag(xr + o + 32 * u) : zero;
                }
            }
#pragma unroll
            for (int u = 0; u < KU - 1; u++)
                if (u < rest) mma_chunk(acc[0], lo1[u], hi1[u], x1[u]);
        }
        moe_mma_store(acc, y, orow, mt, n, parts, silu, col0, partial);
    }
}

// The grouped linear (moe_mma_tile): block (column tile, slot) for the
// expert of slots[slot] (none when it is -1), W_e = w + e * n * k, one warp
// per slice of k. flags bit 0: SiLU-and-mul epilogue. With `shared` > 0
// (gate|up of x that the kernel before, the routing, does not write): the
// first shared * ceil(rows / chunk) slots are the shared slices' (experts +
// j, rows in order, as moe_route_plan lays them out), which need nothing
// the routing writes, so their blocks run before waiting on it, beside it
// (and wait after their work: with SPECULA_STAMPS, block (0, 0)'s stamp is
// then the later of the routing's end and its own slice's). With CS the
// weights are loaded as streaming data (moe_mma_tile<true>), and given
// `ahead` (the down product's stacked weights, [experts + shared, k, n / 2])
// the early blocks then ask L2 for the shared slices' down weights, each
// block a share, in one bulk prefetch: they stream while the routing runs,
// and the down's shared slots read them from L2 (MoeL2 in moe_forms.rs).
template <bool CS>
__device__ __forceinline__ void moe_mma(bf16* y, const bf16* x, const bf16* w, const int4* slots,
                                        const int* pair_row, const int* pair_route, int k, int n, int parts,
                                        int flags, int shared, int rows, int chunk, int experts, const bf16* ahead) {
    extern __shared__ float moe_partial[];
    pdl_launch_dependents();
    if (shared > 0) {
        int per = (rows + chunk - 1) / chunk, j = blockIdx.y / per;
        if (j < shared) {
            // Slice j's pair r0 + i is row r0 + i, its gate|up row j * rows + r0 + i.
            int r0 = (blockIdx.y - j * per) * chunk;
            moe_mma_tile<CS>(y + (size_t)j * rows * (n / 2), x, w + (size_t)(experts + j) * n * k, r0,
                             min(chunk, rows - r0), nullptr, nullptr, k, n, parts, true, blockIdx.x * 16,
                             moe_partial);
            if (ahead && threadIdx.x == 0) {
                // This block's share of the shared slices' down weights, in 16-byte units.
                size_t units = (size_t)shared * k * (n / 2) * sizeof(bf16) / 16;
                size_t blocks = (size_t)gridDim.x * shared * per, b = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
                size_t each = (units + blocks - 1) / blocks, u0 = b * each;
                if (u0 < units)
                    prefetch_l2_bulk((const char*)(ahead + (size_t)experts * k * (n / 2)) + 16 * u0,
                                     (unsigned int)(16 * min(each, units - u0)));
            }
            pdl_wait();
            return;
        }
    }
    pdl_wait();
    int4 sl = __ldcg(&slots[blockIdx.y]);
    if (sl.x < 0) return;
    moe_mma_tile<CS>(y, x, w + (size_t)sl.x * n * k, sl.y, sl.z - sl.y, pair_row, pair_route, k, n, parts,
                     flags & 1, blockIdx.x * 16, moe_partial);
}

extern "C" __global__ void moe_mma_bf16(bf16* y, const bf16* x, const bf16* w, const int4* slots,
                                        const int* pair_row, const int* pair_route, int k, int n, int parts,
                                        int flags, int shared, int rows, int chunk, int experts) {
    moe_mma<false>(y, x, w, slots, pair_row, pair_route, k, n, parts, flags, shared, rows, chunk, experts, nullptr);
}

// moe_mma with the weights streamed and the shared slices' down asked of L2
// ahead (MoeL2 in moe_forms.rs; the same bits as moe_mma_bf16).
extern "C" __global__ void moe_mma_l2_bf16(bf16* y, const bf16* x, const bf16* w, const int4* slots,
                                           const int* pair_row, const int* pair_route, int k, int n, int parts,
                                           int flags, int shared, int rows, int chunk, int experts,
                                           const bf16* ahead) {
    moe_mma<true>(y, x, w, slots, pair_row, pair_route, k, n, parts, flags, shared, rows, chunk, experts, ahead);
}

// The grouped linear in FMA (f32, or bf16 whose k is not a multiple of 32):
// one warp per output column (with SILU: per gate|up column pair, the
// SiLU-and-mul of both rounded to T) of the expert of slots[blockIdx.y], every
// pair of it in turn (warp_dot: the order depends on k alone); rows in and
// out as moe_mma_tile's.
template <typename T, bool SILU>
__device__ void moe_rows(T* y, const T* x, const T* w, const int4* slots, const int* pair_row, const int* pair_route,
                         int k, int n, int vec) {
    int4 sl = __ldcg(&slots[blockIdx.y]);
    if (sl.x < 0) return;
    int cw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    int c0 = SILU ? 2 * cw : cw;
    if (c0 >= n) return;
    int e = sl.x, p0 = sl.y, cnt = sl.z - sl.y;
    const T* w0 = w + ((size_t)e * n + c0) * k;
    for (int i = 0; i < cnt; i++) {
        int p = p0 + i;
        const T* xr = x + (size_t)(pair_row ? pair_row[p] : p) * k;
        size_t orow = pair_route ? pair_route[p] : p;
        float a = warp_dot(w0, xr, k, vec != 0, lane);
        if (SILU) {
            float b = warp_dot(w0 + k, xr, k, vec != 0, lane);
            T tg, tu;
            st(&tg, a);
            st(&tu, b);
            float gv = ld(&tg), uv = ld(&tu);
            if (lane == 0) st(&y[orow * (n / 2) + cw], SILU_AND_MUL(gv, uv));
        } else if (lane == 0) {
            st(&y[orow * n + c0], a);
        }
    }
}

#define MOE_PLAIN(T) <T, false>
#define MOE_SILU(T) <T, true>
#define P_MOE_ROWS(T) (T* y, const T* x, const T* w, const int4* slots, const int* pair_row, const int* pair_route, int k, int n, int vec)
#define A_MOE_ROWS (y, x, w, slots, pair_row, pair_route, k, n, vec)
KERNELS(moe_rows, moe_rows, MOE_PLAIN, P_MOE_ROWS, A_MOE_ROWS)
KERNELS(moe_rows_silu, moe_rows, MOE_SILU, P_MOE_ROWS, A_MOE_ROWS)
