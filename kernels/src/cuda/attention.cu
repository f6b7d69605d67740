
// ---------------------------------------------------------------------------
// Split-K attention (flash decoding) in one launch. Block (row r, head h,
// split s) covers keys [s * chunk, (s + 1) * chunk) of the row's key list:
// the row sees pool entries base[r] + j for j < prefix[r], then
// base[r] + extra[k] for k in extra_off[r]..extra_off[r+1]; k/v pools are
// [entries, kv_heads, head_dim] (pools may hold several layers: the launch
// passes the layer's first element). Each block writes its unnormalised
// partial output and (max, sum); the last block of a (row, head) to finish
// (a counter per pair, back to zero after) merges the splits in split order.
// Neither the partials nor the merge depend on which block is last or on how
// many empty splits there are, so a row's output is the same in any batch.
// Dynamic shared memory: head_dim + chunk + 8 x head_dim floats.

__device__ __forceinline__ size_t key_entry(const int* base, const int* extra, int r, int np, int e0, int j) {
    return (size_t)base[r] + (j < np ? j : extra[e0 + j - np]);
}

// Keys whose value slices a thread loads ahead in the fast path.
#define ATT_V_AHEAD 8

// AHEAD: issue the key and value loads before anything waits (none depends
// on q or on the scores), at the cost of registers; a launch of more blocks
// than fit at once goes faster without. The sums are the same either way.
template <typename T, bool AHEAD>
__device__ void attention_split(float* po, float* ml, const T* q, const T* kp, const T* vp, const int* base,
                                const int* prefix, const int* extra_off, const int* extra, int heads, int kv_heads,
                                int head_dim, float scale, int start, int end, int chunk, float* smem) {
    int r = blockIdx.x, h = blockIdx.y;
    int kvh = h / (heads / kv_heads);
    int np = prefix[r], e0 = extra_off[r];
    size_t width = (size_t)kv_heads * head_dim;
    constexpr int VEC = 16 / sizeof(T);
    int groups = head_dim / VEC;  // 16-byte slices of a head
    // Keys from registers (a head of at most 16 x 16 bytes); values by key
    // group and 16-byte slice. Either way the sums run in the same order.
    bool kfast = head_dim % VEC == 0 && groups <= 16 && chunk <= (int)blockDim.x && width % VEC == 0 &&
                 ((size_t)kp & 15) == 0;
    bool vfast = head_dim % VEC == 0 && (int)blockDim.x % groups == 0 && width % VEC == 0 && ((size_t)vp & 15) == 0;
    float* qs = smem;
    float* sc = smem + head_dim;
    const T* qr = q + ((size_t)r * heads + h) * head_dim;
    uint4 kraw[16];
    uint4 vraw[ATT_V_AHEAD];
    int g = threadIdx.x % groups, kg = threadIdx.x / groups, n_kg = blockDim.x / groups;
    int jk = start + threadIdx.x;
    if (AHEAD && kfast && jk < end) {
        const uint4* k4 = (const uint4*)(kp + key_entry(base, extra, r, np, e0, jk) * width + (size_t)kvh * head_dim);
#pragma unroll
        for (int d = 0; d < 16; d++)
            if (d < groups) kraw[d] = k4[d];
    }
    if (AHEAD && vfast) {
#pragma unroll
        for (int i = 0; i < ATT_V_AHEAD; i++) {
            int j = start + kg + i * n_kg;
            if (j < end)
                vraw[i] = *(const uint4*)(vp + key_entry(base, extra, r, np, e0, j) * width + (size_t)kvh * head_dim + g * VEC);
        }
    }
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) qs[d] = ld(&qr[d]);
    __syncthreads();
    if (kfast) {
        if (jk < end) {
            const T* k = kp + key_entry(base, extra, r, np, e0, jk) * width + (size_t)kvh * head_dim;
            float acc = 0.f;
#pragma unroll
            for (int d = 0; d < 16; d++) {
                if (d < groups) {
                    float kv[VEC];
                    ld16(AHEAD ? (const T*)&kraw[d] : k + d * VEC, kv);
#pragma unroll
                    for (int e = 0; e < VEC; e++) acc = fmaf(qs[d * VEC + e], kv[e], acc);
                }
            }
            sc[jk - start] = acc * scale;
        }
    } else {
        for (int j = start + threadIdx.x; j < end; j += blockDim.x) {
            const T* k = kp + key_entry(base, extra, r, np, e0, j) * width + (size_t)kvh * head_dim;
            float acc = 0.f;
            for (int d = 0; d < head_dim; d++) acc = fmaf(qs[d], ld(&k[d]), acc);
            sc[j - start] = acc * scale;
        }
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < end - start; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx);
    float sum = 0.f;
    for (int j = threadIdx.x; j < end - start; j += blockDim.x) {
        float p = expf(sc[j] - mx);
        sc[j] = p;
        sum += p;
    }
    sum = block_sum(sum);
    if (vfast) {
        // Thread (key group kg, slice g): its slice of V over keys kg, kg + KG, ...;
        // then the key groups are summed in order (a fixed order per key list).
        float acc[VEC];
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[e] = 0.f;
        int i = 0;
        for (int j = start + kg; j < end; j += n_kg, i++) {
            float v[VEC];
            if (AHEAD && i < ATT_V_AHEAD) {
                uint4 raw = vraw[0];
#pragma unroll
                for (int u = 1; u < ATT_V_AHEAD; u++)
                    if (u == i) raw = vraw[u];
                ld16((const T*)&raw, v);
            } else {
                ld16(vp + key_entry(base, extra, r, np, e0, j) * width + (size_t)kvh * head_dim + g * VEC, v);
            }
            float p = sc[j - start];
#pragma unroll
            for (int e = 0; e < VEC; e++) acc[e] = fmaf(p, v[e], acc[e]);
        }
        float* red = sc + chunk;  // n_kg x head_dim floats
#pragma unroll
        for (int e = 0; e < VEC; e++) red[kg * head_dim + g * VEC + e] = acc[e];
        __syncthreads();
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            float a = 0.f;
            for (int k = 0; k < n_kg; k++) a += red[k * head_dim + d];
            po[d] = a;
        }
    } else {
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            float acc = 0.f;
            for (int j = start; j < end; j++)
                acc += sc[j - start] * ld(&vp[key_entry(base, extra, r, np, e0, j) * width + (size_t)kvh * head_dim + d]);
            po[d] = acc;
        }
    }
    if (threadIdx.x == 0) { ml[0] = mx; ml[1] = sum; }
}

