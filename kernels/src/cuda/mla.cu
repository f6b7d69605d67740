
// ---------------------------------------------------------------------------
// Multi-head latent attention (DeepSeek V2/V3, Kimi) in the absorbed form the
// serving engines use. A layer's cache entry is one row of D = kv_lora + rope
// values: the normalised compressed latent c and the rotated shared RoPE key.
// Per query head: q_lat = W_UK^T q_nope (kv_lora wide), score_e =
// (q_lat . c_e + q_pe . kpe_e) * scale, o_lat = sum_e p_e c_e, and the head's
// output W_UV o_lat. The query row handed to the attention is [q_lat | q_pe]
// (D wide), so the score is one D-wide dot product with the cache row.

// The decoupled RoPE of `rd` values from src into dst at position pos (the
// CPU engine's MlaAttention::rope): de-interleaved first when `interleave`
// (pairs (2i, 2i+1) -> (i, i + rd/2)), then rotate_half with cos and sin
// times `factor` (YaRN's attention factor). dst may not alias src.
template <typename T>
__device__ __forceinline__ void mla_rope_part(T* dst, const T* src, float pos, const float* inv_freq, int rd,
                                              int interleave, float factor) {
    int half = rd / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float a = interleave ? ld(&src[2 * i]) : ld(&src[i]);
        float b = interleave ? ld(&src[2 * i + 1]) : ld(&src[i + half]);
        float s, c;
        sincosf(pos * inv_freq[i], &s, &c);
        c *= factor;
        s *= factor;
        st(&dst[i], a * c - b * s);
        st(&dst[i + half], b * c + a * s);
    }
}

// Block (r, h < heads): the rotated q_pe of head h into qcat[r, h, lora..D].
// Block (r, heads): the cache entry of row r: RMSNorm(latent) * kv_norm, then
// the rotated RoPE key, at pool row entry[r] (the layer's pool starts
// pool_offset elements in). q rows are q_stride apart (heads x (nope + rd)
// each), compressed rows (lora + rd) ckv_stride apart from ckv_offset.
// grid: (rows, heads + 1).
template <typename T>
__device__ void mla_prep(T* qcat, T* pool, const T* q, const T* ckv, long ckv_offset, const T* kv_norm, const int* positions,
                         const float* inv_freq, const int* entry, long pool_offset, int heads, int q_stride,
                         int ckv_stride, int nope, int rd, int lora, int interleave, float factor, float eps) {
    int r = blockIdx.x, h = blockIdx.y, d = lora + rd;
    float pos = (float)positions[r];
    if (h < heads) {
        const T* src = q + (size_t)r * q_stride + (size_t)h * (nope + rd) + nope;
        mla_rope_part(qcat + ((size_t)r * heads + h) * d + lora, src, pos, inv_freq, rd, interleave, factor);
        return;
    }
    const T* c = ckv + ckv_offset + (size_t)r * ckv_stride;
    T* e = pool + pool_offset + (size_t)entry[r] * d;
    float ss = 0.f;
    for (int i = threadIdx.x; i < lora; i += blockDim.x) {
        float a = ld(&c[i]);
        ss += a * a;
    }
    float inv = rsqrtf(block_sum(ss) / (float)lora + eps);
    for (int i = threadIdx.x; i < lora; i += blockDim.x) st(&e[i], ld(&c[i]) * inv * ld(&kv_norm[i]));
    mla_rope_part(e + lora, c + lora, pos, inv_freq, rd, interleave, factor);
}

#define P_MLA_PREP(T) (T* qcat, T* pool, const T* q, const T* ckv, long ckv_offset, const T* kv_norm, const int* positions, const float* inv_freq, const int* entry, long pool_offset, int heads, int q_stride, int ckv_stride, int nope, int rd, int lora, int interleave, float factor, float eps)
BOTH(mla_prep, P_MLA_PREP, (qcat, pool, q, ckv, ckv_offset, kv_norm, positions, inv_freq, entry, pool_offset, heads, q_stride, ckv_stride, nope, rd, lora, interleave, factor, eps))

