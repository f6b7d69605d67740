
// ---------------------------------------------------------------------------
// A MoE layer's post-attention RMSNorm and its routing in one launch, one
// block a row: residual += delta, out = rmsnorm(residual) * w
// (rms_norm_delta: rms_norm_residual's bits), then the row's router logits
// from `out` as stored, one warp per expert (warp_dot over k = hidden, as
// moe_router_logits: the same bits), and the last block to finish routes
// every row and lays out the pairs (moe_route_tail). Before the wait on the
// kernel before it, a block loads the norm's weights and asks L2 for the
// whole gate. Dynamic shared memory: moe_route_plan's.
template <typename T>
__device__ void moe_norm_route(T* out, T* residual, const T* delta, const T* w, float eps, int hidden, float* logits,
                               const T* gate, int vec, unsigned int* ticket, const float* bias, int rows, int experts,
                               int top_k, int n_group, int topk_group, int flags, float scaling, int* ids, float* wts,
                               int* pos, int* expert_off, int* active, int* n_active, int* pair_row,
                               unsigned long long* stats) {
    size_t gate_bytes = (size_t)experts * hidden * sizeof(T);
    for (size_t b = threadIdx.x * 128; b < gate_bytes; b += blockDim.x * 128) prefetch_l2((const char*)gate + b);
    auto make = [&]() { return StoredDelta<T>{delta ? delta + (size_t)blockIdx.x * hidden : nullptr}; };
    rms_norm_delta(out, residual, make, w, eps, hidden);
    __syncthreads();  // the row as stored, for every warp
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    const T* xr = out + (size_t)blockIdx.x * hidden;
    for (int e = warp; e < experts; e += nw) {
        float acc = warp_dot(gate + (size_t)e * hidden, xr, hidden, vec != 0, lane);
        if (lane == 0) logits[(size_t)blockIdx.x * experts + e] = acc;
    }
    moe_route_tail(logits, ticket, bias, rows, experts, top_k, n_group, topk_group, flags, scaling, ids, wts, pos,
                   expert_off, active, n_active, pair_row, stats);
}

#define P_MOE_NORM_ROUTE(T) (T* out, T* residual, const T* delta, const T* w, float eps, int hidden, float* logits, const T* gate, int vec, unsigned int* ticket, const float* bias, int rows, int experts, int top_k, int n_group, int topk_group, int flags, float scaling, int* ids, float* wts, int* pos, int* expert_off, int* active, int* n_active, int* pair_row, unsigned long long* stats)
#define A_MOE_NORM_ROUTE (out, residual, delta, w, eps, hidden, logits, gate, vec, ticket, bias, rows, experts, top_k, n_group, topk_group, flags, scaling, ids, wts, pos, expert_off, active, n_active, pair_row, stats)
KERNELS_ENTERED(moe_norm_route, moe_norm_route, T_ONLY, P_MOE_NORM_ROUTE, A_MOE_NORM_ROUTE, NO_ENTER)
