
// ---------------------------------------------------------------------------
// Split-K latent attention in FMA (f32, and bf16 decode and verification
// rows of fewer than `mma_from` keys; mla_mma.cu has the tensor-core form,
// which takes the longer ones: their blocks here leave after the wait). Block (row r, head group g,
// split s) takes the H heads from g * H (H = MLA_HEADS, or 1 for launches of
// few blocks: a head's sums are the same for any H) and a run of `tiles`
// chunks of `chunk` keys of row r's key list (as the attention kernel:
// base[r] + j for j < prefix[r], then base[r] + extra[..]), tiles =
// ceil(nk / (chunk x MLA_MAX_SPLITS)) for a row of nk keys: one chunk per
// split up to chunk x MLA_MAX_SPLITS keys, so a row never has more than
// MLA_MAX_SPLITS splits and its splits depend on its own key count alone.
// Per chunk: the cache rows are copied to shared memory (a warp per key,
// its first keys' slices loaded before any is stored; in the first chunk the
// query heads are staged while those loads are out); warp w scores keys
// w, w + 8, ... against each head (lane l the 16-byte slices l, l + 32, ...
// of the D values, then the xor tree); warp h takes head h's chunk max and
// the new running max m, p = e^(s - m), their sum (lane partials, xor tree)
// and the factor a = e^(m_old - m) that rescales the running sum and
// output; thread t sums p_e c_e[d] for the columns d = 2t, 2t + 1 over the
// chunk's keys in order and adds it to its running output times a. (With
// one chunk per split, a = 0 and the sums are the chunk's own.) Each block
// writes its unnormalised partial output and (max, sum); the last block of
// (row, group) merges the splits in split order (mla_merge_t). A row's
// result depends only on its own key list. A launch covers the rows row0 ..
// row0 + gridDim.x (the scratch holds that many rows' partials). Dynamic
// shared memory: H x (D + chunk + lora) floats, chunk x D of T. The `_uv` kernel (one head
// a block) also applies W_UV in the merging block (mla_uv_heads). The `h1c` kernels (one
// head a block, CL) launch a (row, head)'s splits as one thread-block cluster along z and
// merge them through distributed shared memory instead (mla_cluster_merge: the same bits,
// no partials through global memory, no counter).

// Splits of a row at most (mla_layout.rs: MLA_MAX_SPLITS, mla_row_splits).
#define MLA_MAX_SPLITS 32

// Chunks per split of a row of nk keys with at most `cap` splits of at
// least `min_chunks` chunks (mla_layout.rs: MlaSplits::row; the FMA form's
// rule is (MLA_MAX_SPLITS, 1)).
__device__ __forceinline__ int mla_split_tiles(int nk, int chunk, int cap, int min_chunks) {
    int chunks = (nk + chunk - 1) / chunk;
    return max(max(1, min_chunks), (chunks + cap - 1) / cap);
}

// Before the wait on the previous kernel: the cache rows of row r's first
// chunk of the block's split asked of L2 (a prefetch reads nothing into registers, and the
// key lists were uploaded before the forward's first kernel).
template <typename T>
__device__ void mla_prefetch_chunk(const T* pool, const int* base, const int* prefix, const int* extra_off,
                                   const int* extra, int d, int chunk, long pool_offset, int r, int cap,
                                   int min_chunks) {
    MlaRowKeys rk = mla_row_keys(base, prefix, extra_off, r);
    int start = (int)blockIdx.z * mla_split_tiles(rk.n, chunk, cap, min_chunks) * chunk, n = min(rk.n - start, chunk);
    int lines = (d * (int)sizeof(T) + 127) / 128;
    for (int i = threadIdx.x; i < n * lines; i += blockDim.x) {
        long key = rk.entry(extra, start + i / lines);
        prefetch_l2((const char*)(pool + pool_offset + key * d) + (i % lines) * 128);
    }
}

// The largest cluster the merge takes (the portable cluster size; mla_forms.rs:
// MLA_CLUSTER_SPLITS).
#define MLA_CLUSTER_SPLITS 8