// a . b over k elements by one warp, the same order for any caller: with
// `vec`, lane l sums the 16-byte slices l, l + 32, ... (each slice's
// elements in order), else the elements l, l + 32, ...; then a fixed xor tree.
// Every lane gets the sum.
template <typename T>
__device__ __forceinline__ float warp_dot(const T* a, const T* b, int k, bool vec, int lane) {
    constexpr int VEC = 16 / sizeof(T);
    float acc = 0.f;
    // Unrolled so that a lane's loads are in flight together (the sums are
    // the same: one chain in order).
    if (vec) {
#pragma unroll 8
        for (int i = lane * VEC; i < k; i += 32 * VEC) {
            float av[VEC], bv[VEC];
            ld16(a + i, av);
            ld16(b + i, bv);
#pragma unroll
            for (int j = 0; j < VEC; j++) acc = fmaf(av[j], bv[j], acc);
        }
    } else {
#pragma unroll 8
        for (int i = lane; i < k; i += 32) acc = fmaf(ld(&a[i]), ld(&b[i]), acc);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    return acc;
}

// Per-head products (the absorbed W_UK^T and W_UV): y[r, h, c] = sum_j
// w[h, c, j] x[r, h, j] for c < n, j < k; x rows xs apart with heads xh
// apart, y rows ys apart with heads yh apart. One warp per (head, c) over
// every row (warp_dot: a row's sums do not depend on the others).
// `vec`: k, xs and xh are multiples of 16 bytes (16-byte loads).
template <typename T>
__device__ void mla_head_linear(T* y, const T* x, const T* w, int rows, int heads, int n, int k, int xs, int xh,
                                int ys, int yh, int vec) {
    int gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (gw >= heads * n) return;
    int h = gw / n, c = gw % n;
    const T* wr = w + ((size_t)h * n + c) * k;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        float acc = warp_dot(wr, x + (size_t)r * xs + (size_t)h * xh, k, vec != 0, lane);
        if (lane == 0) st(&y[(size_t)r * ys + (size_t)h * yh + c], acc);
    }
}

#define P_MLA_HL(T) (T* y, const T* x, const T* w, int rows, int heads, int n, int k, int xs, int xh, int ys, int yh, int vec)
BOTH(mla_head_linear, P_MLA_HL, (y, x, w, rows, heads, n, k, xs, xh, ys, yh, vec))

// Heads per block of the latent attention.
#define MLA_HEADS 4
// Keys per warp, and 16-byte slices per lane of each, that the latent
// attention loads before storing any (a bf16 chunk of 32 keys of 576 values
// over 8 warps: 4 keys of 72 slices).
#define MLA_STAGE_KEYS 4
#define MLA_STAGE_SLICES 3

