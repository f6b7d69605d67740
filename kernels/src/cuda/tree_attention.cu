
// ---------------------------------------------------------------------------
// Decode and verification attention of tree rows (rows with extra entries:
// a decode row sees prefix + itself, a verify row prefix + its ancestors +
// itself), bf16 on tensor cores, each sequence's cache read once for all of
// its rows. Rows are grouped (groups[3g .. 3g + 2]: first row, count, the
// group's common prefix c; count 0: nothing): consecutive rows of one
// sequence with the same prefix.
//
// A row's key list (prefix, then its extra entries) is split at fixed
// positions: split s holds its keys 64 s .. 64 s + 63, whatever else runs.
// Block (group, kv head, split s): when 64 s + 64 <= c the split's keys are
// the same pool entries for every row of the group, and one tile of them
// serves all rows' query vectors (the group's rows x the kv head's query
// heads, 16 to a warp's mma tile); else each row of the group with keys in
// the split loads its own keys and runs alone. Either way a vector's
// partial result (unnormalised sum, max, sum of weights) is the same
// function of its query and its split's keys (att_tile.cu). The block that
// completes a row's last split (a counter per (row, kv head), back to zero
// after) merges the row's splits in split order: the same sums whatever
// the batch, the group or the order the blocks ran.

#define TREE_GROUP_MAX 64

__device__ __forceinline__ int tree_keys(const int* prefix, const int* extra_off, int r) {
    return prefix[r] + extra_off[r + 1] - extra_off[r];
}

// Writes the partials of the warp's vectors v0 (tile row g) and v1 (g + 8)
// (< 0: none): out_slot(v) gives the vector's (row, head) partial slot.
template <int HD, typename F>
__device__ __forceinline__ void tree_store(float* part_out, float* part_ml, const float (&o)[HD / 8][4], float m0,
                                           float m1, float l0, float l1, int v0, int v1, int lane, F slot_of) {
    int t4 = lane & 3;
    if (v0 >= 0) {
        size_t sl = slot_of(v0);
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++)
            *(float2*)(part_out + sl * HD + nd * 8 + 2 * t4) = make_float2(o[nd][0], o[nd][1]);
        if (t4 == 0) { part_ml[2 * sl] = m0; part_ml[2 * sl + 1] = l0; }
    }
    if (v1 >= 0) {
        size_t sl = slot_of(v1);
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++)
            *(float2*)(part_out + sl * HD + nd * 8 + 2 * t4) = make_float2(o[nd][2], o[nd][3]);
        if (t4 == 0) { part_ml[2 * sl] = m1; part_ml[2 * sl + 1] = l1; }
    }
}