// The merge of a (row, head)'s splits when they are the blocks of one cluster
// along z (split s = rank s), each holding its unnormalised output (os, lora
// floats) and (max, sum) in shared memory: mla_merge_t's arithmetic for one
// head (m the max of the maxima, l = sum_s l_s e^(m_s - m) and o[d] = (sum_s
// po_s[d] e^(m_s - m)) / l, both sums in split order), so the same bits,
// with the partials read from the other blocks' shared memory. Each block
// stores its share of the lora outputs; on return every share is stored and
// visible to the cluster. Uses splits + 1 floats of `scratch`.
template <typename T>
__device__ void mla_cluster_merge(T* o, const float* os, const float* run_m, const float* run_l, int lora, int splits,
                                  float* scratch) {
    int lane = threadIdx.x & 31;
    cluster_sync();  // every split's partials are final (this block's threads' too)
    if (threadIdx.x < 32) {
        bool in = lane < splits;
        float ms = in ? ld_cluster(run_m, lane) : 0.f, ls = in ? ld_cluster(run_l, lane) : 0.f;
        float v = in ? ms : -INFINITY;
#pragma unroll
        for (int o2 = 16; o2 > 0; o2 >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o2));
        float m = fmaxf(-INFINITY, v);
        float e = expf(ms - m), l = 0.f;
        if (in) scratch[lane] = e;
        for (int t = 0; t < splits; t++) {
            float lt = __shfl_sync(0xffffffffu, ls, t), et = __shfl_sync(0xffffffffu, e, t);
            l += lt * et;
        }
        if (lane == 0) scratch[splits] = l;
    }
    __syncthreads();
    int s = blockIdx.z, per = (lora + splits - 1) / splits;
    float l = scratch[splits];
    for (int d = s * per + threadIdx.x; d < min(lora, (s + 1) * per); d += blockDim.x) {
        // Every split's value asked for before the first is added.
        float p[MLA_CLUSTER_SPLITS];
#pragma unroll
        for (int s2 = 0; s2 < MLA_CLUSTER_SPLITS; s2++)
            if (s2 < splits) p[s2] = ld_cluster(&os[d], s2);
        float acc = 0.f;
#pragma unroll
        for (int s2 = 0; s2 < MLA_CLUSTER_SPLITS; s2++)
            if (s2 < splits) acc += p[s2] * scratch[s2];
        st(&o[d], acc / l);
    }
    cluster_sync();  // no block leaves while another reads its partials; o is stored
}

