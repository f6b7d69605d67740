
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
// times `factor` (YaRN's attention factor). dst may not alias src. In two
// steps: pair i's source values and frequency (mla_rope_load), then its two
// outputs (mla_rope_store).
template <typename T>
__device__ __forceinline__ void mla_rope_load(const T* src, const float* inv_freq, int i, int rd, int interleave,
                                              float& a, float& b, float& f) {
    int half = rd / 2;
    a = interleave ? ld(&src[2 * i]) : ld(&src[i]);
    b = interleave ? ld(&src[2 * i + 1]) : ld(&src[i + half]);
    f = inv_freq[i];
}
template <typename T>
__device__ __forceinline__ void mla_rope_store(T* dst, int i, float a, float b, float f, float pos, int rd,
                                               float factor) {
    int half = rd / 2;
    float s, c;
    sincosf(pos * f, &s, &c);
    c *= factor;
    s *= factor;
    st(&dst[i], a * c - b * s);
    st(&dst[i + half], b * c + a * s);
}
template <typename T>
__device__ __forceinline__ void mla_rope_part(T* dst, const T* src, float pos, const float* inv_freq, int rd,
                                              int interleave, float factor) {
    for (int i = threadIdx.x; i < rd / 2; i += blockDim.x) {
        float a, b, f;
        mla_rope_load(src, inv_freq, i, rd, interleave, a, b, f);
        mla_rope_store(dst, i, a, b, f, pos, rd, factor);
    }
}

// Latent values a thread of the cache entry's block holds (mla_prep_at: 512
// over 128 threads).
#define MLA_ENTRY_VALUES 4

// Before the wait on the previous kernel, block h of mla_prep_at asks L2 for
// the weights it will read (no kernel writes them): the RoPE frequencies,
// and for the cache entry's block the latent's norm weights.
template <typename T>
__device__ void mla_prep_prefetch(int h, const T* kv_norm, const float* inv_freq, int heads, int rd, int lora) {
    prefetch_l2_span(inv_freq, (size_t)(rd / 2) * sizeof(float), threadIdx.x, blockDim.x);
    if (h == heads) prefetch_l2_span(kv_norm, (size_t)lora * sizeof(T), threadIdx.x, blockDim.x);
}

