// specula's CUDA kernels, compiled at run time by NVRTC (no headers needed).
// Every kernel exists for float (_f32) and bfloat16 (_bf16, stored as
// unsigned short, computed in float). Each has a CPU reference in
// kernels/src/cpu, and the GPU check compares them on random inputs.

typedef unsigned short bf16;
#define INFINITY __int_as_float(0x7f800000)

__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const bf16* p) { return __uint_as_float(((unsigned int)*p) << 16); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(bf16* p, float v) {
    unsigned int u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) { *p = 0x7fc0; return; }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    *p = (bf16)(u >> 16);
}

// 16 bytes of T as floats.
__device__ __forceinline__ void ld16(const float* p, float* v) {
    float4 a = *(const float4*)p;
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
}
__device__ __forceinline__ void ld16(const bf16* p, float* v) {
    uint4 a = *(const uint4*)p;
    unsigned int w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[2 * i] = __uint_as_float(w[i] << 16);
        v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

// Programmatic dependent launch (sm_90+; no-ops elsewhere and when the
// kernel was launched without the attribute): `pdl_launch_dependents` lets
// the next kernel in the stream start early (it may only touch data that no
// earlier kernel writes until its own `pdl_wait`), `pdl_wait` blocks until
// the previous kernel has finished and its writes are visible.
__device__ __forceinline__ void pdl_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Where every kernel but the linears starts (they prefetch weights first):
// the next kernel may launch now, and nothing is read or written before the
// previous kernel has finished. Every kernel launched as a programmatic
// dependent must wait like this, or a kernel after it could overtake the one
// before it.
__device__ __forceinline__ void pdl_enter() {
    pdl_wait();
}

// Block-wide reductions; blockDim.x is a multiple of 32, at most 1024.
__device__ float block_sum(float v) {
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.f;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

__device__ float block_max(float v) {
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : -INFINITY;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

// (value, index) argmax across the block: larger value wins, the lower index on a tie.
__device__ void block_argmax(float& v, int& i) {
    __shared__ float sv[32];
    __shared__ int si[32];
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) { sv[warp] = v; si[warp] = i; }
    __syncthreads();
    int nw = blockDim.x >> 5;
    if (threadIdx.x < nw) { v = sv[threadIdx.x]; i = si[threadIdx.x]; } else { v = -INFINITY; i = 0x7fffffff; }
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, v, o);
            int oi = __shfl_xor_sync(0xffffffffu, i, o);
            if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
        }
    }
    if (threadIdx.x == 0) { sv[0] = v; si[0] = i; }
    __syncthreads();
    v = sv[0];
    i = si[0];
}

// out[r] = table[ids[r]]; grid: rows.
template <typename T>
__device__ void embedding_gather(T* out, const T* table, const unsigned int* ids, int hidden) {
    const T* src = table + (size_t)ids[blockIdx.x] * hidden;
    T* dst = out + (size_t)blockIdx.x * hidden;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = src[i];
}

// residual += delta (when delta is not null); out = rmsnorm(residual) * w. grid: rows.
// Rows whose width is a multiple of 16 bytes and fits 4 vectors per thread
// stay in registers (one read of each input); others take a scalar loop.
__device__ __forceinline__ void st16(float* p, const float* v) { *(float4*)p = make_float4(v[0], v[1], v[2], v[3]); }
__device__ __forceinline__ void st16(bf16* p, const float* v) {
    unsigned int w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        bf16 a, b;
        st(&a, v[2 * i]);
        st(&b, v[2 * i + 1]);
        w[i] = (unsigned int)a | ((unsigned int)b << 16);
    }
    *(uint4*)p = make_uint4(w[0], w[1], w[2], w[3]);
}

