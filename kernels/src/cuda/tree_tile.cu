
// ---------------------------------------------------------------------------
// One 64-key tile into the running state of a set of 16 tree-attention
// query vectors (tree_attention.cu), by one warp or by `ways` = 2 or 4
// warps together.
//
// A set is one mma tile of vectors. A decode row brings only its kv head's
// query heads (4 of a Llama-3.1-8B kv head) and a 6-token chain 24, so a
// block of four warps would leave three idle; instead `ways` warps share
// one set: warp `own` of the set scores the tile's 16-key quarters
// [own * 4 / ways, (own + 1) * 4 / ways) and takes the value products of
// the 16-wide output column pairs p with p % ways == own. The arithmetic
// is the same for every `ways`, so a vector's bits do not depend on its
// group (the kernel checks hold a row alone, in a chain and in a tree to
// the same bits):
// - the tile's maximum is exact in any order;
// - its weight sum is ((Q0 + Q1) + Q2) + Q3, quarter q's Q_q summed by
//   each lane over its four weights in key order, then over the vector's
//   four lanes pairwise (xor 1, then xor 2);
// - each output pair's value product is the same mma chain over the four
//   quarters in order, from the state rescaled to the new maximum, with the
//   weights rounded to bf16 by whichever warp scored them.
// With ways > 1 the set's warps swap their maxima through `xmax` and their
// quarter sums and weight fragments through `swap` (the tile's key stage,
// free once every warp has scored it: after the first of two barriers,
// which every thread of the block passes, taking the tile or not).

#define TREE_QUARTERS (AT_KEYS / 16)

// Writes the partials of the warp's vectors v0 (tile row g) and v1 (g + 8)
// (< 0: none): out_slot(v) gives the vector's (row, head) partial slot. Of
// a set shared by `ways` warps, warp `own` writes its column pairs and
// warp 0 the (max, sum).
template <int HD, typename F>
__device__ __forceinline__ void tree_store(float* part_out, float* part_ml, const float (&o)[HD / 8][4], float m0,
                                           float m1, float l0, float l1, int v0, int v1, int lane, int ways, int own,
                                           F slot_of) {
    int t4 = lane & 3;
    if (v0 >= 0) {
        size_t sl = slot_of(v0);
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++)
            if ((nd / 2) % ways == own)
                *(float2*)(part_out + sl * HD + nd * 8 + 2 * t4) = make_float2(o[nd][0], o[nd][1]);
        if (t4 == 0 && own == 0) { part_ml[2 * sl] = m0; part_ml[2 * sl + 1] = l0; }
    }
    if (v1 >= 0) {
        size_t sl = slot_of(v1);
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++)
            if ((nd / 2) % ways == own)
                *(float2*)(part_out + sl * HD + nd * 8 + 2 * t4) = make_float2(o[nd][2], o[nd][3]);
        if (t4 == 0 && own == 0) { part_ml[2 * sl + 0] = m1; part_ml[2 * sl + 1] = l1; }
    }
}

