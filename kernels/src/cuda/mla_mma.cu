
// ---------------------------------------------------------------------------
// Latent attention on tensor cores (bf16, sm_80+): the split-K latent
// attention of mla_split.cu with a block's 16 query heads as the 16 rows of
// mma.m16n8k16, so that one block scores a chunk of keys against 16 heads
// and sums their outputs at once (the FMA kernel takes one or four heads a
// block). Block (row r, group g of 16 heads, split s) takes a run of `tiles`
// chunks of MLA_MMA_KEYS keys of row r's key list, tiles and splits by the
// rule (split_cap, min_chunks) the launch passes (mla_split_tiles; the
// FMA kernel's rule by default, at most MLA_MMA_MAX_SPLITS splits), so a
// row's splits follow its own key count alone. Per chunk:
//
// 1. The chunk's cache rows (zeros past the split's last key), and in the
//    first chunk the 16 heads' query rows, are stored to shared memory from
//    registers, rows MLA_MMA_PAD values longer than D so that the fragment
//    loads below spread over the banks; then the next chunk's rows are
//    loaded into those registers, in flight while this chunk is computed.
// 2. Scores: warp w takes the 8 keys of tile w % 4 and the 32-wide chunks of
//    D of parity w / 4 in ascending order (lane (g, t) holds 8 contiguous
//    values of heads g, g + 8 and of key g: the same k map for both operands,
//    so the products are exact dot products); the two parities' sums are
//    added in that order, times the scale.
// 3. Softmax: warp w takes heads 2w, 2w + 1, a lane per key: the chunk's
//    max, the running max m, p = e^(s - m) rounded to bf16 (the operand of
//    the output product), the sum of the rounded p (xor tree), the factor
//    a = e^(m_old - m) that rescales the running sum and output.
// 4. Output: warp w the columns [w * lora / 8, (w + 1) * lora / 8) of
//    sum_e p_e c_e in registers across the chunks: each chunk multiplies them
//    by a and adds the chunk's keys in two 16-key steps in order (the cache
//    rows as the B operand through ldmatrix.trans).
//
// Each block writes its unnormalised partial output and (max, sum) per head;
// mla_merge_heads_bf16, launched after it, merges them. Rows of fewer than `mma_from` keys are the FMA
// launch's (a forward's long rows take tensor cores: mla_attention.rs), so
// their blocks leave at once. Nothing in a row's arithmetic depends on
// another row, the batch or the launch's shape: decode and verification rows
// with the same keys give the same bits. Needs heads % 16 == 0, D % 32 == 0,
// D <= 768, lora % 64 == 0 and lora <= 512 (the launcher checks). Dynamic
// shared memory: mla_mma_smem in mla_attention.rs.

#define MLA_MMA_KEYS 32
// Splits of a row at most (mla_layout.rs: MLA_MMA_MAX_SPLITS).
#define MLA_MMA_MAX_SPLITS 128
#define MLA_MMA_PAD 8
// 8-column output tiles a warp holds at most (lora / 64 <= 8).
#define MLA_MMA_OUT_TILES 8

// B operand of mma.m16n8k16 for the 16 x 8 block at `p` of a row-major
// [k][n] bf16 array in shared memory whose rows are `stride` values apart:
// lanes 0-7 address rows 0-7, lanes 8-15 rows 8-15 (ldmatrix .trans).
__device__ __forceinline__ void ldsm_b_trans(unsigned int& b0, unsigned int& b1, const bf16* p, int stride, int lane) {
#if __CUDA_ARCH__ >= 800
    const bf16* row = p + (size_t)(lane & 15) * stride;
    unsigned int a = (unsigned int)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(b0), "=r"(b1) : "r"(a));
#endif
}

// Keys t0 .. t0 + 31 of row `rk`'s list into registers (zeros from `end`):
// warp w the keys w, w + 8, w + 16, w + 24, every 16-byte slice.
__device__ __forceinline__ void mma_load_keys(uint4 (&kv)[4][3], const bf16* kp, const MlaRowKeys& rk,
                                              const int* extra, int t0, int end, int d, int per, int warp,
                                              int lane) {
    const uint4 zero4 = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int u = 0; u < 4; u++) {
        int jj = t0 + warp + 8 * u;
        if (jj >= end) {
#pragma unroll
            for (int sl = 0; sl < 3; sl++) kv[u][sl] = zero4;
            continue;
        }
        const uint4* row = (const uint4*)(kp + (size_t)rk.entry(extra, jj) * d);
#pragma unroll
        for (int sl = 0; sl < 3; sl++)
            if (lane + 32 * sl < per) kv[u][sl] = row[lane + 32 * sl];
    }
}

