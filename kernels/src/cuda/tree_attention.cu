
// ---------------------------------------------------------------------------
// Decode and verification attention of tree rows (rows with extra entries:
// a decode row sees prefix + itself, a verify row prefix + its ancestors +
// itself), bf16 on tensor cores, each sequence's cache read once for all of
// its rows. Rows are grouped (groups[3g .. 3g + 2]: first row, count, the
// group's common prefix c; count 0: nothing): consecutive rows of one
// sequence with the same prefix.
//
// A row's key list (prefix, then its extra entries) is cut at fixed
// positions: tile t holds its keys 64 t .. 64 t + 63 and split s the tiles
// split_tiles s .. split_tiles (s + 1) - 1 (a launch constant), whatever
// else runs.
// Block (group, kv head, split s) walks the split's tiles in order, two
// tiles in flight (cp.async into two shared-memory stages): a tile with
// 64 t + 64 <= c holds the same pool entries for every row of the group and
// is loaded once for all of the rows' query vectors (the group's rows x the
// kv head's query heads, 16 to a warp's mma tile, 64 to a pass); a later
// tile is loaded per row and only that row's vectors take it. Each vector
// keeps a running (max, sum of weights, unnormalised output) over its
// tiles in tile order (flash attention's rescaling), so a vector's partial
// result is the same function of its query and its split's keys in any
// group (att_tile.cu: an mma output depends on its own vector only). The
// block that completes a row's last split (a counter per (row, kv head),
// back to zero after) merges the row's splits in split order: the same sums
// whatever the batch, the group or the order the blocks ran.
//
// With `early` (the default; SPECULA_TREE_EARLY=0 turns it off), a block
// plans its split and starts its first tile's cp.async before the wait on
// the previous kernel when that tile lies inside the group's common prefix,
// and asks L2 for the split's later prefix entries: the key lists were
// uploaded before the forward's first kernel, and the committed entries were
// written by kernels that have finished once the kernel before this one
// (the RoPE and cache append, which writes only the rows' own entries) has
// passed its own wait, which is when it lets this one launch.

#define TREE_GROUP_MAX 64
// 64-key tiles per split at most (the launch passes split_tiles).
#define TREE_SPLIT_TILES_MAX 16
// Query vectors per pass: four warps of 16.
#define TREE_PASS_VECTORS 64

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

// One tile into the running state of the warp's vectors (tile row g: m0,
// l0, o[.][0..1]; g + 8: m1, l1, o[.][2..3]), each seeing its first lim
// rows of the tile (0: none, the state is left as it was, bit for bit).
template <int HD>
__device__ __forceinline__ void tree_take_tile(float (&o)[HD / 8][4], float& m0, float& m1, float& l0, float& l1,
                                               const unsigned (&qa)[HD / 16][4], const bf16* ks, const bf16* vs,
                                               int lim0, int lim1, float sl2, int lane) {
    float s[AT_KEYS / 8][4];
    at_scores<HD>(s, qa, ks, lane);
    float t0, t1;
    at_mask_max(s, lim0, lim1, lane, t0, t1);
    float n0 = fmaxf(m0, t0), n1 = fmaxf(m1, t1);
    // Equal maxima (unchanged, or both -inf) keep the state as it is.
    float a0 = n0 == m0 ? 1.f : exp2f((m0 - n0) * sl2), a1 = n1 == m1 ? 1.f : exp2f((m1 - n1) * sl2);
    float p0, p1;
    at_exp_sum(s, n0, n1, sl2, p0, p1);
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
    at_pv<HD>(o, s, vs, lane);
}

__device__ __forceinline__ void tree_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits for every cp.async group but the newest one.
__device__ __forceinline__ void tree_cp_wait_older() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