// One warp's mma tile: vectors vbase .. vbase + 15 of nv (vector v: query
// row row_of(v), head head_of(v), keys visible in the tile lim_of(v)).
template <int HD, typename FR, typename FH, typename FL, typename FS>
__device__ __forceinline__ void tree_tile(float* part_out, float* part_ml, const bf16* q, const bf16* ks,
                                          const bf16* vs, int heads, float sl2, int vbase, int nv, int lane,
                                          FR row_of, FH head_of, FL lim_of, FS slot_of) {
    int g = lane >> 2;
    int v0 = vbase + g < nv ? vbase + g : -1, v1 = vbase + g + 8 < nv ? vbase + g + 8 : -1;
    unsigned qa[HD / 16][4];
    at_load_q<HD>(qa, v0 >= 0 ? q + ((size_t)row_of(v0) * heads + head_of(v0)) * HD : nullptr,
                  v1 >= 0 ? q + ((size_t)row_of(v1) * heads + head_of(v1)) * HD : nullptr, lane);
    float s[AT_KEYS / 8][4];
    at_scores<HD>(s, qa, ks, lane);
    float m0, m1, l0, l1;
    at_mask_max(s, v0 >= 0 ? lim_of(v0) : 0, v1 >= 0 ? lim_of(v1) : 0, lane, m0, m1);
    at_exp_sum(s, m0, m1, sl2, l0, l1);
    float o[HD / 8][4];
#pragma unroll
    for (int nd = 0; nd < HD / 8; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.f;
    at_pv<HD>(o, s, vs, lane);
    tree_store<HD>(part_out, part_ml, o, m0, m1, l0, l1, v0, v1, lane, slot_of);
}

template <int HD>
__device__ void tree_attention(bf16* out, float* part_out, float* part_ml, int* counters, const bf16* q,
                               const bf16* kp, const bf16* vp, const int* base, const int* prefix,
                               const int* extra_off, const int* extra, const int* groups, int heads, int kv_heads,
                               float scale, int splits_cap, long pool_offset) {
    __shared__ __align__(16) bf16 ks[AT_KEYS * (HD + 8)];
    __shared__ __align__(16) bf16 vs[AT_KEYS * (HD + 8)];
    __shared__ int done[TREE_GROUP_MAX];
    __shared__ int n_done;
    kp += pool_offset;
    vp += pool_offset;
    int grp = blockIdx.x, kvh = blockIdx.y, s = blockIdx.z;
    int first = groups[3 * grp], count = groups[3 * grp + 1], c = groups[3 * grp + 2];
    if (count == 0) return;
    int k0 = s * AT_KEYS;
    int longest = 0;
    for (int i = 0; i < count; i++) longest = max(longest, tree_keys(prefix, extra_off, first + i));
    if (k0 >= longest) return;
    int G = heads / kv_heads;
    size_t width = (size_t)kv_heads * HD;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long b = base[first];
    float sl2 = scale * 1.4426950408889634f;
    auto slot = [&](int row, int head) { return ((size_t)row * heads + head) * splits_cap + s; };
    if (k0 + AT_KEYS <= c) {
        // Shared split: every row sees pool entries b + k0 .. b + k0 + 63.
        at_load_tile<HD>(ks, vs, kp, vp, width, kvh, [&](int i) { return b + k0 + i; });
        at_cp_wait_all();
        __syncthreads();
        int nv = count * G;
        for (int vb = warp * 16; vb < nv; vb += 4 * 16)
            tree_tile<HD>(part_out, part_ml, q, ks, vs, heads, sl2, vb, nv, lane,
                          [&](int v) { return first + v / G; }, [&](int v) { return kvh * G + v % G; },
                          [&](int) { return AT_KEYS; },
                          [&](int v) { return slot(first + v / G, kvh * G + v % G); });
    } else {
        for (int i = 0; i < count; i++) {
            int r = first + i, n = tree_keys(prefix, extra_off, r);
            if (k0 >= n) continue;
            int np = prefix[r], e0 = extra_off[r];
            __syncthreads();  // the previous row's tile is consumed
            at_load_tile<HD>(ks, vs, kp, vp, width, kvh, [&](int t) {
                int j = k0 + t;
                if (j >= n) return -1L;
                return b + (j < np ? j : extra[e0 + j - np]);
            });
            at_cp_wait_all();
            __syncthreads();
            for (int vb = warp * 16; vb < G; vb += 4 * 16)
                tree_tile<HD>(part_out, part_ml, q, ks, vs, heads, sl2, vb, G, lane, [&](int) { return r; },
                              [&](int v) { return kvh * G + v; }, [&](int) { return n - k0; },
                              [&](int v) { return slot(r, kvh * G + v); });
        }
    }
    // Count this split for each row it covered; whoever completes a row merges it.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) n_done = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        int r = first + i, n = tree_keys(prefix, extra_off, r);
        if (k0 >= n) continue;
        int splits = (n + AT_KEYS - 1) / AT_KEYS;
        if (atomicAdd(&counters[r * kv_heads + kvh], 1) == splits - 1) done[atomicAdd(&n_done, 1)] = r;
    }
    __syncthreads();
    int nd = n_done;
    if (nd == 0) return;
    __threadfence();
    for (int k = 0; k < nd; k++) {
        int r = done[k], n = tree_keys(prefix, extra_off, r);
        int splits = (n + AT_KEYS - 1) / AT_KEYS;
        for (int idx = threadIdx.x; idx < G * HD; idx += blockDim.x) {
            int head = kvh * G + idx / HD, d = idx % HD;
            size_t s0 = ((size_t)r * heads + head) * splits_cap;
            float m = -INFINITY;
            for (int t = 0; t < splits; t++) m = fmaxf(m, __ldcg(&part_ml[2 * (s0 + t)]));
            float l = 0.f, acc = 0.f;
            for (int t = 0; t < splits; t++) {
                float w = exp2f((__ldcg(&part_ml[2 * (s0 + t)]) - m) * sl2);
                l = fmaf(__ldcg(&part_ml[2 * (s0 + t) + 1]), w, l);
                acc = fmaf(__ldcg(&part_out[(s0 + t) * HD + d]), w, acc);
            }
            st(&out[((size_t)r * heads + head) * HD + d], acc / l);
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < nd; k += blockDim.x) counters[done[k] * kv_heads + kvh] = 0;
}

#define P_TREE (bf16* out, float* part_out, float* part_ml, int* counters, const bf16* q, const bf16* kp, const bf16* vp, const int* base, const int* prefix, const int* extra_off, const int* extra, const int* groups, int heads, int kv_heads, float scale, int splits_cap, long pool_offset)
#define A_TREE (out, part_out, part_ml, counters, q, kp, vp, base, prefix, extra_off, extra, groups, heads, kv_heads, scale, splits_cap, pool_offset)
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_32_bf16 P_TREE {
    pdl_enter();
    tree_attention<32> A_TREE;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_64_bf16 P_TREE {
    pdl_enter();
    tree_attention<64> A_TREE;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_128_bf16 P_TREE {
    pdl_enter();
    tree_attention<128> A_TREE;
}