template <typename T>
__device__ void rms_norm_residual(T* out, T* residual, const T* delta, const T* w, float eps, int hidden) {
    constexpr int VEC = 16 / sizeof(T);
    T* x = residual + (size_t)blockIdx.x * hidden;
    const T* d = delta ? delta + (size_t)blockIdx.x * hidden : nullptr;
    T* o = out + (size_t)blockIdx.x * hidden;
    int nv = hidden / VEC;
    if (hidden % VEC == 0 && nv <= 4 * (int)blockDim.x) {
        float v[4][VEC];
        float ss = 0.f;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int i = (threadIdx.x + u * blockDim.x) * VEC;
            if (i < hidden) {
                ld16(x + i, v[u]);
                if (d) {
                    float dv[VEC];
                    ld16(d + i, dv);
                    // The stored residual is rounded to T; the norm reads it back as stored.
                    T tmp[VEC];
#pragma unroll
                    for (int e = 0; e < VEC; e++) { st(&tmp[e], v[u][e] + dv[e]); v[u][e] = ld(&tmp[e]); }
                    st16(x + i, v[u]);
                }
#pragma unroll
                for (int e = 0; e < VEC; e++) ss += v[u][e] * v[u][e];
            }
        }
        float inv = rsqrtf(block_sum(ss) / hidden + eps);
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int i = (threadIdx.x + u * blockDim.x) * VEC;
            if (i < hidden) {
                float wv[VEC], r[VEC];
                ld16(w + i, wv);
#pragma unroll
                for (int e = 0; e < VEC; e++) r[e] = v[u][e] * inv * wv[e];
                st16(o + i, r);
            }
        }
        return;
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        if (d) st(&x[i], ld(&x[i]) + ld(&d[i]));
        float v = ld(&x[i]);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss) / hidden + eps);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) st(&o[i], ld(&x[i]) * inv * ld(&w[i]));
}

// Rotates x: [rows, heads, head_dim] (rotate_half layout) to positions[r]. grid: rows.
template <typename T>
__device__ void rope(T* x, const int* positions, const float* inv_freq, int heads, int head_dim) {
    int half = head_dim / 2;
    float pos = (float)positions[blockIdx.x];
    for (int idx = threadIdx.x; idx < heads * half; idx += blockDim.x) {
        int h = idx / half, i = idx % half;
        T* p = x + ((size_t)blockIdx.x * heads + h) * head_dim;
        float s, c;
        sincosf(pos * inv_freq[i], &s, &c);
        float a = ld(&p[i]), b = ld(&p[i + half]);
        st(&p[i], a * c - b * s);
        st(&p[i + half], b * c + a * s);
    }
}

// out = silu(gate) * up, element-wise over n values.
template <typename T>
__device__ void silu_mul(T* out, const T* gate, const T* up, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float g = ld(&gate[i]);
        st(&out[i], g / (1.f + expf(-g)) * ld(&up[i]));
    }
}

// out[r] = argmax of x[r, :n]; grid: rows.
template <typename T>
__device__ void argmax_rows(int* out, const T* x, int n) {
    const T* row = x + (size_t)blockIdx.x * n;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ld(&row[i]);
        if (v > bv) { bv = v; bi = i; }
    }
    block_argmax(bv, bi);
    if (threadIdx.x == 0) out[blockIdx.x] = bi;
}

// The k largest of x[r, :n], largest first (ties to the lower index); k <= 32. grid: rows.
template <typename T>
__device__ void top_k_rows(int* out_idx, float* out_val, const T* x, int n, int k) {
    __shared__ int picked[32];
    const T* row = x + (size_t)blockIdx.x * n;
    for (int round = 0; round < k; round++) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            bool taken = false;
            for (int p = 0; p < round; p++) taken |= picked[p] == i;
            float v = ld(&row[i]);
            if (!taken && v > bv) { bv = v; bi = i; }
        }
        block_argmax(bv, bi);
        if (threadIdx.x == 0) {
            picked[round] = bi;
            out_idx[blockIdx.x * k + round] = bi;
            out_val[blockIdx.x * k + round] = bv;
        }
        __syncthreads();
    }
}