// The loaded keys into shared memory, rows dp values apart.
__device__ __forceinline__ void mma_store_keys(bf16* ks, const uint4 (&kv)[4][3], int dp, int per, int warp,
                                               int lane) {
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
        for (int sl = 0; sl < 3; sl++)
            if (lane + 32 * sl < per) *(uint4*)(ks + (size_t)(warp + 8 * u) * dp + 8 * (lane + 32 * sl)) = kv[u][sl];
}

// One row's chunk (steps 2-4 above), its n keys staged in ks and its 16
// query rows in qs (visible: the caller synchronised after storing them):
// scores, the running max and sum (run_m, run_l), the running output o.
// Ends with a barrier, after which ks, ps, pb and rescale may be rewritten.
__device__ __forceinline__ void mma_chunk_step(float (&o)[MLA_MMA_OUT_TILES][4], float* run_m, float* run_l,
                                               float* rescale, const bf16* ks, const bf16* qs, float* ps, bf16* pb,
                                               int n, float scale, int d, int dp, int lora, int warp, int lane) {
    constexpr int H = 16, NK = MLA_MMA_KEYS, PBS = NK + 8;
    int g = lane >> 2, t = lane & 3;
    // 2. Scores of key tile w % 4 over the chunks of parity w / 4.
    {
        int tile = warp & 3, par = warp >> 2;
        const bf16* qlo = qs + (size_t)g * dp + 8 * t;
        const bf16* qhi = qs + (size_t)(g + 8) * dp + 8 * t;
        const bf16* kr = ks + (size_t)(8 * tile + g) * dp + 8 * t;
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 5
        for (int c = 32 * par; c < d; c += 64) mma_chunk(acc, ld_frag(qlo + c), ld_frag(qhi + c), ld_frag(kr + c));
        float* sp = ps + par * H * NK;
        int key = 8 * tile + 2 * t;
        sp[g * NK + key] = acc[0];
        sp[g * NK + key + 1] = acc[1];
        sp[(g + 8) * NK + key] = acc[2];
        sp[(g + 8) * NK + key + 1] = acc[3];
    }
    __syncthreads();
    // 3. Softmax of heads 2w, 2w + 1, lane j the chunk's key j.
#pragma unroll
    for (int u = 0; u < 2; u++) {
        int hh = 2 * warp + u;
        bool live = lane < n;
        float m_old = run_m[hh];
        float v = live ? (ps[hh * NK + lane] + ps[H * NK + hh * NK + lane]) * scale : -INFINITY;
        float mx = v;
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o2));
        float m = fmaxf(m_old, mx);
        bf16 pv;
        st(&pv, live ? expf(v - m) : 0.f);
        pb[hh * PBS + lane] = pv;
        float sum = ld(&pv);
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o2);
        if (lane == 0) {
            float a = expf(m_old - m);
            rescale[hh] = a;
            run_l[hh] = run_l[hh] * a + sum;
            run_m[hh] = m;
        }
    }
    __syncthreads();
    // 4. The running output of warp w's columns: times a, plus the chunk's
    // two 16-key steps.
    int c0 = warp * (lora / 8), ntiles = lora / 64;
    unsigned int a[2][4];
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const bf16* plo = pb + (size_t)g * PBS + 16 * k + 2 * t;
        const bf16* phi = pb + (size_t)(g + 8) * PBS + 16 * k + 2 * t;
        a[k][0] = *(const unsigned int*)plo;
        a[k][1] = *(const unsigned int*)phi;
        a[k][2] = *(const unsigned int*)(plo + 8);
        a[k][3] = *(const unsigned int*)(phi + 8);
    }
    float f_lo = rescale[g], f_hi = rescale[g + 8];