// attention_merge for the nh heads of a block at once (the same arithmetic:
// m the max of the splits' maxima, l = sum_s l_s e^(m_s - m) and o[d] =
// (sum_s po_s[d] e^(m_s - m)) / l, both sums in split order): warp h reads
// head h's (max, sum) pairs with lanes over splits and its lane 0 sums them
// in order from registers; then thread (h, d) sums its outputs. Heads' parts
// are splits apart: po [nh][splits][lora], ml [nh][splits][2]. Uses
// hcap x (splits + 1) floats of `scratch` (shared memory; nh <= hcap).
template <typename T>
__device__ void mla_merge_t(T* o, const float* po, const float* ml, int nh, int lora, int splits, float* scratch,
                            int hcap = MLA_HEADS) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    float* wgt = scratch;                  // [hcap][splits]: e^(m_s - m)
    float* inv = scratch + hcap * splits;  // [hcap]: l
    __syncthreads();  // the block's own partials are no longer read from scratch
    for (int hh = warp; hh < nh; hh += nw) {
        const float* mh = ml + (size_t)hh * splits * 2;
        float m = -INFINITY;
        for (int s0 = 0; s0 < splits; s0 += 32) {
            float v = s0 + lane < splits ? __ldcg(&mh[2 * (s0 + lane)]) : -INFINITY;
#pragma unroll
            for (int o2 = 16; o2 > 0; o2 >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o2));
            m = fmaxf(m, v);
        }
        float l = 0.f;
        for (int s0 = 0; s0 < splits; s0 += 32) {
            int sl = s0 + lane;
            float ms = sl < splits ? __ldcg(&mh[2 * sl]) : 0.f;
            float ls = sl < splits ? __ldcg(&mh[2 * sl + 1]) : 0.f;
            float e = expf(ms - m);
            if (sl < splits) wgt[hh * splits + sl] = e;
            for (int t = 0; t < 32 && s0 + t < splits; t++) {
                float lt = __shfl_sync(0xffffffffu, ls, t), et = __shfl_sync(0xffffffffu, e, t);
                l += lt * et;
            }
        }
        if (lane == 0) inv[hh] = l;
    }
    __syncthreads();
    // MERGE_OUTS outputs per thread at a time, their split loads in flight
    // together (each output's sum is still in split order).
    constexpr int MERGE_OUTS = 4;
    int total = nh * lora;
    for (int i0 = threadIdx.x; i0 < total; i0 += MERGE_OUTS * blockDim.x) {
        float acc[MERGE_OUTS];
        const float* p[MERGE_OUTS];
        const float* w[MERGE_OUTS];
#pragma unroll
        for (int u = 0; u < MERGE_OUTS; u++) {
            int i = min(i0 + u * (int)blockDim.x, total - 1), hh = i / lora;
            acc[u] = 0.f;
            p[u] = po + (size_t)hh * splits * lora + i % lora;
            w[u] = wgt + hh * splits;
        }
#pragma unroll 4
        for (int s2 = 0; s2 < splits; s2++) {
#pragma unroll
            for (int u = 0; u < MERGE_OUTS; u++) acc[u] += __ldcg(&p[u][(size_t)s2 * lora]) * w[u][s2];
        }
#pragma unroll
        for (int u = 0; u < MERGE_OUTS; u++) {
            int i = i0 + u * (int)blockDim.x;
            if (i < total) st(&o[(size_t)(i / lora) * lora + i % lora], acc[u] / inv[i / lora]);
        }
    }
}