template <typename T, int H, bool UV, bool CL>
__device__ void mla_attention(T* out, float* part_out, float* part_ml, int* counters, const T* qcat, const T* pool,
                              const int* base, const int* prefix, const int* extra_off, const int* extra, int heads,
                              int lora, int rd, float scale, int chunk, long pool_offset, int row0, int mma_from,
                              const T* w_uv, T* uv_out, int uv_n, int uv_ys) {
    extern __shared__ float smem[];
    __shared__ float run_m[H], run_l[H], rescale[H];
    constexpr int VEC = 16 / sizeof(T);
    int d = lora + rd;
    // Row r of the batch; its partials in the scratch at the launch's own row rl.
    int rl = blockIdx.x, r = row0 + rl, g = blockIdx.y, s = blockIdx.z, splits = gridDim.z;
    int h0 = g * H, nh = min(H, heads - h0);
    const T* kp = pool + pool_offset;
    MlaRowKeys rk = mla_row_keys(base, prefix, extra_off, r);
    // A row of at least mma_from keys is the tensor-core launch's (entered
    // before this: the launch's end still implies the kernel's before).
    if (rk.n >= mma_from) return;
    int tiles = mla_split_tiles(rk.n, chunk, MLA_MAX_SPLITS, 1);
    int start = s * tiles * chunk, end = min(rk.n, start + tiles * chunk);
    float* qs = smem;
    float* ps = qs + H * d;
    float* os = ps + H * chunk;
    T* ks = (T*)(os + H * lora);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    size_t first = ((size_t)rl * heads + h0) * splits;  // slot of (rl, h0, split 0)
    if (end <= start) {
        if constexpr (CL) {
            // Nothing seen: a zero output and (max, sum) = (-inf, 0), in
            // shared memory for the cluster's merge.
            for (int i = threadIdx.x; i < nh * lora; i += blockDim.x) os[i] = 0.f;
            if (threadIdx.x < H) {
                run_m[threadIdx.x] = -INFINITY;
                run_l[threadIdx.x] = 0.f;
            }
        } else {
            mla_empty_split(part_out, part_ml, first, nh, lora, splits, s);
        }
    } else {
        bool vec = d % VEC == 0;
        int per = vec ? d / VEC : d;
        // The query heads in f32; with 16-byte slices each slice's values as
        // VEC / 4 float4 planes [head][plane][slice], so that the lanes of a
        // warp read consecutive float4s. Staged in the first chunk, after its
        // cache rows' loads are out (the query's round trip under theirs),
        // with the running output and (max, sum) set up.
        const T* qh = qcat + ((size_t)r * heads + h0) * d;
        auto prepare = [&]() {
            if (vec) {
                constexpr int PLANES = VEC / 4;
                for (int i = threadIdx.x; i < nh * per; i += blockDim.x) {
                    int hh = i / per, c = i % per;
                    float v[VEC];
                    ld16(qh + (size_t)hh * d + c * VEC, v);
#pragma unroll
                    for (int pl = 0; pl < PLANES; pl++)
                        ((float4*)qs)[(hh * PLANES + pl) * per + c] =
                            make_float4(v[4 * pl], v[4 * pl + 1], v[4 * pl + 2], v[4 * pl + 3]);
                }
            } else {
                for (int i = threadIdx.x; i < nh * d; i += blockDim.x) qs[i] = ld(&qh[i]);
            }
            for (int i = threadIdx.x; i < nh * lora; i += blockDim.x) os[i] = 0.f;
            if (threadIdx.x < H) {
                run_m[threadIdx.x] = -INFINITY;
                run_l[threadIdx.x] = 0.f;
            }
        };
        for (int t0 = start; t0 < end; t0 += chunk) {
            int n = min(chunk, end - t0);
            auto row_of = [&](int j) { return kp + (size_t)rk.entry(extra, t0 + j) * d; };
            // The chunk's cache rows: warp w copies keys w, w + nw, ... (a
            // row's address found once); the first MLA_STAGE_KEYS keys of a
            // warp have all their 16-byte slices (up to MLA_STAGE_SLICES a
            // lane) loaded before any is stored.
            int staged = 0;
            bool stage = vec && per <= 32 * MLA_STAGE_SLICES;
            uint4 v[MLA_STAGE_KEYS][MLA_STAGE_SLICES];
            if (stage) {
#pragma unroll
                for (int u = 0; u < MLA_STAGE_KEYS; u++) {
                    int j = warp + u * nw;
                    if (j >= n) continue;
                    const uint4* row = (const uint4*)row_of(j);
#pragma unroll
                    for (int sl = 0; sl < MLA_STAGE_SLICES; sl++)
                        if (lane + 32 * sl < per) v[u][sl] = row[lane + 32 * sl];
                }
            }
            if (t0 == start) prepare();
            if (stage) {
#pragma unroll
                for (int u = 0; u < MLA_STAGE_KEYS; u++) {
                    int j = warp + u * nw;
                    if (j >= n) continue;
                    uint4* dst = (uint4*)(ks + (size_t)j * d);
#pragma unroll
                    for (int sl = 0; sl < MLA_STAGE_SLICES; sl++)
                        if (lane + 32 * sl < per) dst[lane + 32 * sl] = v[u][sl];
                }
                staged = MLA_STAGE_KEYS * nw;
            }
            for (int j = staged + warp; j < n; j += nw) {
                const T* row = row_of(j);
                T* dst = ks + (size_t)j * d;
                if (vec) {
#pragma unroll 5
                    for (int c = lane; c < per; c += 32) ((uint4*)dst)[c] = ((const uint4*)row)[c];
                } else {
                    for (int c = lane; c < d; c += 32) dst[c] = row[c];
                }
            }
            __syncthreads();
            for (int j = warp; j < n; j += nw) {
                // The heads' sums side by side (independent chains; each the
                // same order: the lane's slices ascending, a slice's values in
                // order, then the xor tree).
                const T* key = ks + (size_t)j * d;
                float acc[H];
#pragma unroll
                for (int hh = 0; hh < H; hh++) acc[hh] = 0.f;
                if (vec) {
                    constexpr int PLANES = VEC / 4;
#pragma unroll 3
                    for (int c = lane; c < per; c += 32) {
                        float kv[VEC];
                        ld16(key + c * VEC, kv);
#pragma unroll
                        for (int hh = 0; hh < H; hh++) {
                            if (hh >= nh) continue;
#pragma unroll
                            for (int pl = 0; pl < PLANES; pl++) {
                                float4 qv = ((const float4*)qs)[(hh * PLANES + pl) * per + c];
                                acc[hh] = fmaf(qv.x, kv[4 * pl], acc[hh]);
                                acc[hh] = fmaf(qv.y, kv[4 * pl + 1], acc[hh]);
                                acc[hh] = fmaf(qv.z, kv[4 * pl + 2], acc[hh]);
                                acc[hh] = fmaf(qv.w, kv[4 * pl + 3], acc[hh]);
                            }
                        }
                    }
                } else {
#pragma unroll 6
                    for (int c = lane; c < d; c += 32) {
                        float kv = ld(&key[c]);
#pragma unroll
                        for (int hh = 0; hh < H; hh++)
                            if (hh < nh) acc[hh] = fmaf(qs[hh * d + c], kv, acc[hh]);
                    }
                }
#pragma unroll
                for (int hh = 0; hh < H; hh++) {
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1) acc[hh] += __shfl_xor_sync(0xffffffffu, acc[hh], o);
                    if (lane == 0 && hh < nh) ps[hh * chunk + j] = acc[hh] * scale;
                }
            }
            __syncthreads();
            for (int hh = warp; hh < nh; hh += nw) {
                float* p = ps + hh * chunk;
                float mx = -INFINITY;
                for (int j = lane; j < n; j += 32) mx = fmaxf(mx, p[j]);
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
                float m = fmaxf(run_m[hh], mx);
                float sum = 0.f;
                for (int j = lane; j < n; j += 32) {
                    float e = expf(p[j] - m);
                    p[j] = e;
                    sum += e;
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
                __syncwarp();
                if (lane == 0) {
                    float a = expf(run_m[hh] - m);
                    rescale[hh] = a;
                    run_l[hh] = run_l[hh] * a + sum;
                    run_m[hh] = m;
                }
            }
            __syncthreads();
            // Thread t sums columns 2t and 2t + 1 (when lora is even) over
            // the chunk's keys in order: each column's sum as with one per
            // thread.
            int pairs = vec && lora % 2 == 0 ? lora / 2 : 0;
            for (int cp = threadIdx.x; cp < pairs; cp += blockDim.x) {
                float a0[H], a1[H];
#pragma unroll
                for (int hh = 0; hh < H; hh++) a0[hh] = a1[hh] = 0.f;
#pragma unroll 8
                for (int j = 0; j < n; j++) {
                    float v0, v1;
                    ld2(ks + (size_t)j * d + 2 * cp, v0, v1);
#pragma unroll
                    for (int hh = 0; hh < H; hh++) {
                        float pj = ps[hh * chunk + j];
                        a0[hh] = fmaf(pj, v0, a0[hh]);
                        a1[hh] = fmaf(pj, v1, a1[hh]);
                    }
                }
                for (int hh = 0; hh < nh; hh++) {
                    float* o = os + hh * lora + 2 * cp;
                    o[0] = o[0] * rescale[hh] + a0[hh];
                    o[1] = o[1] * rescale[hh] + a1[hh];
                }
            }
            for (int c = pairs > 0 ? lora : threadIdx.x; c < lora; c += blockDim.x) {
                float acc[H];
#pragma unroll
                for (int hh = 0; hh < H; hh++) acc[hh] = 0.f;
#pragma unroll 8
                for (int j = 0; j < n; j++) {
                    float v = ld(&ks[(size_t)j * d + c]);
#pragma unroll
                    for (int hh = 0; hh < H; hh++) acc[hh] = fmaf(ps[hh * chunk + j], v, acc[hh]);
                }
                for (int hh = 0; hh < nh; hh++) os[hh * lora + c] = os[hh * lora + c] * rescale[hh] + acc[hh];
            }
            __syncthreads();  // the chunk's keys, scores and factors are no longer read
        }
        if (!CL && threadIdx.x < nh) {
            size_t slot = first + (size_t)threadIdx.x * splits + s;
            part_ml[2 * slot] = run_m[threadIdx.x];
            part_ml[2 * slot + 1] = run_l[threadIdx.x];
        }
        for (int i = threadIdx.x; !CL && i < nh * lora; i += blockDim.x)
            part_out[(first + (size_t)(i / lora) * splits + s) * lora + i % lora] = os[i];
    }
    T* o = out + ((size_t)r * heads + h0) * lora;
    bool merged = true;
    if constexpr (CL) {
        static_assert(H == 1, "the cluster merge takes one head a block");
        mla_cluster_merge(o, os, run_m, run_l, lora, splits, ps);
    } else {
        merged = mla_finish_split(o, part_out + first * lora, part_ml + 2 * first, counters, nh, lora, splits, smem,
                                  MLA_HEADS);
    }
    // The `_uv` forms: the merging block (with CL every block of the cluster,
    // each its share of the outputs) applies W_UV to its heads (uv_out [rows,
    // heads, uv_n], rows uv_ys apart).
    if (UV && merged)
        mla_uv_heads(uv_out + (size_t)r * uv_ys + (size_t)h0 * uv_n, uv_n, o, w_uv + (size_t)h0 * uv_n * lora, nh, uv_n,
                     lora, CL ? s : 0, CL ? splits : 1);
}