#pragma unroll
    for (int i = 0; i < MLA_MMA_OUT_TILES; i++) {
        if (i >= ntiles) continue;
        o[i][0] *= f_lo;
        o[i][1] *= f_lo;
        o[i][2] *= f_hi;
        o[i][3] *= f_hi;
#pragma unroll
        for (int k = 0; k < 2; k++) {
            unsigned int b0, b1;
            ldsm_b_trans(b0, b1, ks + (size_t)(16 * k) * dp + c0 + 8 * i, dp, lane);
            mma_bf16(o[i], a[k][0], a[k][1], a[k][2], a[k][3], b0, b1);
        }
    }
    __syncthreads();  // the chunk's keys, p and factors are no longer read
}

// Block (pair x, group g, split s) of the tensor-core latent attention over
// the launch's rows P x, P x + 1 (of `rows`; P = 1 or 2). Each row's chunks
// are those of its own split rule and each chunk's arithmetic that of
// mma_chunk_step, so a row's bits are the same whichever rows share its
// block. Two rows of one sequence's tree (the same base and cached prefix,
// the same chunks a split) share the staging of every chunk wholly within
// the cached prefix: the cache is read once for both (a verify's rows); a
// chunk with tree keys is staged for each row in turn, and rows that share
// nothing walk their splits one after the other.
template <int P>
__device__ void mla_mma_rows(float* smem, float* part_out, float* part_ml, const bf16* qcat, const bf16* pool,
                             const int* base, const int* prefix, const int* extra_off, const int* extra, int heads,
                             int lora, int rd, float scale, long pool_offset, int row0, int rows, int mma_from,
                             int split_cap, int min_chunks) {
    constexpr int H = 16, NK = MLA_MMA_KEYS;
    __shared__ float run_m[P][H], run_l[P][H], rescale[H];
    int d = lora + rd, dp = d + MLA_MMA_PAD, per = d / 8;
    int g0 = blockIdx.y, s = blockIdx.z, splits = gridDim.z, h0 = g0 * H;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    MlaRowKeys rk[P];
    bool walk[P];
    int start[P], end[P], tiles[P];
#pragma unroll
    for (int p = 0; p < P; p++) {
        int rl = P * blockIdx.x + p;
        walk[p] = rl < rows;
        if (walk[p]) rk[p] = mla_row_keys(base, prefix, extra_off, row0 + rl);
        walk[p] = walk[p] && rk[p].n >= mma_from;
        tiles[p] = walk[p] ? mla_split_tiles(rk[p].n, NK, split_cap, min_chunks) : 0;
        start[p] = s * tiles[p] * NK;
        end[p] = walk[p] ? min(rk[p].n, start[p] + tiles[p] * NK) : 0;
    }
    if (walk[0])
        mla_prefetch_chunk<bf16>(pool, base, prefix, extra_off, extra, d, NK, pool_offset, row0 + P * blockIdx.x,
                                 split_cap, min_chunks);
    pdl_enter();
    // After the wait: a block that leaves has still waited for the kernel
    // before, so this launch's end implies that kernel's.
    bf16* ks = (bf16*)smem;                   // [NK][dp]
    bf16* qs = ks + NK * dp;                  // [P][H][dp]
    float* ps = (float*)(qs + P * H * dp);    // [2][H][NK]: the two parities' scores
    bf16* pb = (bf16*)(ps + 2 * H * NK);      // [H][NK + 8]: p in bf16
    const bf16* kp = pool + pool_offset;
    float o[P][MLA_MMA_OUT_TILES][4];
#pragma unroll
    for (int p = 0; p < P; p++) {
        if (walk[p] && end[p] <= start[p]) {
            mla_empty_split(part_out, part_ml, ((size_t)(P * blockIdx.x + p) * heads + h0) * splits, H, lora, splits, s);
            walk[p] = false;
        }
        if (!walk[p]) continue;
        // The row's 16 query heads, and its running state.
        const bf16* qh = qcat + ((size_t)(row0 + P * blockIdx.x + p) * heads + h0) * d;
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const uint4* row = (const uint4*)(qh + (size_t)(warp + 8 * u) * d);
#pragma unroll
            for (int sl = 0; sl < 3; sl++)
                if (lane + 32 * sl < per)
                    *(uint4*)(qs + (size_t)(p * H + warp + 8 * u) * dp + 8 * (lane + 32 * sl)) = row[lane + 32 * sl];
        }
        if (threadIdx.x < H) {
            run_m[p][threadIdx.x] = -INFINITY;
            run_l[p][threadIdx.x] = 0.f;
        }
#pragma unroll
        for (int i = 0; i < MLA_MMA_OUT_TILES; i++) o[p][i][0] = o[p][i][1] = o[p][i][2] = o[p][i][3] = 0.f;
    }
    uint4 kv[4][3];
    bool share = P == 2 && walk[0] && walk[P - 1] && rk[0].base == rk[P - 1].base && rk[0].np == rk[P - 1].np &&
                 tiles[0] == tiles[P - 1];
    if (share) {
        // Chunks wholly within the shared prefix staged once (and the next
        // one loaded while both rows compute); the others for each row.
        int np = rk[0].np, hi = max(end[0], end[P - 1]);
        if (start[0] + NK <= np) mma_load_keys(kv, kp, rk[0], extra, start[0], end[0], d, per, warp, lane);
        for (int t0 = start[0]; t0 < hi; t0 += NK) {
            if (t0 + NK <= np) {
                mma_store_keys(ks, kv, dp, per, warp, lane);
                __syncthreads();
                if (t0 + 2 * NK <= np && t0 + NK < hi)
                    mma_load_keys(kv, kp, rk[0], extra, t0 + NK, end[0], d, per, warp, lane);
#pragma unroll
                for (int p = 0; p < P; p++)
                    mma_chunk_step(o[p], run_m[p], run_l[p], rescale, ks, qs + p * H * dp, ps, pb, NK, scale, d, dp,
                                   lora, warp, lane);
                continue;
            }
#pragma unroll
            for (int p = 0; p < P; p++) {
                if (t0 >= end[p]) continue;
                mma_load_keys(kv, kp, rk[p], extra, t0, end[p], d, per, warp, lane);
                mma_store_keys(ks, kv, dp, per, warp, lane);
                __syncthreads();
                mma_chunk_step(o[p], run_m[p], run_l[p], rescale, ks, qs + p * H * dp, ps, pb, min(NK, end[p] - t0),
                               scale, d, dp, lora, warp, lane);
            }
        }
    } else {
#pragma unroll
        for (int p = 0; p < P; p++) {
            if (!walk[p]) continue;
            mma_load_keys(kv, kp, rk[p], extra, start[p], end[p], d, per, warp, lane);
            for (int t0 = start[p]; t0 < end[p]; t0 += NK) {
                mma_store_keys(ks, kv, dp, per, warp, lane);
                __syncthreads();
                if (t0 + NK < end[p]) mma_load_keys(kv, kp, rk[p], extra, t0 + NK, end[p], d, per, warp, lane);
                mma_chunk_step(o[p], run_m[p], run_l[p], rescale, ks, qs + p * H * dp, ps, pb, min(NK, end[p] - t0),
                               scale, d, dp, lora, warp, lane);
            }
        }
    }
    // Each row's unnormalised partial output and (max, sum).
    int g = lane >> 2, t = lane & 3, c0 = warp * (lora / 8), ntiles = lora / 64;