// Merges the splits of one (row, head): out = sum_s po_s e^(m_s - m) / sum_s l_s e^(m_s - m).
// Reads through L2 (other blocks wrote the partials).
template <typename T>
__device__ void attention_merge(T* o, const float* part_out, const float* part_ml, int head_dim, int splits) {
    float m = -INFINITY;
    for (int s = 0; s < splits; s++) m = fmaxf(m, __ldcg(&part_ml[2 * s]));
    float l = 0.f;
    for (int s = 0; s < splits; s++) l += __ldcg(&part_ml[2 * s + 1]) * expf(__ldcg(&part_ml[2 * s]) - m);
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float acc = 0.f;
        for (int s = 0; s < splits; s++) acc += __ldcg(&part_out[(size_t)s * head_dim + d]) * expf(__ldcg(&part_ml[2 * s]) - m);
        st(&o[d], acc / l);
    }
}

template <typename T, bool AHEAD>
__device__ void attention(T* out, float* part_out, float* part_ml, int* counters, const T* q, const T* kp,
                          const T* vp, const int* base, const int* prefix, const int* extra_off, const int* extra,
                          int heads, int kv_heads, int head_dim, float scale, int chunk, long pool_offset, int skip_causal) {
    extern __shared__ float smem[];
    kp += pool_offset;
    vp += pool_offset;
    int r = blockIdx.x, h = blockIdx.y, s = blockIdx.z, splits = gridDim.z;
    // Causal (prefill) rows are flash_prefill.cu's, unless skip_causal is 0.
    if (skip_causal && extra_off[r + 1] == extra_off[r]) return;
    int nk = prefix[r] + extra_off[r + 1] - extra_off[r];
    int start = s * chunk, end = min(nk, start + chunk);
    size_t pair = (size_t)r * heads + h, first = pair * splits;
    float* po = part_out + (first + s) * head_dim;
    float* ml = part_ml + 2 * (first + s);
    if (start >= end) {
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) po[d] = 0.f;
        if (threadIdx.x == 0) { ml[0] = -INFINITY; ml[1] = 0.f; }
    } else {
        attention_split<T, AHEAD>(po, ml, q, kp, vp, base, prefix, extra_off, extra, heads, kv_heads, head_dim, scale, start, end,
                        chunk, smem);
    }
    // The last block of the pair merges.
    if (!last_to_arrive(&counters[pair], splits)) return;
    attention_merge(out + pair * head_dim, part_out + first * head_dim, part_ml + 2 * first, head_dim, splits);
    if (threadIdx.x == 0) counters[pair] = 0;
}

#define P_ATT(T) (T* out, float* part_out, float* part_ml, int* counters, const T* q, const T* kp, const T* vp, const int* base, const int* prefix, const int* extra_off, const int* extra, int heads, int kv_heads, int head_dim, float scale, int chunk, long pool_offset, int skip_causal)
#define A_ATT (out, part_out, part_ml, counters, q, kp, vp, base, prefix, extra_off, extra, heads, kv_heads, head_dim, scale, chunk, pool_offset, skip_causal)
// attention_ahead_{f32,bf16} load ahead, attention_lean_{f32,bf16} do not.
#define ATT_AHEAD(T) <T, true>
#define ATT_LEAN(T) <T, false>
KERNELS(attention_ahead, attention, ATT_AHEAD, P_ATT, A_ATT)
KERNELS(attention_lean, attention, ATT_LEAN, P_ATT, A_ATT)