template <int HD>
__device__ void tree_attention(bf16* out, float* part_out, float* part_ml, int* counters, const bf16* q,
                               const bf16* kp, const bf16* vp, const int* base, const int* prefix,
                               const int* extra_off, const int* extra, const int* groups, int heads, int kv_heads,
                               float scale, int splits_cap, long pool_offset, int split_tiles, int early) {
    // Two stages of (keys, values): 4 x AT_KEYS x (HD + 8) bf16, dynamic.
    extern __shared__ __align__(16) unsigned char tree_smem[];
    constexpr int TILE = AT_KEYS * at_stride<HD>();
    bf16* stages = (bf16*)tree_smem;
    // The split's work in order: tile t for every row (row field 0) or for
    // group row i alone (row field i + 1), as t * 128 + field.
    __shared__ int items[TREE_SPLIT_TILES_MAX * (TREE_GROUP_MAX + 1)];
    __shared__ int n_items;
    __shared__ int done[TREE_GROUP_MAX];
    __shared__ int n_done;
    __shared__ int roff[TREE_GROUP_MAX];
    __shared__ int n_round;
    kp += pool_offset;
    vp += pool_offset;
    if (!early) pdl_enter();
    int grp = blockIdx.x, kvh = blockIdx.y, s = blockIdx.z;
    int first = groups[3 * grp], count = groups[3 * grp + 1], c = groups[3 * grp + 2];
    // A block with nothing to do still waits (when early): a kernel after
    // this one relies on this one's end implying the previous kernel's.
    if (count == 0) {
        if (early) pdl_enter();
        return;
    }
    const int split_keys = AT_KEYS * split_tiles;
    int k0 = s * split_keys;
    int longest = 0;
    for (int i = 0; i < count; i++) longest = max(longest, tree_keys(prefix, extra_off, first + i));
    if (k0 >= longest) {
        if (early) pdl_enter();
        return;
    }
    int t0 = k0 / AT_KEYS, t1 = (min(k0 + split_keys, longest) + AT_KEYS - 1) / AT_KEYS;
    if (threadIdx.x == 0) {
        int k = 0;
        for (int t = t0; t < t1; t++) {
            if ((t + 1) * AT_KEYS <= c) {
                items[k++] = t * 128;
            } else {
                for (int i = 0; i < count; i++)
                    if (tree_keys(prefix, extra_off, first + i) > t * AT_KEYS) items[k++] = t * 128 + i + 1;
            }
        }
        n_items = k;
    }
    __syncthreads();
    int G = heads / kv_heads;
    size_t width = (size_t)kv_heads * HD;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long b = base[first];
    float sl2 = scale * 1.4426950408889634f;
    int ni = n_items;
    auto issue = [&](int i) {
        int t = items[i] / 128, field = items[i] % 128;
        bf16* ks = stages + (i & 1) * 2 * TILE;
        if (field == 0) {
            at_load_tile<HD>(ks, ks + TILE, kp, vp, width, kvh, [&](int k) { return b + t * AT_KEYS + k; });
        } else {
            int r = first + field - 1, n = tree_keys(prefix, extra_off, r), np = prefix[r], e0 = extra_off[r];
            at_load_tile<HD>(ks, ks + TILE, kp, vp, width, kvh, [&](int k) {
                int j = t * AT_KEYS + k;
                if (j >= n) return -1L;
                return b + (j < np ? j : extra[e0 + j - np]);
            });
        }
        tree_cp_commit();
    };
    // The first tile ahead of the wait when it is the whole group's
    // (inside the common prefix), and the split's later prefix entries
    // asked of L2; then the wait.
    bool ahead = early && ni > 0 && items[0] % 128 == 0;
    if (early) {
        if (ahead) issue(0);
        int kp0 = ahead ? k0 + AT_KEYS : k0, kp1 = min(k0 + split_keys, c);
        constexpr int LINES = HD * 2 / 128 > 0 ? HD * 2 / 128 : 1;
        for (int i = threadIdx.x; i < (kp1 - kp0) * LINES; i += blockDim.x) {
            size_t off = (size_t)(b + kp0 + i / LINES) * width + (size_t)kvh * HD + (i % LINES) * 64;
            prefetch_l2(kp + off);
            prefetch_l2(vp + off);
        }
        pdl_enter();
    }
    int nv = count * G;
    for (int pass = 0; pass < nv; pass += TREE_PASS_VECTORS) {
        int vbase = pass + warp * 16, g = lane >> 2;
        int v0 = vbase + g < nv ? vbase + g : -1, v1 = vbase + g + 8 < nv ? vbase + g + 8 : -1;
        // Group rows of the vectors (-1: none) and their key counts.
        int r0 = v0 >= 0 ? v0 / G : -1, r1 = v1 >= 0 ? v1 / G : -1;
        int n0 = r0 >= 0 ? tree_keys(prefix, extra_off, first + r0) : 0;
        int n1 = r1 >= 0 ? tree_keys(prefix, extra_off, first + r1) : 0;
        int row_lo = vbase / G, row_hi = (min(vbase + 16, nv) - 1) / G;
        bool active = vbase < nv;
        unsigned qa[HD / 16][4];
        at_load_q<HD>(qa, v0 >= 0 ? q + ((size_t)(first + r0) * heads + kvh * G + v0 % G) * HD : nullptr,
                      v1 >= 0 ? q + ((size_t)(first + r1) * heads + kvh * G + v1 % G) * HD : nullptr, lane);
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
        float o[HD / 8][4];
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.f;
        __syncthreads();  // the previous pass is done with the stages
        if (pass > 0 || !ahead) issue(0);
        for (int i = 0; i < ni; i++) {
            if (i + 1 < ni) {
                issue(i + 1);
            } else {
                tree_cp_commit();  // an empty group: the wait below then covers item i
            }
            tree_cp_wait_older();
            __syncthreads();
            int t = items[i] / 128, field = items[i] % 128, row = field - 1;
            if (active && (field == 0 || (row >= row_lo && row <= row_hi))) {
                int kt = t * AT_KEYS;
                int lim0 = r0 < 0 ? 0 : field == 0 ? AT_KEYS : r0 == row ? n0 - kt : 0;
                int lim1 = r1 < 0 ? 0 : field == 0 ? AT_KEYS : r1 == row ? n1 - kt : 0;
                const bf16* ks = stages + (i & 1) * 2 * TILE;
                tree_take_tile<HD>(o, m0, m1, l0, l1, qa, ks, ks + TILE, lim0, lim1, sl2, lane);
            }
            __syncthreads();  // stage i & 1 is refilled next
        }
        if (active) {
            // A row of one split is done here: its output is o / l (the
            // bits its merge would give: weight 1, one term).
            bool whole0 = v0 >= 0 && n0 <= split_keys, whole1 = v1 >= 0 && n1 <= split_keys;
            int t4 = lane & 3;
            if (whole0 || whole1) {
#pragma unroll
                for (int nd = 0; nd < HD / 8; nd++) {
                    int d = nd * 8 + 2 * t4;
                    if (whole0) {
                        bf16* y = out + ((size_t)(first + r0) * heads + kvh * G + v0 % G) * HD + d;
                        st(&y[0], o[nd][0] / l0);
                        st(&y[1], o[nd][1] / l0);
                    }
                    if (whole1) {
                        bf16* y = out + ((size_t)(first + r1) * heads + kvh * G + v1 % G) * HD + d;
                        st(&y[0], o[nd][2] / l1);
                        st(&y[1], o[nd][3] / l1);
                    }
                }
            }
            auto slot = [&](int v) { return ((size_t)(first + v / G) * heads + kvh * G + v % G) * splits_cap + s; };
            tree_store<HD>(part_out, part_ml, o, m0, m1, l0, l1, whole0 ? -1 : v0, whole1 ? -1 : v1, lane, slot);
        }
    }
    // Every row one split: all written above.
    if (longest <= split_keys) return;
    // Count this split for each row it covered; whoever completes a row
    // merges it. Each count is an acq_rel atomic after a block barrier (the
    // barrier orders the block's partials before it, as in last_to_arrive):
    // the completing thread sees every split's partials, and the barrier
    // below passes them on to the block.
    __syncthreads();
    if (threadIdx.x == 0) n_done = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        int r = first + i, n = tree_keys(prefix, extra_off, r);
        if (k0 >= n) continue;
        int splits = (n + split_keys - 1) / split_keys;
        if (splits == 1) continue;  // written above
        if (atom_add_acq_rel((unsigned int*)&counters[r * kv_heads + kvh], 1u) == (unsigned int)splits - 1)
            done[atomicAdd(&n_done, 1)] = r;
    }
    __syncthreads();
    int nd = n_done;
    if (nd == 0) return;
    // Merge the completed rows, as many at a time as their split weights fit
    // the (now free) stages: per (row, head) one warp finds the maximum and
    // the weights over the splits (lanes over splits; the sum of weights in
    // a fixed order: lanes in split order, then lane 0's butterfly), then
    // every thread sums 4 outputs over the splits in split order. A row's
    // sums depend on its split count alone (a function of its key count).
    float* wbuf = (float*)tree_smem;
    constexpr int CAP = 2 * TILE;  // floats in the stages
    for (int k = 0; k < nd;) {
        // Rows k .. k_end of this round and their weights' offsets.
        if (threadIdx.x == 0) {
            int used = 0, k_end = k;
            while (k_end < nd) {
                int sp = (tree_keys(prefix, extra_off, done[k_end]) + split_keys - 1) / split_keys;
                if (used + G * (sp + 1) > CAP) break;
                roff[k_end - k] = used;
                used += G * (sp + 1);
                k_end++;
            }
            n_round = k_end - k;
        }
        __syncthreads();
        int nr = n_round;
        if (nr == 0) {
            // One row whose weights do not fit: each output on its own.
            int r = done[k], n = tree_keys(prefix, extra_off, r);
            int splits = (n + split_keys - 1) / split_keys;
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
            __syncthreads();
            k++;
            continue;
        }
        for (int pair = warp; pair < nr * G; pair += blockDim.x / 32) {
            int j = pair / G, hh = pair % G, r = done[k + j];
            int sp = (tree_keys(prefix, extra_off, r) + split_keys - 1) / split_keys;
            float* w = wbuf + roff[j] + hh * (sp + 1);
            size_t s0 = ((size_t)r * heads + kvh * G + hh) * splits_cap;
            float m = -INFINITY;
            for (int t = lane; t < sp; t += 32) m = fmaxf(m, __ldcg(&part_ml[2 * (s0 + t)]));
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            float l = 0.f;
            for (int t = lane; t < sp; t += 32) {
                float wt = exp2f((__ldcg(&part_ml[2 * (s0 + t)]) - m) * sl2);
                w[t] = wt;
                l = fmaf(__ldcg(&part_ml[2 * (s0 + t) + 1]), wt, l);
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
            if (lane == 0) w[sp] = l;
        }
        __syncthreads();
        constexpr int D4 = HD / 4;
        for (int it = threadIdx.x; it < nr * G * D4; it += blockDim.x) {
            int j = it / (G * D4), hh = (it / D4) % G, d = (it % D4) * 4, r = done[k + j];
            int sp = (tree_keys(prefix, extra_off, r) + split_keys - 1) / split_keys;
            const float* w = wbuf + roff[j] + hh * (sp + 1);
            size_t s0 = ((size_t)r * heads + kvh * G + hh) * splits_cap;
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
            for (int t = 0; t < sp; t++) {
                float4 p = __ldcg((const float4*)&part_out[(s0 + t) * HD + d]);
                float wt = w[t];
                acc.x = fmaf(p.x, wt, acc.x);
                acc.y = fmaf(p.y, wt, acc.y);
                acc.z = fmaf(p.z, wt, acc.z);
                acc.w = fmaf(p.w, wt, acc.w);
            }
            float l = w[sp];
            bf16* o = out + ((size_t)r * heads + kvh * G + hh) * HD + d;
            st(&o[0], acc.x / l);
            st(&o[1], acc.y / l);
            st(&o[2], acc.z / l);
            st(&o[3], acc.w / l);
        }
        __syncthreads();
        k += nr;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < nd; k += blockDim.x) counters[done[k] * kv_heads + kvh] = 0;
}

// Each enters as a programmatic dependent inside tree_attention (after its
// early work when `early`).
#define P_TREE (bf16* out, float* part_out, float* part_ml, int* counters, const bf16* q, const bf16* kp, const bf16* vp, const int* base, const int* prefix, const int* extra_off, const int* extra, const int* groups, int heads, int kv_heads, float scale, int splits_cap, long pool_offset, int split_tiles, int early)
#define A_TREE (out, part_out, part_ml, counters, q, kp, vp, base, prefix, extra_off, extra, groups, heads, kv_heads, scale, splits_cap, pool_offset, split_tiles, early)
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_32_bf16 P_TREE {
    tree_attention<32> A_TREE;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_64_bf16 P_TREE {
    tree_attention<64> A_TREE;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_128_bf16 P_TREE {
    tree_attention<128> A_TREE;
}
