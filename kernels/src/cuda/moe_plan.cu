
// ---------------------------------------------------------------------------
// The mixture-of-experts plan: each row routed by a warp (moe_route_row in
// moe_route.cu), then the pairs laid out by expert in slots for the grouped
// launches (moe.cu), by the last block of the routing launch.

// Pairs up to which moe_route_plan keeps every row's experts in shared
// memory for the pair layout (more read them back from global memory).
#define MOE_SMEM_PAIRS 1024
// Warps that route rows (moe_route_plan).
#define MOE_ROUTE_WARPS 8

// moe_route_plan's layout of one row's routes (ids, written by this warp),
// by the warp alone: every expert has one pair or none, and the row's
// routes are in the layout's order already but for the shared slices (the
// routed experts by ascending id, any -1, from a pass with no candidate
// left, first). Lane t holds route t: shared slice j = t - top_k takes
// slot and pair j; routed expert t its place after the shared slices among
// the valid ones; (-1, 0, 0, 0) after them up to slot_cap.
__device__ void moe_plan_one_row(const int* ids, int top_k, int shared, int slot_cap, int4* slots,
                                 int* pair_row, int* pair_route, unsigned long long* stats, int lane) {
    __syncwarp();
    int routes = top_k + shared;
    int id = lane < routes ? ids[lane] : -1;
    int missing = __popc(__ballot_sync(0xffffffffu, lane < top_k && id < 0));
    int p = lane >= top_k ? lane - top_k : shared + lane - missing;
    if (lane < routes && id >= 0) {
        slots[p] = make_int4(id, p, p + 1, 0);
        pair_row[p] = 0;
        pair_route[p] = lane;
    }
    for (int sl = routes - missing + lane; sl < slot_cap; sl += 32) slots[sl] = make_int4(-1, 0, 0, 0);
    if (lane == 0 && stats) {
        atomicAdd(&stats[0], (unsigned long long)(top_k - missing));
        atomicAdd(&stats[1], 1ull);
    }
}

// One row's routes by this warp: moe_route_row at the register width its
// experts need, then the `shared` always-routed slices (ids experts.., weight
// 1) after its top_k, into rid, rw and (when not null) rs. The logits lg as
// moe_route_row reads them (LG_SHARED: this block's shared memory).
template <bool LG_SHARED = false>
__device__ __forceinline__ void moe_route_routes(const float* lg, const float* bias, int experts, int top_k,
                                                 int n_group, int topk_group, int flags, float scaling, int shared,
                                                 float* score, float* choice, int* rid, float* rw, int* rs,
                                                 int lane) {
    int npl = (experts + 31) >> 5;
#define MOE_ROW(NPL)                                                                                          \
    moe_route_row<NPL, LG_SHARED>(lg, bias, experts, top_k, n_group, topk_group, flags, scaling, score, choice, \
                                  rid, rw, rs, lane)
    if (npl <= 2) MOE_ROW(2);
    else if (npl <= 4) MOE_ROW(4);
    else if (npl <= 8) MOE_ROW(8);
    else MOE_ROW(16);
#undef MOE_ROW
    for (int j = lane; j < shared; j += 32) {
        rid[top_k + j] = experts + j;
        rw[top_k + j] = 1.f;
        if (rs) rs[top_k + j] = experts + j;
    }
}

