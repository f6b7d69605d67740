
// ---------------------------------------------------------------------------
// Mixture-of-experts routing of one row in parallel lanes (moe_plan.cu's
// moe_route_plan calls moe_route_row for each row): the row's experts and
// weights from its own logits, exactly the CPU engine's router.rs choice
// (the largest choice value first, the lowest expert id among equals), with
// the row's experts in registers and each top-k pass a short chain. It
// replaced a serial plan (one warp scanning shared memory once per pass)
// after the two agreed bit for bit on the H200 and this one measured faster
// (results/h200/moe-route-2026-12-04/call1: 15.0 -> 12.6 us a layer alone,
// DeepSeek-V2-Lite batch 1 2553 -> 2474 us a step).

// The warp's best group score gs[j] (group lane + 32 j; n_group at most 64)
// not yet kept: the largest, the lowest group among equals, from the same
// strided scan and xor reduction as the serial plan (so even NaN scores
// fare as they did). Returns the group.
__device__ __forceinline__ int moe_best_group(const float (&gs)[2], int n_group, unsigned long long kept, int lane) {
    float bv = -INFINITY;
    int bi = -1;
#pragma unroll
    for (int j = 0; j < 2; j++) {
        int g = lane + 32 * j;
        if (g < n_group && !((kept >> g) & 1ull) && (bi < 0 || gs[j] > bv)) {
            bv = gs[j];
            bi = g;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        bool take = oi >= 0 && (bi < 0 || ov > bv || (ov == bv && oi < bi));
        if (take) {
            bv = ov;
            bi = oi;
        }
    }
    return bi;
}

// A choice value as an unsigned key in the same order (-0 as +0, equal as
// floats); 0, below every value, for NaN (not a candidate).
__device__ __forceinline__ unsigned moe_key(float v) {
    unsigned u = __float_as_uint(v == 0.f ? 0.f : v);
    return isnan(v) ? 0u : (u >> 31) ? ~u : u | 0x80000000u;
}

// The warp's largest key (one redux on sm_80+).
__device__ __forceinline__ unsigned moe_warp_max(unsigned v) {
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(0xffffffffu, v);
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
#endif
}

// The warp's lowest int (one redux on sm_80+).
__device__ __forceinline__ int moe_warp_min(int v) {
#if __CUDA_ARCH__ >= 800
    return __reduce_min_sync(0xffffffffu, v);
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
#endif
}

// v[0] op v[1] op ... op v[N - 1] as a tree (N a power of two; op exact
// and order-free: max, min).
template <int N, typename T, typename F>
__device__ __forceinline__ T moe_tree(const T* v, F op) {
    if constexpr (N == 1) return v[0];
    else return op(moe_tree<N / 2>(v, op), moe_tree<N / 2>(v + N / 2, op));
}

// One row's routing by one warp, the row's experts in registers (expert
// lane + 32 i, i < NPL; NPL * 32 >= experts): scores (a lane's experts in
// ascending id, then the xor tree: the same bits as ever), bias-corrected
// choice, the topk_group best groups when n_group > 1 (lane g scores group
// g from the warp's shared `choice`), then top_k passes, each a short
// chain: the largest choice key (a tree, one redux), the lowest expert
// holding it (a tree, one redux: the lowest index among equal values),
// removed by its lane; lane t keeps pass t's expert. Weights: the unbiased
// scores (the warp's shared `score`) renormalised over the passes in order
// and scaled. Lane t writes its expert and weight at its rank in expert id
// among the chosen into ids, wts and (when not null) sids: the row's. The
// logits lg are global memory other blocks wrote (read through L2), or with
// LG_SHARED this block's shared memory.
template <int NPL, bool LG_SHARED = false>
__device__ __forceinline__ void moe_route_row(const float* lg, const float* bias, int experts, int top_k,
                                              int n_group, int topk_group, int flags, float scaling, float* score,
                                              float* choice, int* ids, float* wts, int* sids, int lane) {
    bool sigmoid = flags & 1, top2 = flags & 2, norm = flags & 4;
    // The bias is loaded with the logits, or (16 per lane) after the scores,
    // to spare registers.
    float s[NPL], c[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) {
        int e = lane + 32 * i;
        s[i] = e < experts ? (LG_SHARED ? lg[e] : __ldcg(&lg[e])) : 0.f;
        if (NPL <= 8) c[i] = bias && e < experts ? bias[e] : 0.f;
    }
    if (sigmoid) {
#pragma unroll
        for (int i = 0; i < NPL; i++) s[i] = 1.f / (1.f + expf(-s[i]));
    } else {
        float mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < NPL; i++)
            if (lane + 32 * i < experts) mx = fmaxf(mx, s[i]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < NPL; i++) {
            if (lane + 32 * i < experts) {
                s[i] = expf(s[i] - mx);
                sum += s[i];
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
#pragma unroll
        for (int i = 0; i < NPL; i++) s[i] /= sum;
    }
#pragma unroll
    for (int i = 0; i < NPL; i++) {
        int e = lane + 32 * i;
        if (e < experts) score[e] = s[i];
        if (NPL > 8) c[i] = bias && e < experts ? bias[e] : 0.f;
        c[i] = bias ? s[i] + c[i] : s[i];
    }
    if (n_group > 1) {
        // Lane g scores group g (its two best, lowest index first among equals)
        // from shared memory; the experts of all but the topk_group best groups
        // stop being candidates (NaN).
        int gsize = experts / n_group;
#pragma unroll
        for (int i = 0; i < NPL; i++)
            if (lane + 32 * i < experts) choice[lane + 32 * i] = c[i];
        __syncwarp();
        float gs[2] = {0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int gi = lane + 32 * j;
            if (gi >= n_group) continue;
            int b1 = -1, b2 = -1;
            for (int e = gi * gsize; e < (gi + 1) * gsize; e++) {
                if (b1 < 0 || choice[e] > choice[b1]) {
                    b2 = b1;
                    b1 = e;
                } else if (b2 < 0 || choice[e] > choice[b2]) {
                    b2 = e;
                }
            }
            gs[j] = top2 ? (0.f + choice[b1]) + choice[b2] : choice[b1];
        }
        __syncwarp();
        unsigned long long kept = 0;
        for (int t = 0; t < topk_group; t++) kept |= 1ull << moe_best_group(gs, n_group, kept, lane);
#pragma unroll
        for (int i = 0; i < NPL; i++) {
            int e = lane + 32 * i;
            if (e < experts && !((kept >> (e / gsize)) & 1ull)) c[i] = __int_as_float(0x7fc00000);
        }
    }
    unsigned key[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) key[i] = lane + 32 * i < experts ? moe_key(c[i]) : 0u;
    // The passes: every lane learns each winner e; lanes before t count it
    // into their rank, lane t takes it with the earlier ids at most e
    // counted (ids distinct unless none was left: -1, weight 0).
    int id = -1, rank = 0;
#pragma unroll 1
    for (int t = 0; t < top_k; t++) {
        unsigned best = moe_warp_max(moe_tree<NPL>(key, [](unsigned a, unsigned b) { return max(a, b); }));
        int slot[NPL];
#pragma unroll
        for (int i = 0; i < NPL; i++) slot[i] = key[i] == best ? i : NPL;
        int loc = moe_tree<NPL>(slot, [](int a, int b) { return min(a, b); });
        int e = moe_warp_min(lane + 32 * loc);
        unsigned drop = lane + 32 * loc == e ? 1u << loc : 0u;
#pragma unroll
        for (int i = 0; i < NPL; i++)
            if ((drop >> i) & 1u) key[i] = 0u;
        if (best == 0u) e = -1;
        unsigned below = __ballot_sync(0xffffffffu, lane < t && id <= e);
        if (lane < t) rank += e < id;
        if (lane == t) {
            id = e;
            rank = __popc(below);
        }
    }
    __syncwarp();
    float w = id >= 0 ? score[id] : 0.f;
    // The normalising sum in pass order (the CPU router's), on every lane.
    float sum = 0.f;
#pragma unroll
    for (int t = 0; t < 16; t++) {
        float v = __shfl_sync(0xffffffffu, w, t);
        if (t < top_k) sum += v;
    }
    if (sigmoid) sum += 1e-20f;
    if (norm) w /= sum;
    if (scaling != 1.f) w *= scaling;
    if (lane < top_k) {
        ids[rank] = id;
        wts[rank] = w;
        if (sids) sids[rank] = id;
    }
    __syncwarp();
}