// Block (r, h < heads): the rotated q_pe of head h into qcat[r, h, lora..D].
// Block (r, heads): the cache entry of row r: RMSNorm(latent) * kv_norm, then
// the rotated RoPE key, at pool row entry[r] (the layer's pool starts
// pool_offset elements in); the latent, its norm weights and the key's source
// pair are loaded together (when they fit MLA_ENTRY_VALUES a thread and a
// pair a thread; the same arithmetic either way). q rows are q_stride
// apart (heads x (nope + rd) each), compressed rows (lora + rd) ckv_stride
// apart from ckv_offset. grid: (rows, heads + 1).
template <typename T>
__device__ void mla_prep_at(int r, int h, T* qcat, T* pool, const T* q, const T* ckv, long ckv_offset, const T* kv_norm,
                            const int* positions, const float* inv_freq, const int* entry, long pool_offset, int heads,
                            int q_stride, int ckv_stride, int nope, int rd, int lora, int interleave, float factor,
                            float eps) {
    int d = lora + rd;
    float pos = (float)positions[r];
    if (h < heads) {
        const T* src = q + (size_t)r * q_stride + (size_t)h * (nope + rd) + nope;
        mla_rope_part(qcat + ((size_t)r * heads + h) * d + lora, src, pos, inv_freq, rd, interleave, factor);
        return;
    }
    const T* c = ckv + ckv_offset + (size_t)r * ckv_stride;
    T* e = pool + pool_offset + (size_t)entry[r] * d;
    if (lora <= MLA_ENTRY_VALUES * (int)blockDim.x && rd / 2 <= (int)blockDim.x) {
        float cv[MLA_ENTRY_VALUES], wv[MLA_ENTRY_VALUES], ra = 0.f, rb = 0.f, rf = 0.f;
        bool pair = (int)threadIdx.x < rd / 2;
        if (pair) mla_rope_load(c + lora, inv_freq, threadIdx.x, rd, interleave, ra, rb, rf);
#pragma unroll
        for (int u = 0; u < MLA_ENTRY_VALUES; u++) {
            int i = threadIdx.x + u * blockDim.x;
            if (i < lora) {
                cv[u] = ld(&c[i]);
                wv[u] = ld(&kv_norm[i]);
            }
        }
        float ss = 0.f;
#pragma unroll
        for (int u = 0; u < MLA_ENTRY_VALUES; u++)
            if (threadIdx.x + u * blockDim.x < lora) ss += cv[u] * cv[u];
        float inv = rsqrtf(block_sum(ss) / (float)lora + eps);
#pragma unroll
        for (int u = 0; u < MLA_ENTRY_VALUES; u++) {
            int i = threadIdx.x + u * blockDim.x;
            if (i < lora) st(&e[i], cv[u] * inv * wv[u]);
        }
        if (pair) mla_rope_store(e + lora, threadIdx.x, ra, rb, rf, pos, rd, factor);
        return;
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < lora; i += blockDim.x) {
        float a = ld(&c[i]);
        ss += a * a;
    }
    float inv = rsqrtf(block_sum(ss) / (float)lora + eps);
    for (int i = threadIdx.x; i < lora; i += blockDim.x) st(&e[i], ld(&c[i]) * inv * ld(&kv_norm[i]));
    mla_rope_part(e + lora, c + lora, pos, inv_freq, rd, interleave, factor);
}
template <typename T>
__device__ void mla_prep(T* qcat, T* pool, const T* q, const T* ckv, long ckv_offset, const T* kv_norm, const int* positions,
                         const float* inv_freq, const int* entry, long pool_offset, int heads, int q_stride,
                         int ckv_stride, int nope, int rd, int lora, int interleave, float factor, float eps) {
    mla_prep_at(blockIdx.x, blockIdx.y, qcat, pool, q, ckv, ckv_offset, kv_norm, positions, inv_freq, entry,
                pool_offset, heads, q_stride, ckv_stride, nope, rd, lora, interleave, factor, eps);
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

// N of warp_dot's 16-byte-slice sums side by side: acc[u] = sum_j w[u * k +
// j] x[j] for u < rows (a later u repeats the last row; its sum is not to be
// stored), each in warp_dot's order (lane l's slices l, l + 32, ... in order,
// a slice's values in order, then the xor tree), so each has the bits
// warp_dot gives it; the rows' loads in flight together and the xor trees
// level by level across them. x is read through L2 when X_L2 (this kernel
// wrote it). k, w and x whole 16-byte slices.
template <typename T, int N, bool X_L2>
__device__ __forceinline__ void warp_dots(float* acc, const T* w, int rows, const T* x, int k, int lane) {
    constexpr int VEC = 16 / sizeof(T);
    const T* wr[N];
#pragma unroll
    for (int u = 0; u < N; u++) {
        wr[u] = w + (size_t)min(u, rows - 1) * k;
        acc[u] = 0.f;
    }
#pragma unroll 2
    for (int i = lane * VEC; i < k; i += 32 * VEC) {
        float xv[VEC];
        if (X_L2)
            unpack16<T>(__ldcg((const uint4*)(x + i)), xv);
        else
            ld16(x + i, xv);
#pragma unroll
        for (int u = 0; u < N; u++) {
            float wv[VEC];
            ld16(wr[u] + i, wv);
#pragma unroll
            for (int j = 0; j < VEC; j++) acc[u] = fmaf(wv[j], xv[j], acc[u]);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
        for (int u = 0; u < N; u++) acc[u] += __shfl_xor_sync(0xffffffffu, acc[u], o);
    }
}

// Outputs of a head a warp of the `_d4` per-head products sums side by side
// (the default; SPECULA_MLA_DOTS=1 takes the one-output kernels).
#define MLA_HEAD_DOTS 4

// Per-head products (the absorbed W_UK^T and W_UV): y[r, h, c] = sum_j
// w[h, c, j] x[r, h, j] for c < n, j < k; x rows xs apart with heads xh
// apart, y rows ys apart with heads yh apart. One warp per (head, c) over
// every row (warp_dot: a row's sums do not depend on the others), or with
// `vec` and D = MLA_HEAD_DOTS per (head, D outputs from c) (warp_dots: the
// same sums side by side, the same bits; a kernel of its own, so that the
// one-output form keeps its registers).
// `vec`: k, xs and xh are multiples of 16 bytes (16-byte loads).
// Block (bx, by) of a grid of gy row groups (any block size: a warp's
// (head, c) is its index over the grid's x).
template <typename T, int D>
__device__ void mla_head_linear_at(int bx, int by, int gy, T* y, const T* x, const T* w, int rows, int heads, int n,
                                   int k, int xs, int xh, int ys, int yh, int vec) {
    int gw = (bx * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (D > 1 && vec) {
        int per_head = (n + D - 1) / D;
        int h = gw / per_head, c0 = (gw % per_head) * D, valid = min(D, n - c0);
        const T* wr = w + ((size_t)h * n + c0) * k;
        if (gw < heads * per_head && by == 0) prefetch_l2_span(wr, (size_t)valid * k * sizeof(T), lane, 32);
        pdl_enter();
        if (gw >= heads * per_head) return;
        for (int r = by; r < rows; r += gy) {
            float acc[D];
            warp_dots<T, D, false>(acc, wr, valid, x + (size_t)r * xs + (size_t)h * xh, k, lane);
#pragma unroll
            for (int u = 0; u < D; u++)
                if (lane == u && u < valid) st(&y[(size_t)r * ys + (size_t)h * yh + c0 + u], acc[u]);
        }
        return;
    }
    int h = gw / n, c = gw % n;
    const T* wr = w + ((size_t)h * n + c) * k;
    // The warp's weight row asked of L2 before the wait on the previous
    // kernel (no kernel writes weights).
    if (gw < heads * n && by == 0) prefetch_l2_span(wr, (size_t)k * sizeof(T), lane, 32);
    pdl_enter();
    if (gw >= heads * n) return;
    for (int r = by; r < rows; r += gy) {
        float acc = warp_dot(wr, x + (size_t)r * xs + (size_t)h * xh, k, vec != 0, lane);
        if (lane == 0) st(&y[(size_t)r * ys + (size_t)h * yh + c], acc);
    }
}
template <typename T, int D>
__device__ void mla_head_linear(T* y, const T* x, const T* w, int rows, int heads, int n, int k, int xs, int xh,
                                int ys, int yh, int vec) {
    mla_head_linear_at<T, D>(blockIdx.x, blockIdx.y, gridDim.y, y, x, w, rows, heads, n, k, xs, xh, ys, yh, vec);
}

#define P_MLA_HL(T) (T* y, const T* x, const T* w, int rows, int heads, int n, int k, int xs, int xh, int ys, int yh, int vec)
#define A_MLA_HL (y, x, w, rows, heads, n, k, xs, xh, ys, yh, vec)
#define MLA_D1(T) <T, 1>
#define MLA_D4(T) <T, MLA_HEAD_DOTS>
KERNELS_ENTERED(mla_head_linear, mla_head_linear, MLA_D1, P_MLA_HL, A_MLA_HL, NO_ENTER)
KERNELS_ENTERED(mla_head_linear_d4, mla_head_linear, MLA_D4, P_MLA_HL, A_MLA_HL, NO_ENTER)

// mla_prep and W_UK^T (mla_head_linear into qcat) in one launch of 128-thread
// blocks (mla_prep's size; the product's warps do not depend on it), each
// with its own parameters (uk_heads = heads): blocks below uk_blocks x
// uk_groups are the product's grid, (b % uk_blocks, b / uk_blocks); the rest
// are mla_prep's (rows, heads + 1) grid. The same
// arithmetic as the two launches, one launch and no fork instead of two.
template <typename T, int D>
__device__ void mla_prep_uk(T* qcat, T* pool, const T* q, const T* ckv, long ckv_offset, const T* kv_norm,
                            const int* positions, const float* inv_freq, const int* entry, long pool_offset, int heads,
                            int q_stride, int ckv_stride, int nope, int rd, int lora, int interleave, float factor,
                            float eps, T* y, const T* x, const T* w, int rows, int uk_heads, int n, int k, int xs,
                            int xh, int ys, int yh, int vec, int uk_blocks, int uk_groups) {
    int b = blockIdx.x, nb = uk_blocks * uk_groups;
    if (b < nb) {
        mla_head_linear_at<T, D>(b % uk_blocks, b / uk_blocks, uk_groups, y, x, w, rows, uk_heads, n, k, xs, xh, ys, yh,
                                 vec);
        return;
    }
    b -= nb;
    mla_prep_prefetch(b / rows, kv_norm, inv_freq, heads, rd, lora);
    pdl_enter();
    mla_prep_at(b % rows, b / rows, qcat, pool, q, ckv, ckv_offset, kv_norm, positions, inv_freq, entry, pool_offset,
                heads, q_stride, ckv_stride, nope, rd, lora, interleave, factor, eps);
}

#define P_MLA_PREP_UK(T) (T* qcat, T* pool, const T* q, const T* ckv, long ckv_offset, const T* kv_norm, const int* positions, const float* inv_freq, const int* entry, long pool_offset, int heads, int q_stride, int ckv_stride, int nope, int rd, int lora, int interleave, float factor, float eps, T* y, const T* x, const T* w, int rows, int uk_heads, int n, int k, int xs, int xh, int ys, int yh, int vec, int uk_blocks, int uk_groups)
#define A_MLA_PREP_UK (qcat, pool, q, ckv, ckv_offset, kv_norm, positions, inv_freq, entry, pool_offset, heads, q_stride, ckv_stride, nope, rd, lora, interleave, factor, eps, y, x, w, rows, uk_heads, n, k, xs, xh, ys, yh, vec, uk_blocks, uk_groups)
KERNELS_ENTERED(mla_prep_uk, mla_prep_uk, MLA_D1, P_MLA_PREP_UK, A_MLA_PREP_UK, NO_ENTER)
KERNELS_ENTERED(mla_prep_uk_d4, mla_prep_uk, MLA_D4, P_MLA_PREP_UK, A_MLA_PREP_UK, NO_ENTER)

// Row r's key list as the latent attention reads it (as the attention
// kernel does): base[r] + j for j < prefix[r], then base[r] +
// extra[extra_off[r] + j - prefix[r]]; n keys in all.
struct MlaRowKeys {
    long base;
    int np, e0, n;
    // The cache entry of the list's key j.
    __device__ long entry(const int* extra, int j) const { return base + (j < np ? j : extra[e0 + j - np]); }
};

__device__ MlaRowKeys mla_row_keys(const int* base, const int* prefix, const int* extra_off, int r) {
    int np = prefix[r], e0 = extra_off[r];
    return MlaRowKeys{base[r], np, e0, np + extra_off[r + 1] - e0};
}

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
// (Loading a thread's partials before the pairs, held in registers for up to
// eight splits, made the one-head launch 30 us a V2-Lite forward slower on an
// H100: results/h200/v2lite-chains-2026-12-05, call 5.)
template <typename T>
__device__ void mla_merge_t(T* o, const float* po, const float* ml, int nh, int lora, int splits, float* scratch,
                            int hcap) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    float* wgt = scratch;                  // [hcap][splits]: e^(m_s - m)
    float* inv = scratch + hcap * splits;  // [hcap]: l
    __syncthreads();  // the block's own partials are no longer read from scratch
    for (int hh = warp; hh < nh; hh += nw) {
        const float* mh = ml + (size_t)hh * splits * 2;
        // The lane's pair of the first 32 splits is loaded once, in the first
        // pass, and kept for the second (for at most 32 splits, one wait).
        float m = -INFINITY, ms0 = 0.f, ls0 = 0.f;
        for (int s0 = 0; s0 < splits; s0 += 32) {
            bool in = s0 + lane < splits;
            float v = in ? __ldcg(&mh[2 * (s0 + lane)]) : -INFINITY;
            if (s0 == 0 && in) {
                ms0 = v;
                ls0 = __ldcg(&mh[2 * lane + 1]);
            }
#pragma unroll
            for (int o2 = 16; o2 > 0; o2 >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o2));
            m = fmaxf(m, v);
        }
        float l = 0.f;
        for (int s0 = 0; s0 < splits; s0 += 32) {
            int sl = s0 + lane;
            float ms = s0 == 0 ? ms0 : sl < splits ? __ldcg(&mh[2 * sl]) : 0.f;
            float ls = s0 == 0 ? ls0 : sl < splits ? __ldcg(&mh[2 * sl + 1]) : 0.f;
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

// Split s of the heads from slot `first` (splits per head) saw no keys: a
// zero partial output and (max, sum) = (-inf, 0), which the merge adds as
// nothing.
__device__ void mla_empty_split(float* part_out, float* part_ml, size_t first, int nh, int lora, int splits, int s) {
    for (int i = threadIdx.x; i < nh * lora; i += blockDim.x)
        part_out[(first + (size_t)(i / lora) * splits + s) * lora + i % lora] = 0.f;
    if (threadIdx.x < nh) {
        size_t slot = first + (size_t)threadIdx.x * splits + s;
        part_ml[2 * slot] = -INFINITY;
        part_ml[2 * slot + 1] = 0.f;
    }
}

// After a block has written its split's partials: the last block of (launch
// row blockIdx.x, head group blockIdx.y) to finish (a counter per pair, zero
// between launches, which it resets) merges the splits into o (mla_merge_t
// over po/ml from the pair's first slot, hcap heads of scratch). Whether this
// block merged.
template <typename T>
__device__ bool mla_finish_split(T* o, const float* po, const float* ml, int* counters, int nh, int lora, int splits,
                                 float* scratch, int hcap) {
    int pair = blockIdx.x * gridDim.y + blockIdx.y;
    if (!last_to_arrive(&counters[pair], splits)) return false;
    mla_merge_t(o, po, ml, nh, lora, splits, scratch, hcap);
    if (threadIdx.x == 0) counters[pair] = 0;
    return true;
}

// Outputs of one head a warp of mla_uv_heads sums side by side.
#define MLA_UV_DOTS 8

// W_UV over the nh heads a block has just merged (the latent attention's
// `_uv` form, instead of mla_head_linear's launch after it): y[h * yh + c] =
// sum_j w[h, c, j] o[h * k + j] for c < n, each output summed as warp_dot
// sums it with 16-byte slices (warp_dots), so the bits are the separate
// launch's; a warp takes MLA_UV_DOTS outputs of one head at a time, the
// block the warp groups part, part + parts, ... of the parts blocks sharing
// the heads. o, written before the barrier (by this block, or by the
// cluster before a cluster barrier), is read through L2. k and the rows are
// whole 16-byte slices (the launch checks).
template <typename T>
__device__ void mla_uv_heads(T* y, int yh, const T* o, const T* w, int nh, int n, int k, int part, int parts) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();
    int per_head = (n + MLA_UV_DOTS - 1) / MLA_UV_DOTS;
    for (int g = part * nw + warp; g < nh * per_head; g += parts * nw) {
        int hh = g / per_head, c0 = (g % per_head) * MLA_UV_DOTS, valid = min(MLA_UV_DOTS, n - c0);
        float acc[MLA_UV_DOTS];
        warp_dots<T, MLA_UV_DOTS, true>(acc, w + ((size_t)hh * n + c0) * k, valid, o + (size_t)hh * k, k, lane);
#pragma unroll
        for (int u = 0; u < MLA_UV_DOTS; u++)
            if (lane == u && u < valid) st(&y[(size_t)hh * yh + c0 + u], acc[u]);
    }
}

// Before the wait on the previous kernel, the blocks of the first row of a
// one-head latent attention with W_UV (blockIdx.y the head) ask L2 for that
// head's W_UV rows ([n, k] of w), each split its share.
template <typename T>
__device__ void mla_prefetch_uv(const T* w, int n, int k) {
    if (blockIdx.x != 0 || w == nullptr) return;
    prefetch_l2_span(w + (size_t)blockIdx.y * n * k, (size_t)n * k * sizeof(T), blockIdx.z * blockDim.x + threadIdx.x,
                     gridDim.z * blockDim.x);
}
