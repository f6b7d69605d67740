
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
// the 16-wide output column pairs p with p % ways == own (its o[2j],
// o[2j + 1] hold pair own + j ways; `ways` is a template parameter, so a
// warp keeps only its share of the state in registers). The arithmetic
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

#define TREE_GROUP_MAX 64
// 64-key tiles per split at most (the launch passes split_tiles).
#define TREE_SPLIT_TILES_MAX 16
// Query vectors per pass: four warps of 16.
#define TREE_PASS_VECTORS 64
// `flags` bits.
#define TREE_EARLY 1
#define TREE_SHARE 2
// Four stages of tiles in flight instead of two (a block alone on its
// SM: tree_attention.cu); the same arithmetic, so the same bits.
#define TREE_DEEP 4
// The item field of a tile past the common prefix taken by every row.
#define TREE_TAIL 127

__device__ __forceinline__ int tree_keys(const int* prefix, const int* extra_off, int r) {
    return prefix[r] + extra_off[r + 1] - extra_off[r];
}

__device__ __forceinline__ void tree_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits for every cp.async group but the newest ns - 1 (ns: the stages,
// 2 or 4).
__device__ __forceinline__ void tree_cp_wait_ring(int ns) {
    if (ns == 4) asm volatile("cp.async.wait_group 3;\n" ::: "memory");
    else asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

#define TREE_QUARTERS (AT_KEYS / 16)

// Writes the partials of the warp's vectors v0 (tile row g) and v1 (g + 8)
// (< 0: none): out_slot(v) gives the vector's (row, head) partial slot. The
// warp writes its column pairs; the (max, sum) comes from the set's warp 0.
template <int HD, int WAYS, typename F>
__device__ __forceinline__ void tree_store(float* part_out, float* part_ml, const float (&o)[HD / 8 / WAYS][4],
                                           float m0, float m1, float l0, float l1, int v0, int v1, int lane, int own,
                                           F slot_of) {
    int t4 = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int v = h == 0 ? v0 : v1;
        if (v < 0) continue;
        size_t sl = slot_of(v);
#pragma unroll
        for (int j = 0; j < HD / 8 / WAYS; j++) {
            *(float2*)(part_out + sl * HD + at_col8(j, own, WAYS) * 8 + 2 * t4) = make_float2(o[j][2 * h], o[j][2 * h + 1]);
        }
        if (t4 == 0 && own == 0) {
            part_ml[2 * sl] = h == 0 ? m0 : m1;
            part_ml[2 * sl + 1] = h == 0 ? l0 : l1;
        }
    }
}

// One tile into the running state of the warp's share of its set (tile row
// g: m0, l0, o[.][0..1]; g + 8: m1, l1, o[.][2..3]), each vector seeing its
// first lim rows of the tile (0: none, the state is left as it was, bit for
// bit). `take`: whether the set takes this tile (the same for its warps);
// every thread of the block calls this for every tile.
template <int HD, int WAYS>
__device__ __forceinline__ void tree_take_tile(float (&o)[HD / 8 / WAYS][4], float& m0, float& m1, float& l0,
                                               float& l1, const unsigned (&qa)[HD / 16][4], const bf16* ks,
                                               const bf16* vs, int lim0, int lim1, float sl2, bool take, float* xmax,
                                               void* swap) {
    constexpr int NQ = TREE_QUARTERS / WAYS, NP = HD / 16 / WAYS;
    static_assert(NP >= 1, "a warp takes at least one column pair");
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int own = warp % WAYS, set = warp / WAYS, k_lo = own * NQ * 16;
    float s[2 * NQ][4];
    float t0 = -INFINITY, t1 = -INFINITY;
    if (take) {
        at_scores<HD, 2 * NQ>(s, qa, ks + k_lo * at_stride<HD>(), lane);
        at_mask_max<2 * NQ>(s, lim0 - k_lo, lim1 - k_lo, lane, t0, t1);
    }
    if constexpr (WAYS > 1) {
        if (take && t == 0) {
            xmax[warp * 16 + g] = t0;
            xmax[warp * 16 + g + 8] = t1;
        }
        __syncthreads();
        if (take) {
#pragma unroll
            for (int w = 0; w < WAYS; w++) {
                t0 = fmaxf(t0, xmax[(set * WAYS + w) * 16 + g]);
                t1 = fmaxf(t1, xmax[(set * WAYS + w) * 16 + g + 8]);
            }
        }
    }
    float n0 = fmaxf(m0, t0), n1 = fmaxf(m1, t1);
    // Equal maxima (unchanged, or both -inf) keep the state as it is.
    float a0 = n0 == m0 ? 1.f : exp2f((m0 - n0) * sl2), a1 = n1 == m1 ? 1.f : exp2f((m1 - n1) * sl2);
    // The weights and each of the warp's quarters' sums.
    float x0[NQ], x1[NQ];
    if (take) {
        float b0 = n0 == -INFINITY ? 0.f : n0 * sl2, b1 = n1 == -INFINITY ? 0.f : n1 * sl2;
#pragma unroll
        for (int q = 0; q < NQ; q++) {
            x0[q] = 0.f;
            x1[q] = 0.f;
#pragma unroll
            for (int n = 2 * q; n < 2 * q + 2; n++) {
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    s[n][j] = exp2f(fmaf(s[n][j], sl2, -b0));
                    s[n][2 + j] = exp2f(fmaf(s[n][2 + j], sl2, -b1));
                    x0[q] += s[n][j];
                    x1[q] += s[n][2 + j];
                }
            }
#pragma unroll
            for (int x = 1; x < 4; x <<= 1) {
                x0[q] += __shfl_xor_sync(0xffffffffu, x0[q], x);
                x1[q] += __shfl_xor_sync(0xffffffffu, x1[q], x);
            }
        }
    }
    float p0, p1;
    if constexpr (WAYS == 1) {
        if (!take) return;
        p0 = x0[0];
        p1 = x1[0];
#pragma unroll
        for (int q = 1; q < TREE_QUARTERS; q++) {
            p0 += x0[q];
            p1 += x1[q];
        }
    } else {
        // Every warp has scored the tile (the barrier above): its key stage
        // is free for the swap of quarter sums [set][quarter][16 vectors] and
        // weight fragments [set][quarter][32 lanes].
        float* qsw = (float*)swap + set * TREE_QUARTERS * 16;
        uint4* fsw = (uint4*)((char*)swap + 2 * TREE_QUARTERS * 16 * 4) + set * TREE_QUARTERS * 32;
        if (take) {
#pragma unroll
            for (int q = 0; q < NQ; q++) {
                int qq = own * NQ + q;
                if (t == 0) {
                    qsw[qq * 16 + g] = x0[q];
                    qsw[qq * 16 + g + 8] = x1[q];
                }
                fsw[qq * 32 + lane] = at_p_frag(s, q);
            }
        }
        __syncthreads();
        if (!take) return;
        p0 = qsw[g];
        p1 = qsw[g + 8];
#pragma unroll
        for (int q = 1; q < TREE_QUARTERS; q++) {
            p0 += qsw[q * 16 + g];
            p1 += qsw[q * 16 + g + 8];
        }
    }
    l0 = fmaf(l0, a0, p0);
    l1 = fmaf(l1, a1, p1);
    m0 = n0;
    m1 = n1;
#pragma unroll
    for (int j = 0; j < 2 * NP; j++) {
        o[j][0] *= a0;
        o[j][1] *= a0;
        o[j][2] *= a1;
        o[j][3] *= a1;
    }
    if constexpr (WAYS == 1) {
        at_pv_frags<HD, NP>(o, [&](int kk) { return at_p_frag(s, kk); }, vs, lane);
    } else {
        const uint4* fsw = (const uint4*)((const char*)swap + 2 * TREE_QUARTERS * 16 * 4) + set * TREE_QUARTERS * 32;
        at_pv_frags<HD, NP>(o, [&](int kk) { return fsw[kk * 32 + lane]; }, vs, lane, own, WAYS);
    }
}