// kv_commit: for every layer (grid.y) and sequence (grid.x), moves pool rows
// src[i] -> dst[i] for i in off[s]..off[s+1], in order (dst <= src, ascending).
template <typename T>
__device__ void kv_commit(T* kp, T* vp, const int* src, const int* dst, const int* off, int width, long layer_stride) {
    T* k = kp + blockIdx.y * layer_stride;
    T* v = vp + blockIdx.y * layer_stride;
    for (int i = off[blockIdx.x]; i < off[blockIdx.x + 1]; i++) {
        size_t s = (size_t)src[i] * width, d = (size_t)dst[i] * width;
        if (s != d) {
            for (int w = threadIdx.x; w < width; w += blockDim.x) { k[d + w] = k[s + w]; v[d + w] = v[s + w]; }
        }
        __syncthreads();
    }
}

#define BOTH(NAME, PARAMS, ARGS)                                                   \
    extern "C" __global__ void NAME##_f32 PARAMS(float) {                         \
        pdl_enter();                                                               \
        NAME<float> ARGS;                                                          \
    }                                                                              \
    extern "C" __global__ void NAME##_bf16 PARAMS(bf16) {                          \
        pdl_enter();                                                               \
        NAME<bf16> ARGS;                                                           \
    }

#define P_EMB(T) (T* out, const T* table, const unsigned int* ids, int hidden)
BOTH(embedding_gather, P_EMB, (out, table, ids, hidden))
#define P_RMS(T) (T* out, T* residual, const T* delta, const T* w, float eps, int hidden)
BOTH(rms_norm_residual, P_RMS, (out, residual, delta, w, eps, hidden))
#define P_ROPE(T) (T* x, const int* positions, const float* inv_freq, int heads, int head_dim)
BOTH(rope, P_ROPE, (x, positions, inv_freq, heads, head_dim))
#define P_SILU(T) (T* out, const T* gate, const T* up, long n)
BOTH(silu_mul, P_SILU, (out, gate, up, n))
#define P_ARGMAX(T) (int* out, const T* x, int n)
BOTH(argmax_rows, P_ARGMAX, (out, x, n))
#define P_TOPK(T) (int* out_idx, float* out_val, const T* x, int n, int k)
BOTH(top_k_rows, P_TOPK, (out_idx, out_val, x, n, k))
#define P_KV(T) (T* kp, T* vp, const int* src, const int* dst, const int* off, int width, long layer_stride)
BOTH(kv_commit, P_KV, (kp, vp, src, dst, off, width, layer_stride))

// Greedy tree verification, one thread per sequence. Sequence s owns nodes
// node_off[s]..node_off[s+1] (parents local, -1 = root; parents first) and
// choices at node_off[s] + s .. (root first). Writes the accepted local node
// indices at accepted[node_off[s]..], their count and the bonus token.
extern "C" __global__ void verify_greedy_tree(const int* choice, const int* tokens, const int* parents, const int* node_off,
                                              int n_seq, int* accepted, int* accept_len, int* bonus) {
    pdl_enter();
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n_seq) return;
    int o = node_off[s], n = node_off[s + 1] - o;
    const int* ch = choice + o + s;
    int cur = -1, len = 0;
    while (true) {
        int want = ch[cur + 1];
        int found = -1;
        for (int i = 0; i < n; i++) {
            if (parents[o + i] == cur && tokens[o + i] == want) { found = i; break; }
        }
        if (found < 0) { bonus[s] = want; break; }
        accepted[o + len++] = found;
        cur = found;
    }
    accept_len[s] = len;
}

// ---------------------------------------------------------------------------
// Model-forward kernels (the GPU engine).

// out[r, i] = silu(gu[r, 2i]) * gu[r, 2i + 1] (interleaved gate|up, after a cuBLAS GEMM).
template <typename T>
__device__ void silu_mul_interleaved(T* out, const T* gu, long rows, int inner) {
    long total = rows * inner;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        float g = ld(&gu[2 * i]);
        st(&out[i], g / (1.f + expf(-g)) * ld(&gu[2 * i + 1]));
    }
}

// Adds bias[n] to every row of y[m, n] (after a cuBLAS GEMM).
template <typename T>
__device__ void add_bias(T* y, const T* bias, long total, int n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x)
        st(&y[i], ld(&y[i]) + ld(&bias[i % n]));
}