// Routing settings (flags bit 0: sigmoid scores, else softmax; bit 1: a
// group scores the sum of its two best, else its best; bit 2: norm_topk_prob).
// Routes every row, one warp per row at a time (moe_route_row in
// moe_route.cu: scores, bias-corrected choice, the topk_group best groups
// when n_group > 1, the top_k best candidates, their unbiased scores
// renormalised and scaled, sorted by expert id) into ids/wts [rows, routes]
// (routes = top_k + shared; row r's route j: its j-th expert), the `shared`
// always-routed experts (ids experts.., the shared experts in expert-sized
// slices) last with weight 1; then lays out the pairs: each expert's pairs
// in row order, pair_row[p] the row of pair p and pair_route[p] its route
// r * routes + j, and the slot table: slots[s] = (expert, first pair, end
// pair, 0), each expert's pairs in slots of at most `chunk` (a grouped
// block's share; a pair's result does not depend on its slot), the shared
// slices first (slice j's pairs j * rows.., its slots j * ceil(rows /
// chunk)..: fixed, so moe_mma_bf16 runs them before the routing ends), then
// the routed experts in ascending id, (-1, 0, 0, 0) for the rest of the
// `slot_cap` slots (one 16-byte load tells a grouped block its expert and
// pairs). stats (if not
// null): += the routed experts with pairs, += 1. One block; dynamic shared
// memory (plan_smem in moe_route.rs): MOE_ROUTE_WARPS x 2 x experts floats, then
// experts + shared counts, experts + shared + 1 offsets and
// min(pairs, MOE_SMEM_PAIRS) expert ids as ints. The logits are read once
// (through L2: other blocks of the launch wrote them).
__device__ void moe_route_plan(const float* logits, const float* bias, int rows, int experts, int top_k, int n_group,
                               int topk_group, int flags, float scaling, int shared, int chunk, int slot_cap,
                               int* ids, float* wts, int4* slots, int* pair_row, int* pair_route,
                               unsigned long long* stats) {
    extern __shared__ float smem[];
    // At most MOE_ROUTE_WARPS warps route (plan_smem sizes the shared
    // memory for them); every thread lays out.
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = min(blockDim.x >> 5, MOE_ROUTE_WARPS);
    int total = experts + shared, routes = top_k + shared;
    float* score = smem + (size_t)warp * 2 * experts;
    float* choice = score + experts;
    int* counts = (int*)(smem + (size_t)nw * 2 * experts);
    int* offs = counts + total;
    int* sids = offs + total + 1;
    int pairs = rows * routes;
    bool staged = pairs <= MOE_SMEM_PAIRS;
    for (int r = warp; r < rows && warp < nw; r += nw) {
        const float* lg = logits + (size_t)r * experts;
        int* rid = ids + (size_t)r * routes;
        float* rw = wts + (size_t)r * routes;
        int* rs = staged ? sids + r * routes : nullptr;
        moe_route_routes(lg, bias, experts, top_k, n_group, topk_group, flags, scaling, shared, score, choice, rid, rw,
                         rs, lane);
    }
    if (rows == 1) {
        // Warp 0 routed the row: its plan without counting (the same table).
        if (warp == 0)
            moe_plan_one_row(ids, top_k, shared, slot_cap, slots, pair_row, pair_route, stats, lane);
        return;
    }
    __syncthreads();
    const int* rid = staged ? sids : ids;
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
        int c = 0;
        for (int i = 0; i < pairs; i++) c += rid[i] == e;
        counts[e] = c;
    }
    __syncthreads();
    if (warp == 0) {
        // Prefix sums over experts in 32s: pairs (offsets), slots, and the
        // routed experts with pairs (stats).
        // The shared slices come first (their pairs and slots are then
        // known before the routing: moe_mma_bf16 starts on them early),
        // then the routed experts in ascending id.
        int carry = 0, scarry = 0, acarry = 0;
        for (int b = 0; b < total; b += 32) {
            int e = b + lane < shared ? experts + b + lane : b + lane - shared;
            int c = b + lane < total ? counts[e] : 0;
            int q = (c + chunk - 1) / chunk, a = c > 0 && e < experts;
            int ic = c, iq = q, ia = a;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                int u = __shfl_up_sync(0xffffffffu, ic, o);
                int uq = __shfl_up_sync(0xffffffffu, iq, o);
                int ua = __shfl_up_sync(0xffffffffu, ia, o);
                if (lane >= o) {
                    ic += u;
                    iq += uq;
                    ia += ua;
                }
            }
            if (b + lane < total) {
                int off = carry + ic - c, s0 = scarry + iq - q;
                offs[e] = off;
                for (int i = 0; i < q; i++)
                    slots[s0 + i] = make_int4(e, off + i * chunk, off + min((i + 1) * chunk, c), 0);
            }
            carry += __shfl_sync(0xffffffffu, ic, 31);
            scarry += __shfl_sync(0xffffffffu, iq, 31);
            acarry += __shfl_sync(0xffffffffu, ia, 31);
        }
        for (int sl = scarry + lane; sl < slot_cap; sl += 32) slots[sl] = make_int4(-1, 0, 0, 0);
        if (lane == 0) {
            if (stats) {
                atomicAdd(&stats[0], (unsigned long long)acarry);
                atomicAdd(&stats[1], 1ull);
            }
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
        if (counts[e] == 0) continue;
        int p = offs[e];
        for (int i = 0; i < pairs; i++) {
            if (rid[i] == e) {
                pair_row[p] = i / routes;
                pair_route[p] = i;
                p++;
            }
        }
    }
}

// After a block has written its logits: the last block of the launch to
// finish (a ticket counter, zero between launches, which it resets) routes
// every row and lays out the pairs (moe_route_plan) from the logits the
// other blocks left in L2.
__device__ void moe_route_tail(const float* logits, unsigned int* ticket, const float* bias, int rows, int experts,
                               int top_k, int n_group, int topk_group, int flags, float scaling, int shared, int chunk,
                               int slot_cap, int* ids, float* wts, int4* slots, int* pair_row, int* pair_route,
                               unsigned long long* stats) {
    if (!last_to_arrive(ticket, gridDim.x * gridDim.y)) return;
    moe_route_plan(logits, bias, rows, experts, top_k, n_group, topk_group, flags, scaling, shared, chunk, slot_cap, ids,
                   wts, slots, pair_row, pair_route, stats);
    if (threadIdx.x == 0) *ticket = 0u;
}