#define P_MLA_ATT(T) (T* out, float* part_out, float* part_ml, int* counters, const T* qcat, const T* pool, const int* base, const int* prefix, const int* extra_off, const int* extra, int heads, int lora, int rd, float scale, int chunk, long pool_offset, int row0, int mma_from)
#define A_MLA_ATT (out, part_out, part_ml, counters, qcat, pool, base, prefix, extra_off, extra, heads, lora, rd, scale, chunk, pool_offset, row0, mma_from, nullptr, nullptr, 0, 0)
#define MLA_H4(T) <T, MLA_HEADS, false, false>
#define MLA_H1(T) <T, 1, false, false>
#define MLA_H1C(T) <T, 1, false, true>
// The kernels enter as programmatic dependents after their prefetch.
#define MLA_PREFETCH(T) if (mla_row_keys(base, prefix, extra_off, row0 + blockIdx.x).n < mma_from) mla_prefetch_chunk<T>(pool, base, prefix, extra_off, extra, lora + rd, chunk, pool_offset, row0 + blockIdx.x, MLA_MAX_SPLITS, 1)
#define MLA_ENTER(T) MLA_PREFETCH(T); pdl_enter()
KERNELS_ENTERED(mla_attention, mla_attention, MLA_H4, P_MLA_ATT, A_MLA_ATT, MLA_ENTER)
KERNELS_ENTERED(mla_attention_h1, mla_attention, MLA_H1, P_MLA_ATT, A_MLA_ATT, MLA_ENTER)
KERNELS_ENTERED(mla_attention_h1c, mla_attention, MLA_H1C, P_MLA_ATT, A_MLA_ATT, MLA_ENTER)