#pragma unroll
    for (int p = 0; p < P; p++) {
        if (!walk[p]) continue;
        size_t first = ((size_t)(P * blockIdx.x + p) * heads + h0) * splits;  // slot of (row, h0, split 0)
        if (threadIdx.x < H) {
            size_t slot = first + (size_t)threadIdx.x * splits + s;
            part_ml[2 * slot] = run_m[p][threadIdx.x];
            part_ml[2 * slot + 1] = run_l[p][threadIdx.x];
        }
#pragma unroll
        for (int i = 0; i < MLA_MMA_OUT_TILES; i++) {
            if (i >= ntiles) continue;
            int col = c0 + 8 * i + 2 * t;
            *(float2*)&part_out[(first + (size_t)g * splits + s) * lora + col] = make_float2(o[p][i][0], o[p][i][1]);
            *(float2*)&part_out[(first + (size_t)(g + 8) * splits + s) * lora + col] =
                make_float2(o[p][i][2], o[p][i][3]);
        }
    }
}

// A row a block (decode rows of different sequences; a verify of one row),
// and rows in pairs (a verify's rows, whose cached prefix a pair reads once).
extern "C" __global__ void mla_attention_mma_bf16(float* part_out, float* part_ml, const bf16* qcat, const bf16* pool,
                                                  const int* base, const int* prefix, const int* extra_off,
                                                  const int* extra, int heads, int lora, int rd, float scale,
                                                  int chunk, long pool_offset, int row0, int mma_from, int rows,
                                                  int split_cap, int min_chunks) {
    // Its own name: an extern "C" kernel's dynamic shared array would
    // clash in linkage with the templates' `smem`.
    extern __shared__ float mma_smem[];
    mla_mma_rows<1>(mma_smem, part_out, part_ml, qcat, pool, base, prefix, extra_off, extra, heads, lora, rd, scale,
                    pool_offset, row0, rows, mma_from, split_cap, min_chunks);
}