// One tile into the running state of the warp's set (tile row g: m0, l0,
// o[.][0..1]; g + 8: m1, l1, o[.][2..3]), each vector seeing its first
// lim rows of the tile (0: none, the state is left as it was, bit for
// bit). `take`: whether the set takes this tile (the same for its warps);
// every thread of the block calls this for every tile.
template <int HD>
__device__ __forceinline__ void tree_take_tile(float (&o)[HD / 8][4], float& m0, float& m1, float& l0, float& l1,
                                               const unsigned (&qa)[HD / 16][4], const bf16* ks, const bf16* vs,
                                               int lim0, int lim1, float sl2, bool take, int ways, float* xmax,
                                               void* swap) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int own = warp % ways, set = warp / ways;
    int q_lo = own * (TREE_QUARTERS / ways), q_hi = q_lo + TREE_QUARTERS / ways;
    float s[AT_KEYS / 8][4];
    float t0 = -INFINITY, t1 = -INFINITY;
    if (take) {
        at_scores<HD>(s, qa, ks, lane, 2 * q_lo, 2 * q_hi);
        // Another warp's quarters count as masked here.
#pragma unroll
        for (int n = 0; n < AT_KEYS / 8; n++) {
#pragma unroll
            for (int j = 0; j < 2; j++) {
                int i = n * 8 + 2 * t + j;
                bool mine = n / 2 >= q_lo && n / 2 < q_hi;
                if (!mine || i >= lim0) s[n][j] = -INFINITY;
                if (!mine || i >= lim1) s[n][2 + j] = -INFINITY;
                t0 = fmaxf(t0, s[n][j]);
                t1 = fmaxf(t1, s[n][2 + j]);
            }
        }
#pragma unroll
        for (int x = 1; x < 4; x <<= 1) {
            t0 = fmaxf(t0, __shfl_xor_sync(0xffffffffu, t0, x));
            t1 = fmaxf(t1, __shfl_xor_sync(0xffffffffu, t1, x));
        }
    }
    float* qsw = (float*)swap;                                      // [set][quarter][16 vectors]
    uint4* fsw = (uint4*)((char*)swap + 2 * TREE_QUARTERS * 16 * 4);  // [set][quarter][32 lanes]
    if (ways > 1) {
        if (take && t == 0) {
            xmax[warp * 16 + g] = t0;
            xmax[warp * 16 + g + 8] = t1;
        }
        __syncthreads();
        if (take)
            for (int j = 0; j < ways; j++) {
                t0 = fmaxf(t0, xmax[(set * ways + j) * 16 + g]);
                t1 = fmaxf(t1, xmax[(set * ways + j) * 16 + g + 8]);
            }
    }
    float n0 = fmaxf(m0, t0), n1 = fmaxf(m1, t1);
    // Equal maxima (unchanged, or both -inf) keep the state as it is.
    float a0 = n0 == m0 ? 1.f : exp2f((m0 - n0) * sl2), a1 = n1 == m1 ? 1.f : exp2f((m1 - n1) * sl2);
    float qs0[TREE_QUARTERS], qs1[TREE_QUARTERS];
    uint4 pf[TREE_QUARTERS];
    if (take) {
        float b0 = n0 == -INFINITY ? 0.f : n0 * sl2, b1 = n1 == -INFINITY ? 0.f : n1 * sl2;
#pragma unroll
        for (int q = 0; q < TREE_QUARTERS; q++) {
            if (q < q_lo || q >= q_hi) continue;
            float x0 = 0.f, x1 = 0.f;
#pragma unroll
            for (int n = 2 * q; n < 2 * q + 2; n++) {
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    s[n][j] = exp2f(fmaf(s[n][j], sl2, -b0));
                    s[n][2 + j] = exp2f(fmaf(s[n][2 + j], sl2, -b1));
                    x0 += s[n][j];
                    x1 += s[n][2 + j];
                }
            }
#pragma unroll
            for (int x = 1; x < 4; x <<= 1) {
                x0 += __shfl_xor_sync(0xffffffffu, x0, x);
                x1 += __shfl_xor_sync(0xffffffffu, x1, x);
            }
            qs0[q] = x0;
            qs1[q] = x1;
            pf[q] = at_p_frag(s, q);
        }
    }
    if (ways > 1) {
        // Every warp has scored the tile (the barrier above): its key stage
        // is free for the swap.
        if (take) {
#pragma unroll
            for (int q = 0; q < TREE_QUARTERS; q++) {
                if (q < q_lo || q >= q_hi) continue;
                if (t == 0) {
                    qsw[(set * TREE_QUARTERS + q) * 16 + g] = qs0[q];
                    qsw[(set * TREE_QUARTERS + q) * 16 + g + 8] = qs1[q];
                }
                fsw[(set * TREE_QUARTERS + q) * 32 + lane] = pf[q];
            }
        }
        __syncthreads();
        if (take) {
#pragma unroll
            for (int q = 0; q < TREE_QUARTERS; q++) {
                if (q >= q_lo && q < q_hi) continue;
                qs0[q] = qsw[(set * TREE_QUARTERS + q) * 16 + g];
                qs1[q] = qsw[(set * TREE_QUARTERS + q) * 16 + g + 8];
                pf[q] = fsw[(set * TREE_QUARTERS + q) * 32 + lane];
            }
        }
    }
    if (!take) return;
    float p0 = qs0[0], p1 = qs1[0];
#pragma unroll
    for (int q = 1; q < TREE_QUARTERS; q++) {
        p0 += qs0[q];
        p1 += qs1[q];
    }
    l0 = fmaf(l0, a0, p0);
    l1 = fmaf(l1, a1, p1);
    m0 = n0;
    m1 = n1;
#pragma unroll
    for (int nd = 0; nd < HD / 8; nd++) {
        o[nd][0] *= a0;
        o[nd][1] *= a0;
        o[nd][2] *= a1;
        o[nd][3] *= a1;
    }
    at_pv_frags<HD>(o, [&](int kk) { return pf[kk]; }, vs, lane, ways, own);
}