// Split-K latent attention. Block (row r, head group g, split s) takes the
// keys [s * chunk, (s + 1) * chunk) of row r's key list (as the attention
// kernel: base[r] + j for j < prefix[r], then base[r] + extra[..]) for the
// H heads from g * H (H = MLA_HEADS, or 1 for launches of few blocks: a
// head's sums are the same for any H): the chunk's cache rows are copied to
// shared memory once (a warp per key); warp w scores keys w, w + 8, ...
// against each head (lane l the 16-byte slices l, l + 32, ... of the D
// values, then the xor tree), warp h takes head h's max and sum over the
// chunk (keys in order, lane partials, xor tree), thread t sums p_e c_e[d]
// for the columns d = 2t, 2t + 1 over the chunk's keys in order. Each block writes its unnormalised partial output
// and (max, sum); the last block of (row, group) merges the splits in split
// order (attention_merge). A row's result depends only on its own key list.
// A launch covers the rows row0 .. row0 + gridDim.x (the scratch holds that
// many rows' partials). Dynamic shared memory: H x D + H x chunk floats,
// chunk x D of T.
template <typename T, int H>
__device__ void mla_attention(T* out, float* part_out, float* part_ml, int* counters, const T* qcat, const T* pool,
                              const int* base, const int* prefix, const int* extra_off, const int* extra, int heads,
                              int lora, int rd, float scale, int chunk, long pool_offset, int row0) {
    extern __shared__ float smem[];
    __shared__ int last;
    constexpr int VEC = 16 / sizeof(T);
    int d = lora + rd;
    // Row r of the batch; its partials in the scratch at the launch's own row rl.
    int rl = blockIdx.x, r = row0 + rl, g = blockIdx.y, s = blockIdx.z, splits = gridDim.z;
    int h0 = g * H, nh = min(H, heads - h0);
    const T* kp = pool + pool_offset;
    int np = prefix[r], e0 = extra_off[r];
    int nk = np + extra_off[r + 1] - e0;
    int start = s * chunk, n = min(nk, start + chunk) - start;
    float* qs = smem;
    float* ps = smem + H * d;
    T* ks = (T*)(ps + H * chunk);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    size_t first = ((size_t)rl * heads + h0) * splits;  // slot of (rl, h0, split 0)
    if (n <= 0) {
        for (int i = threadIdx.x; i < nh * lora; i += blockDim.x)
            part_out[(first + (size_t)(i / lora) * splits + s) * lora + i % lora] = 0.f;
        if (threadIdx.x < nh) {
            size_t slot = first + (size_t)threadIdx.x * splits + s;
            part_ml[2 * slot] = -INFINITY;
            part_ml[2 * slot + 1] = 0.f;
        }
    } else {
        bool vec = d % VEC == 0;
        int per = vec ? d / VEC : d;
        // The chunk's cache rows: warp w copies keys w, w + nw, ... (a row's
        // address found once). The first MLA_STAGE_KEYS keys of a warp have
        // all their 16-byte slices (up to MLA_STAGE_SLICES a lane) loaded
        // before any is stored, so that one memory latency covers them.
        long brow = base[r];
        auto row_of = [&](int j) {
            int jj = start + j;
            return kp + (size_t)(brow + (jj < np ? jj : extra[e0 + jj - np])) * d;
        };
        int staged = 0;
        if (vec && per <= 32 * MLA_STAGE_SLICES) {
            uint4 v[MLA_STAGE_KEYS][MLA_STAGE_SLICES];
#pragma unroll
            for (int u = 0; u < MLA_STAGE_KEYS; u++) {
                int j = warp + u * nw;
                if (j >= n) continue;
                const uint4* row = (const uint4*)row_of(j);
#pragma unroll
                for (int sl = 0; sl < MLA_STAGE_SLICES; sl++)
                    if (lane + 32 * sl < per) v[u][sl] = row[lane + 32 * sl];
            }
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
        // The query heads in f32; with 16-byte slices each slice's values as
        // VEC / 4 float4 planes [head][plane][slice], so that the lanes of a
        // warp read consecutive float4s.
        const T* qh = qcat + ((size_t)r * heads + h0) * d;
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
        __syncthreads();
        for (int j = warp; j < n; j += nw) {
            // The heads' sums side by side (independent chains; each the same
            // order: the lane's slices ascending, a slice's values in order,
            // then the xor tree).
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
            float sum = 0.f;
            for (int j = lane; j < n; j += 32) {
                float e = expf(p[j] - mx);
                p[j] = e;
                sum += e;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            if (lane == 0) {
                size_t slot = first + (size_t)hh * splits + s;
                part_ml[2 * slot] = mx;
                part_ml[2 * slot + 1] = sum;
            }
        }
        __syncthreads();
        // Thread t sums columns 2t and 2t + 1 (when lora is even) over the
        // chunk's keys in order: each column's sum as with one per thread.
        int pairs = lora % 2 == 0 ? lora / 2 : 0;
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
                float* po = part_out + (first + (size_t)hh * splits + s) * lora + 2 * cp;
                po[0] = a0[hh];
                po[1] = a1[hh];
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
            for (int hh = 0; hh < nh; hh++) part_out[(first + (size_t)hh * splits + s) * lora + c] = acc[hh];
        }
    }
    __threadfence();
    __syncthreads();
    int pair = rl * gridDim.y + g;
    if (threadIdx.x == 0) last = atomicAdd(&counters[pair], 1) == splits - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    mla_merge_t(out + ((size_t)r * heads + h0) * lora, part_out + first * lora, part_ml + 2 * first, nh, lora, splits,
              smem);
    if (threadIdx.x == 0) counters[pair] = 0;
}

#define P_MLA_ATT(T) (T* out, float* part_out, float* part_ml, int* counters, const T* qcat, const T* pool, const int* base, const int* prefix, const int* extra_off, const int* extra, int heads, int lora, int rd, float scale, int chunk, long pool_offset, int row0)
#define A_MLA_ATT (out, part_out, part_ml, counters, qcat, pool, base, prefix, extra_off, extra, heads, lora, rd, scale, chunk, pool_offset, row0)
#define MLA_H4(T) <T, MLA_HEADS>
#define MLA_H1(T) <T, 1>
KERNELS(mla_attention, mla_attention, MLA_H4, P_MLA_ATT, A_MLA_ATT)
KERNELS(mla_attention_h1, mla_attention, MLA_H1, P_MLA_ATT, A_MLA_ATT)