extern "C" __global__ void mla_attention_mma2_bf16(float* part_out, float* part_ml, const bf16* qcat, const bf16* pool,
                                                   const int* base, const int* prefix, const int* extra_off,
                                                   const int* extra, int heads, int lora, int rd, float scale,
                                                   int chunk, long pool_offset, int row0, int mma_from, int rows,
                                                   int split_cap, int min_chunks) {
    extern __shared__ float mma_smem[];
    mla_mma_rows<2>(mma_smem, part_out, part_ml, qcat, pool, base, prefix, extra_off, extra, heads, lora, rd, scale,
                    pool_offset, row0, rows, mma_from, split_cap, min_chunks);
}

// The merge of the tensor-core launch's splits (mla_merge_heads_bf16 after
// it): block (row r, head h, slice c) merges the MLA_MERGE_COLS columns
// from c * MLA_MERGE_COLS of (r, h)'s partials, so that a long row's many
// splits are read by many blocks side by side (a block a (row, head)
// walked 16 x splits x lora floats in 16 blocks: 14 us a layer at 32 splits,
// 51 at 128, V2-Lite batch 1 at 8192 keys). Warp 0 takes the splits' max m
// (lane l the splits l, l + 32, ..., then the xor tree), each split's weight
// e^(m_s - m) and l = sum_s l_s e^(m_s - m) (lane sums in split order, then
// the xor tree); warp w then sums its column group's partials times the
// weights over the splits s = w / 2 (mod 4) in order, and the four phases
// add as (0 + 1) + (2 + 3). Every order is fixed by the split index alone,
// and splits past the row's own are empty (weight 0, partial 0: exact zeros
// added), so a row's bits do not depend on the launch's split count, the
// batch, or the other rows. Rows of fewer than mma_from keys are the FMA
// launch's.
#define MLA_MERGE_COLS 64
extern "C" __global__ void mla_merge_heads_bf16(bf16* out, const float* part_out, const float* part_ml, const int* base,
                                                const int* prefix, const int* extra_off, int heads, int lora,
                                                int splits, int row0, int mma_from) {
    __shared__ float weights[MLA_MMA_MAX_SPLITS];
    __shared__ float phase_sum[4][MLA_MERGE_COLS];
    __shared__ float total;
    pdl_enter();
    int rl = blockIdx.x, r = row0 + rl, h = blockIdx.y;
    if (mla_row_keys(base, prefix, extra_off, r).n < mma_from) return;
    size_t first = ((size_t)rl * heads + h) * splits;
    const float* ml = part_ml + 2 * first;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (warp == 0) {
        float m = -INFINITY;
        for (int s = lane; s < splits; s += 32) m = fmaxf(m, __ldcg(&ml[2 * s]));
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o2));
        float l = 0.f;
        for (int s = lane; s < splits; s += 32) {
            float e = expf(__ldcg(&ml[2 * s]) - m);
            weights[s] = e;
            l += __ldcg(&ml[2 * s + 1]) * e;
        }
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o2);
        if (lane == 0) total = l;
    }
    __syncthreads();
    int group = warp & 1, phase = warp >> 1;
    int col = blockIdx.z * MLA_MERGE_COLS + 32 * group + lane;
    float acc = 0.f;
    if (col < lora) {
        const float* po = part_out + first * lora + col;
#pragma unroll 8
        for (int s = phase; s < splits; s += 4) acc += __ldcg(&po[(size_t)s * lora]) * weights[s];
    }
    phase_sum[phase][32 * group + lane] = acc;
    __syncthreads();
    if (phase == 0 && col < lora) {
        int c = 32 * group + lane;
        float o = (phase_sum[0][c] + phase_sum[1][c]) + (phase_sum[2][c] + phase_sum[3][c]);
        st(&out[((size_t)r * heads + h) * lora + col], o / total);
    }
}
