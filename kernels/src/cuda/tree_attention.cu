
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
// Block (group, kv head, split s) walks the split's tiles in order, one
// or three tiles in flight ahead of the one taken (cp.async into two
// shared-memory stages, or four with TREE_DEEP in `flags`: the host sets
// it when the launch has no more blocks than the device has SMs, so the
// loads of a short split are in flight at once; the same bits): a tile with
// 64 t + 64 <= c holds the same pool entries for every row of the group and
// is loaded once for all of the rows' query vectors (the group's rows x the
// kv head's query heads, 16 to a warp's mma tile, 64 to a pass); so is a
// later tile where every row's entries are the longest row's as far as the
// row goes (a chain: each row's ancestors are the longer rows' first
// entries), each vector masked to its own keys; else a later tile is
// loaded per row and only that row's vectors take it. Each vector
// keeps a running (max, sum of weights, unnormalised output) over its
// tiles in tile order (flash attention's rescaling), so a vector's partial
// result is the same function of its query and its split's keys in any
// group (att_tile.cu: an mma output depends on its own vector only). The
// block that completes a row's last split (a counter per (row, kv head),
// back to zero after) merges the row's splits in split order: the same sums
// whatever the batch, the group or the order the blocks ran.
//
// A group with at most 32 query vectors (a decode row, a short chain) has
// its sets of 16 taken by 4 / sets warps together (tree_tile.cu: the same
// bits). This and the tiles past the prefix taken by every row need
// TREE_SHARE in `flags` (the default; SPECULA_TREE_SHARE=0 gives each set
// one warp and each row its own tiles past the prefix: the same bits).
//
// With TREE_EARLY in `flags` (the default; SPECULA_TREE_EARLY=0 turns it
// off), a block
// plans its split and starts its first tile's cp.async before the wait on
// the previous kernel when that tile lies inside the group's common prefix,
// and asks L2 for the split's later prefix entries: the key lists were
// uploaded before the forward's first kernel, and the committed entries were
// written by kernels that have finished once the kernel before this one
// (the RoPE and cache append, which writes only the rows' own entries) has
// passed its own wait, which is when it lets this one launch.