// What a tree-attention block's passes need (tree_attention.cu plans it):
// its group (rows first .. first + count - 1 with G query heads each to kv
// head kvh), split s of split_keys keys, and the ni items of the split.
struct TreeJob {
    bf16* out;
    float* part_out;
    float* part_ml;
    const bf16* q;
    const int* prefix;
    const int* extra_off;
    const int* items;
    int ni, first, count, G, heads, kvh, s, splits_cap, split_keys;
    float sl2;
    // Items 0 .. ahead - 1 were issued before the wait (each its own
    // cp.async group); ns stages of tiles (2 or 4) in a ring.
    int ahead, ns;
    float* xmax;
};

// The block's passes over its group's query vectors, WAYS warps to a set of
// 16 (64 / WAYS vectors a pass), each pass walking the split's items
// (issue(i): item i's tile into stage i % ns of `stages`, one cp.async
// group; ns - 1 items in flight ahead of the one taken), then writing each
// vector's output (a row inside one split) or partial.
template <int HD, int WAYS, typename Issue>
__device__ __forceinline__ void tree_passes(const TreeJob& job, bf16* stages, Issue issue) {
    constexpr int TILE = AT_KEYS * at_stride<HD>(), NO = HD / 8 / WAYS;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, own = warp % WAYS;
    int G = job.G, nv = job.count * G, first = job.first, kvh = job.kvh, heads = job.heads;
    for (int pass = 0; pass < nv; pass += TREE_PASS_VECTORS / WAYS) {
        int vbase = pass + warp / WAYS * 16;
        int v0 = vbase + g < nv ? vbase + g : -1, v1 = vbase + g + 8 < nv ? vbase + g + 8 : -1;
        // Group rows of the vectors (-1: none) and their key counts.
        int r0 = v0 >= 0 ? v0 / G : -1, r1 = v1 >= 0 ? v1 / G : -1;
        int n0 = r0 >= 0 ? tree_keys(job.prefix, job.extra_off, first + r0) : 0;
        int n1 = r1 >= 0 ? tree_keys(job.prefix, job.extra_off, first + r1) : 0;
        int row_lo = vbase / G, row_hi = (min(vbase + 16, nv) - 1) / G;
        bool active = vbase < nv;
        unsigned qa[HD / 16][4];
        at_load_q<HD>(qa, v0 >= 0 ? job.q + ((size_t)(first + r0) * heads + kvh * G + v0 % G) * HD : nullptr,
                      v1 >= 0 ? job.q + ((size_t)(first + r1) * heads + kvh * G + v1 % G) * HD : nullptr, lane);
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
        float o[NO][4];
#pragma unroll
        for (int j = 0; j < NO; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
        __syncthreads();  // the previous pass is done with the stages
        // ns - 1 groups before the first item is taken (empty past the
        // last item), one more a taken item: the wait then covers item i.
        for (int i = pass > 0 ? 0 : job.ahead; i < job.ns - 1; i++) {
            if (i < job.ni) issue(i);
            else tree_cp_commit();
        }
        for (int i = 0; i < job.ni; i++) {
            if (i + job.ns - 1 < job.ni) {
                issue(i + job.ns - 1);
            } else {
                tree_cp_commit();
            }
            tree_cp_wait_ring(job.ns);
            __syncthreads();
            int t = job.items[i] / 128, field = job.items[i] % 128, row = field - 1;
            bool every = field == 0 || field == TREE_TAIL;
            bool take = active && (every || (row >= row_lo && row <= row_hi));
            int kt = t * AT_KEYS;
            int lim0 = r0 < 0 ? 0 : field == 0 ? AT_KEYS : every || r0 == row ? n0 - kt : 0;
            int lim1 = r1 < 0 ? 0 : field == 0 ? AT_KEYS : every || r1 == row ? n1 - kt : 0;
            bf16* ks = stages + (i & (job.ns - 1)) * 2 * TILE;
            tree_take_tile<HD, WAYS>(o, m0, m1, l0, l1, qa, ks, ks + TILE, lim0, lim1, job.sl2, take, job.xmax, ks);
            __syncthreads();  // stage i % ns is refilled next
        }
        if (!active) continue;
        // A row of one split is done here: its output is o / l (the bits
        // its merge would give: weight 1, one term).
        bool whole0 = v0 >= 0 && n0 <= job.split_keys, whole1 = v1 >= 0 && n1 <= job.split_keys;
        int t4 = lane & 3;
        if (whole0 || whole1) {
#pragma unroll
            for (int j = 0; j < NO; j++) {
                int d = at_col8(j, own, WAYS) * 8 + 2 * t4;
                if (whole0) {
                    bf16* y = job.out + ((size_t)(first + r0) * heads + kvh * G + v0 % G) * HD + d;
                    st(&y[0], o[j][0] / l0);
                    st(&y[1], o[j][1] / l0);
                }
                if (whole1) {
                    bf16* y = job.out + ((size_t)(first + r1) * heads + kvh * G + v1 % G) * HD + d;
                    st(&y[0], o[j][2] / l1);
                    st(&y[1], o[j][3] / l1);
                }
            }
        }
        auto slot = [&](int v) {
            return ((size_t)(first + v / G) * heads + kvh * G + v % G) * job.splits_cap + job.s;
        };
        tree_store<HD, WAYS>(job.part_out, job.part_ml, o, m0, m1, l0, l1, whole0 ? -1 : v0, whole1 ? -1 : v1, lane,
                             own, slot);
    }
}
