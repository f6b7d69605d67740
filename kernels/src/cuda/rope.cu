
// ---------------------------------------------------------------------------
// Rotary position embeddings (rotate_half layout): on its own, and fused with
// the q/k/v split of the fused projection and the KV append.

// Rotates the pair (a, b), elements i and i + head_dim / 2 of a head, by the
// angle of cosine c and sine s into (lo, hi). Each product is rounded before
// the sum (no fused multiply-add, whatever the compiler would contract): the
// same bits in every kernel that rotates (qkv_rope_append, the q|k|v
// projection's RoPE epilogue in linear_rope.cu).
__device__ __forceinline__ void rope_rotate(float a, float b, float c, float s, float& lo, float& hi) {
    lo = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    hi = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
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
        float a = ld(&p[i]), b = ld(&p[i + half]), lo, hi;
        rope_rotate(a, b, c, s, lo, hi);
        st(&p[i], lo);
        st(&p[i + half], hi);
    }
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
        float lo, hi;
        rope_rotate(a, b, c, s, lo, hi);
        st(&o[i], lo);
        st(&o[i + half], hi);
    }
}

#define P_ROPE(T) (T* x, const int* positions, const float* inv_freq, int heads, int head_dim)
BOTH(rope, P_ROPE, (x, positions, inv_freq, heads, head_dim))
#define P_QKV(T) (T* q_out, T* kp, T* vp, const T* qkv, const int* positions, const float* inv_freq, const int* entry, long pool_offset, int heads, int kv_heads, int hd, const T* q_norm, const T* k_norm, float eps)
BOTH(qkv_rope_append, P_QKV, (q_out, kp, vp, qkv, positions, inv_freq, entry, pool_offset, heads, kv_heads, hd, q_norm, k_norm, eps))