// One head a block, then W_UV by the block that merges a head (w_uv [heads,
// uv_n, lora]): the latent attention and mla_head_linear's launch after it in
// one, the same bits. Its blocks of the first row also ask L2 for their head's
// W_UV rows before the wait.
#define P_MLA_ATT_UV(T) (T* out, float* part_out, float* part_ml, int* counters, const T* qcat, const T* pool, const int* base, const int* prefix, const int* extra_off, const int* extra, int heads, int lora, int rd, float scale, int chunk, long pool_offset, int row0, int mma_from, const T* w_uv, T* uv_out, int uv_n, int uv_ys)
#define A_MLA_ATT_UV (out, part_out, part_ml, counters, qcat, pool, base, prefix, extra_off, extra, heads, lora, rd, scale, chunk, pool_offset, row0, mma_from, w_uv, uv_out, uv_n, uv_ys)
#define MLA_H1_UV(T) <T, 1, true, false>
#define MLA_H1C_UV(T) <T, 1, true, true>
#define MLA_UV_ENTER(T) MLA_PREFETCH(T); mla_prefetch_uv<T>(w_uv, uv_n, lora); pdl_enter()
KERNELS_ENTERED(mla_attention_h1_uv, mla_attention, MLA_H1_UV, P_MLA_ATT_UV, A_MLA_ATT_UV, MLA_UV_ENTER)
KERNELS_ENTERED(mla_attention_h1c_uv, mla_attention, MLA_H1C_UV, P_MLA_ATT_UV, A_MLA_ATT_UV, MLA_UV_ENTER)
