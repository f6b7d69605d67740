
// ---------------------------------------------------------------------------
// The fused q|k|v projection of up to 16 rows with RoPE and the KV append as
// its epilogue (heads without per-head norms): the pipelined small-row
// linear (linear_mma.cu) whose block owns, instead of 16 consecutive output
// columns, the 8 pairs (i, i + head_dim / 2) of one q or k head that RoPE
// rotates together (lane rows g and g + 8), or 16 consecutive v columns. A
// column's sum does not depend on which block computes it, so q, k and v get
// the projection's bits; each is rounded to bf16 as the projection would
// have stored it and then rotated (rope_rotate, with qkv_rope_append's angle)
// into q_out or the layer's pool entry, v copied there: the bits of the
// projection followed by qkv_rope_append.

struct QkvRopeColumns {
    const bf16* bias;
    bf16 *q_out, *kp, *vp;
    const int* positions;
    const float* inv_freq;
    const int* entry;
    long pool_offset;
    int m, parts, heads, kv_heads, hd, tile;
    // Whether the block's tile is 8 rotation pairs of a q or k head.
    __device__ bool paired() const { return tile < (heads + kv_heads) * (hd / 16); }
    __device__ int col(int g, bool hi) const {
        int per_head = hd / 16;
        if (paired()) {
            int c = (tile / per_head) * hd + (tile % per_head) * 8 + g;
            return hi ? c + hd / 2 : c;
        }
        int c = (heads + kv_heads) * hd + (tile - (heads + kv_heads) * per_head) * 16 + g;
        return hi ? c + 8 : c;
    }
    template <int NT>
    __device__ void store(float (&acc)[NT][4], float* partial) const {
        if (!mma_sum_parts<NT>(acc, parts, partial)) return;
        int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        int kvw = kv_heads * hd, half = hd / 2, clo = col(g, false), chi = col(g, true);
        float blo = bias ? ld(&bias[clo]) : 0.f, bhi = bias ? ld(&bias[chi]) : 0.f;
#pragma unroll
        for (int tt = 0; tt < NT; tt++) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                // acc[tt][e] = column clo, acc[tt][2 + e] = column chi, of token tt*8 + 2t + e.
                int tok = tt * 8 + 2 * t + e;
                if (tok >= m) continue;
                bf16 vlo, vhi;  // as the projection would have stored them
                st(&vlo, acc[tt][e] + blo);
                st(&vhi, acc[tt][2 + e] + bhi);
                size_t pool = pool_offset + (size_t)entry[tok] * kvw;
                if (!paired()) {
                    int v0 = (heads + kv_heads) * hd;
                    vp[pool + (clo - v0)] = vlo;
                    vp[pool + (chi - v0)] = vhi;
                    continue;
                }
                int head = clo / hd, i = clo % hd;
                float s, c, lo, hi;
                sincosf((float)positions[tok] * inv_freq[i], &s, &c);
                rope_rotate(ld(&vlo), ld(&vhi), c, s, lo, hi);
                bf16* o = head < heads ? q_out + ((size_t)tok * heads + head) * hd : kp + pool + (size_t)(head - heads) * hd;
                st(&o[i], lo);
                st(&o[i + half], hi);
            }
        }
    }
};

// grid: (heads + 2 kv_heads) head_dim / 16 blocks of 32 `parts` threads.
#define LINEAR_QKV_ROPE(NT, KU)                                                                             \
    extern "C" __global__ void linear_qkv_rope_tile##NT##_bf16(                                              \
        bf16* q_out, bf16* kp, bf16* vp, const bf16* x, const bf16* w, const bf16* bias, const int* positions, \
        const float* inv_freq, const int* entry, long pool_offset, int m, int k, int parts, int heads,         \
        int kv_heads, int hd) {                                                                              \
        extern __shared__ float rope_partial[];                                                              \
        QkvRopeColumns out{bias, q_out, kp, vp, positions, inv_freq, entry, pool_offset,                     \
                           m, parts, heads, kv_heads, hd, (int)blockIdx.x};                                  \
        linear_mma_pipelined<NT, KU>(x, w, m, k, (heads + 2 * kv_heads) * hd, parts, rope_partial, out);     \
    }
LINEAR_QKV_ROPE(1, 8)
LINEAR_QKV_ROPE(2, 4)