template <int HD>
__device__ void tree_attention(bf16* out, float* part_out, float* part_ml, int* counters, const bf16* q,
                               const bf16* kp, const bf16* vp, const int* base, const int* prefix,
                               const int* extra_off, const int* extra, const int* groups, int heads, int kv_heads,
                               float scale, int splits_cap, long pool_offset, int split_tiles, int flags) {
    // Two stages of (keys, values), or four with TREE_DEEP: 4 or 8 x
    // AT_KEYS x (HD + 8) bf16, dynamic.
    extern __shared__ __align__(16) unsigned char tree_smem[];
    constexpr int TILE = AT_KEYS * at_stride<HD>();
    bf16* stages = (bf16*)tree_smem;
    // The split's work in order: tile t for every row (row field 0: inside
    // the common prefix; TREE_TAIL: past it, where every row's entries are
    // the longest row's so far as it goes: a chain) or for group row i alone
    // (row field i + 1), as t * 128 + field.
    __shared__ int items[TREE_SPLIT_TILES_MAX * (TREE_GROUP_MAX + 1)];
    __shared__ unsigned tail_apart;
    __shared__ int n_items;
    __shared__ float xmax[4 * 16];
    const bool early = flags & TREE_EARLY;
    const int ns = flags & TREE_DEEP ? 4 : 2;
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
    // The longest row (the first of equals): every row's prefix is c.
    int longest = 0, lr = first;
    for (int i = 0; i < count; i++) {
        int n = tree_keys(prefix, extra_off, first + i);
        if (n > longest) longest = n, lr = first + i;
    }
    if (k0 >= longest) {
        if (early) pdl_enter();
        return;
    }
    int t0 = k0 / AT_KEYS, t1 = (min(k0 + split_keys, longest) + AT_KEYS - 1) / AT_KEYS;
    // Tiles past the common prefix where some row's entry differs from the
    // longest row's (bit t - t0; all of them unless TREE_SHARE).
    bool tail = k0 + split_keys > c;
    if (tail) {
        if (threadIdx.x == 0) tail_apart = flags & TREE_SHARE ? 0u : ~0u;
        __syncthreads();
        int j0 = max(k0, c), span = min(k0 + split_keys, longest) - j0;
        for (int i = threadIdx.x; (flags & TREE_SHARE) && i < count * span; i += blockDim.x) {
            int r = first + i / span, j = j0 + i % span;
            if (j < tree_keys(prefix, extra_off, r) && extra[extra_off[r] + j - c] != extra[extra_off[lr] + j - c])
                atomicOr(&tail_apart, 1u << (j / AT_KEYS - t0));
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        int k = 0;
        for (int t = t0; t < t1; t++) {
            if ((t + 1) * AT_KEYS <= c) {
                items[k++] = t * 128;
            } else if (!(tail_apart >> (t - t0) & 1)) {
                items[k++] = t * 128 + TREE_TAIL;
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
    long b = base[first];
    float sl2 = scale * 1.4426950408889634f;
    int ni = n_items;
    auto issue = [&](int i) {
        int t = items[i] / 128, field = items[i] % 128;
        bf16* ks = stages + (i & (ns - 1)) * 2 * TILE;
        // A tile of every row is the longest row's (inside the prefix: any
        // row's).
        int r = field == 0 || field == TREE_TAIL ? lr : first + field - 1;
        int n = tree_keys(prefix, extra_off, r), e0 = extra_off[r];
        at_load_tile<HD>(ks, ks + TILE, kp, vp, width, kvh, [&](int k) {
            int j = t * AT_KEYS + k;
            if (j >= n) return -1L;
            return b + (j < c ? j : extra[e0 + j - c]);
        });
        tree_cp_commit();
    };
    // The first ns - 1 tiles ahead of the wait where they are the whole
    // group's (inside the common prefix), and the split's later prefix
    // entries asked of L2; then the wait.
    int ahead = 0;
    if (early) {
        while (ahead < ns - 1 && ahead < ni && items[ahead] % 128 == 0) issue(ahead++);
        int kp0 = k0 + ahead * AT_KEYS, kp1 = min(k0 + split_keys, c);
        constexpr int LINES = HD * 2 / 128 > 0 ? HD * 2 / 128 : 1;
        for (int i = threadIdx.x; i < (kp1 - kp0) * LINES; i += blockDim.x) {
            size_t off = (size_t)(b + kp0 + i / LINES) * width + (size_t)kvh * HD + (i % LINES) * 64;
            prefetch_l2(kp + off);
            prefetch_l2(vp + off);
        }
        pdl_enter();
    }
    TreeJob job{out, part_out, part_ml, q, prefix, extra_off, items, ni, first, count, G, heads, kvh, s,
                splits_cap, split_keys, sl2, ahead, ns, xmax};
    int nv = count * G;
    // Warps per set of 16 vectors (at most one per 16-wide output pair).
    int ways = !(flags & TREE_SHARE) || nv > 32 ? 1 : nv > 16 || HD < 64 ? 2 : 4;
    if constexpr (HD >= 64) {
        if (ways == 4) tree_passes<HD, 4>(job, stages, issue);
    }
    if (ways == 2) tree_passes<HD, 2>(job, stages, issue);
    if (ways == 1) tree_passes<HD, 1>(job, stages, issue);
    // Every row one split: all written above.
    if (longest <= split_keys) return;
    tree_merge<HD>(out, part_out, part_ml, counters, prefix, extra_off, first, count, heads, kv_heads, kvh, k0,
                   split_keys, splits_cap, sl2, (float*)tree_smem, 2 * TILE);
}

// Each enters as a programmatic dependent inside tree_attention (after its
// early work with TREE_EARLY).
#define P_TREE (bf16* out, float* part_out, float* part_ml, int* counters, const bf16* q, const bf16* kp, const bf16* vp, const int* base, const int* prefix, const int* extra_off, const int* extra, const int* groups, int heads, int kv_heads, float scale, int splits_cap, long pool_offset, int split_tiles, int flags)
#define A_TREE (out, part_out, part_ml, counters, q, kp, vp, base, prefix, extra_off, extra, groups, heads, kv_heads, scale, splits_cap, pool_offset, split_tiles, flags)
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_32_bf16 P_TREE {
    tree_attention<32> A_TREE;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_64_bf16 P_TREE {
    tree_attention<64> A_TREE;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) tree_attention_128_bf16 P_TREE {
    tree_attention<128> A_TREE;
}