// From the fused projection qkv[r] = [q (heads*hd) | k (kv_heads*hd) | v (kv_heads*hd)]:
// q_out[r] = rope(q), and pool entry entry[r] of the layer (pools offset by
// pool_offset elements) gets rope(k) and v. With q_norm and k_norm (Qwen3),
// each q and k head is RMS-normalised with that weight first (rounded to T
// as if stored). grid: (rows, heads + kv_heads + 1).
template <typename T>
__device__ void qkv_rope_append(T* q_out, T* kp, T* vp, const T* qkv, const int* positions, const float* inv_freq,
                                const int* entry, long pool_offset, int heads, int kv_heads, int hd,
                                const T* q_norm, const T* k_norm, float eps) {
    // Block y rotates head y (q heads, then k heads); the last block copies v.
    int r = blockIdx.x, h = blockIdx.y, half = hd / 2;
    int width = (heads + 2 * kv_heads) * hd, kvw = kv_heads * hd;
    const T* src = qkv + (size_t)r * width;
    T* kd = kp + pool_offset + (size_t)entry[r] * kvw;
    if (h == heads + kv_heads) {
        T* vd = vp + pool_offset + (size_t)entry[r] * kvw;
        const T* v = src + (size_t)(heads + kv_heads) * hd;
        for (int i = threadIdx.x; i < kvw; i += blockDim.x) vd[i] = v[i];
        return;
    }
    float pos = (float)positions[r];
    const T* p = src + (size_t)h * hd;
    T* o = h < heads ? q_out + ((size_t)r * heads + h) * hd : kd + (size_t)(h - heads) * hd;
    const T* nw = h < heads ? q_norm : k_norm;
    float inv = 1.f;
    if (nw) {
        float ss = 0.f;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) {
            float a = ld(&p[i]);
            ss += a * a;
        }
        inv = 1.f / sqrtf(block_sum(ss) / (float)hd + eps);
    }
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s, c;
        sincosf(pos * inv_freq[i], &s, &c);
        float a = ld(&p[i]), b = ld(&p[i + half]);
        if (nw) {
            T ta, tb;
            st(&ta, a * inv * ld(&nw[i]));
            st(&tb, b * inv * ld(&nw[i + half]));
            a = ld(&ta);
            b = ld(&tb);
        }
        st(&o[i], a * c - b * s);
        st(&o[i + half], b * c + a * s);
    }
}

// out[r, i] = silu(gu[r, i]) * gu[r, inner + i] (the fused gate|up projection).
template <typename T>
__device__ void silu_mul_fused(T* out, const T* gu, long rows, int inner) {
    long total = rows * inner;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        long r = i / inner, c = i % inner;
        float g = ld(&gu[r * 2 * inner + c]);
        st(&out[i], g / (1.f + expf(-g)) * ld(&gu[r * 2 * inner + inner + c]));
    }
}

// dst[r, off + j] = src[r, j] for rows of width w into rows of width dst_w. grid: rows.
template <typename T>
__device__ void copy_cols(T* dst, const T* src, int w, int dst_w, int off) {
    const T* s = src + (size_t)blockIdx.x * w;
    T* d = dst + (size_t)blockIdx.x * dst_w + off;
    for (int j = threadIdx.x; j < w; j += blockDim.x) d[j] = s[j];
}

// x[i] = offset + scale * u_i, u_i uniform in [-1, 1) from a hash of (seed, i).
template <typename T>
__device__ void fill_uniform(T* x, long n, unsigned long long seed, float scale, float offset) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        unsigned long long z = seed + (unsigned long long)i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        float u = (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
        st(&x[i], offset + scale * u);
    }
}

// Split argmax, pass 1: block (row, split) finds the largest of its chunk.
template <typename T>
__device__ void argmax_partial(float* vals, int* idxs, const T* x, int n, int chunk) {
    const T* row = x + (size_t)blockIdx.x * n;
    int start = blockIdx.y * chunk, end = min(n, start + chunk);
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) {
        float v = ld(&row[i]);
        if (v > bv) { bv = v; bi = i; }
    }
    block_argmax(bv, bi);
    if (threadIdx.x == 0) {
        vals[blockIdx.x * gridDim.y + blockIdx.y] = bv;
        idxs[blockIdx.x * gridDim.y + blockIdx.y] = bi;
    }
}

#define P_SMI(T) (T* out, const T* gu, long rows, int inner)
BOTH(silu_mul_interleaved, P_SMI, (out, gu, rows, inner))
#define P_BIAS(T) (T* y, const T* bias, long total, int n)
BOTH(add_bias, P_BIAS, (y, bias, total, n))
#define P_QKV(T) (T* q_out, T* kp, T* vp, const T* qkv, const int* positions, const float* inv_freq, const int* entry, long pool_offset, int heads, int kv_heads, int hd, const T* q_norm, const T* k_norm, float eps)
BOTH(qkv_rope_append, P_QKV, (q_out, kp, vp, qkv, positions, inv_freq, entry, pool_offset, heads, kv_heads, hd, q_norm, k_norm, eps))
#define P_SMF(T) (T* out, const T* gu, long rows, int inner)
BOTH(silu_mul_fused, P_SMF, (out, gu, rows, inner))
#define P_COPYC(T) (T* dst, const T* src, int w, int dst_w, int off)
BOTH(copy_cols, P_COPYC, (dst, src, w, dst_w, off))
#define P_FILL(T) (T* x, long n, unsigned long long seed, float scale, float offset)
BOTH(fill_uniform, P_FILL, (x, n, seed, scale, offset))
extern "C" __global__ void argmax_partial_f32(float* vals, int* idxs, const float* x, int n, int chunk) { pdl_enter(); argmax_partial<float>(vals, idxs, x, n, chunk); }
extern "C" __global__ void argmax_partial_bf16(float* vals, int* idxs, const bf16* x, int n, int chunk) { pdl_enter(); argmax_partial<bf16>(vals, idxs, x, n, chunk); }

// Split argmax, pass 2: one warp per row over its splits (ties to the lower index).
extern "C" __global__ void argmax_final(int* out, const float* vals, const int* idxs, int splits) {
    pdl_enter();
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int s = threadIdx.x; s < splits; s += 32) {
        float v = vals[blockIdx.x * splits + s];
        int i = idxs[blockIdx.x * splits + s];
        if (v > bv || (v == bv && i < bi)) { bv = v; bi = i; }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
    }
    if (threadIdx.x == 0) out[blockIdx.x] = bi;
}

// The k <= 32 largest log-probabilities of each row of logits x[r, :n]
// (log_softmax, then top-k; ties to the lower index): what a draft tree
// search needs, without copying the logits to the host. grid: rows.
template <typename T>
__device__ void top_k_logprobs(int* out_idx, float* out_logp, const T* x, int n, int k) {
    __shared__ int picked[32];
    const T* row = x + (size_t)blockIdx.x * n;
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, ld(&row[i]));
    mx = block_max(mx);
    float sum = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += expf(ld(&row[i]) - mx);
    float log_sum = logf(block_sum(sum));
    for (int round = 0; round < k; round++) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            bool taken = false;
            for (int p = 0; p < round; p++) taken |= picked[p] == i;
            float v = ld(&row[i]);
            if (!taken && v > bv) { bv = v; bi = i; }
        }
        block_argmax(bv, bi);
        if (threadIdx.x == 0) {
            picked[round] = bi;
            out_idx[blockIdx.x * k + round] = bi;
            out_logp[blockIdx.x * k + round] = bv - mx - log_sum;
        }
        __syncthreads();
    }
}
extern "C" __global__ void top_k_logprobs_f32(int* i, float* l, const float* x, int n, int k) { pdl_enter(); top_k_logprobs<float>(i, l, x, n, k); }
extern "C" __global__ void top_k_logprobs_bf16(int* i, float* l, const bf16* x, int n, int k) { pdl_enter(); top_k_logprobs<bf16>(i, l, x, n, k); }
