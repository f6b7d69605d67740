
// ---------------------------------------------------------------------------
// Causal attention of prefill rows (rows whose key list is the plain prefix
// base[r] + 0..prefix[r], no extra entries), flash style: no score matrix,
// O(rows) memory. Tree rows (extra entries) are left to tree_attention.cu.
//
// bf16, head_dim 32/64/128 (flash_prefill_mma_{32,64,128}_bf16): block
// (tile t, head h) holds up to 64 consecutive causal rows of one sequence
// (tiles[2t], tiles[2t + 1]: first row, count; count 0: nothing), four
// warps of 16 rows on tensor cores, an online softmax over key tiles of 64
// (keys 64 kt .. 64 kt + 63, the same tiles for every row). A row's result
// depends only on its query and keys, never on the other rows of its tile.
//
// Any type and head_dim <= 256 (flash_rows_{f32,bf16}): one warp per (row,
// head), online softmax over 32-key chunks in key order, in f32.

template <int HD>
__device__ void flash_prefill_mma(bf16* out, const bf16* q, const bf16* kp, const bf16* vp, const int* base,
                                  const int* prefix, const int* tiles, int heads, int kv_heads, float scale,
                                  long pool_offset) {
    __shared__ __align__(16) bf16 ks[AT_KEYS * (HD + 8)];
    __shared__ __align__(16) bf16 vs[AT_KEYS * (HD + 8)];
    __shared__ int n_max_s;
    kp += pool_offset;
    vp += pool_offset;
    // Longest tiles first (the list runs in row order).
    int t = gridDim.x - 1 - blockIdx.x, h = blockIdx.y;
    int first = tiles[2 * t], count = tiles[2 * t + 1];
    if (count == 0) return;
    int kvh = h / (heads / kv_heads);
    size_t width = (size_t)kv_heads * HD;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    int r0 = warp * 16 + g, r1 = r0 + 8;
    int n0 = r0 < count ? prefix[first + r0] : 0;
    int n1 = r1 < count ? prefix[first + r1] : 0;
    if (threadIdx.x == 0) n_max_s = 0;
    __syncthreads();
    if (t4 == 0) atomicMax(&n_max_s, max(n0, n1));
    unsigned qa[HD / 16][4];
    at_load_q<HD>(qa, r0 < count ? q + ((size_t)(first + r0) * heads + h) * HD : nullptr,
                  r1 < count ? q + ((size_t)(first + r1) * heads + h) * HD : nullptr, lane);
    __syncthreads();
    int n_max = n_max_s;
    int warp_n = max(n0, n1);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) warp_n = max(warp_n, __shfl_xor_sync(0xffffffffu, warp_n, o));
    long b = base[first];
    float sl2 = scale * 1.4426950408889634f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    float o[HD / 8][4];
#pragma unroll
    for (int nd = 0; nd < HD / 8; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.f;
    for (int k0 = 0; k0 < n_max; k0 += AT_KEYS) {
        __syncthreads();  // the previous tile is consumed
        at_load_tile<HD>(ks, vs, kp, vp, width, kvh, [&](int i) { return k0 + i < n_max ? b + k0 + i : -1L; });
        at_cp_wait_all();
        __syncthreads();
        if (k0 >= warp_n) continue;
        float s[AT_KEYS / 8][4];
        at_scores<HD>(s, qa, ks, lane);
        float mx0, mx1;
        at_mask_max(s, n0 - k0, n1 - k0, lane, mx0, mx1);
        float nm0 = fmaxf(m0, mx0), nm1 = fmaxf(m1, mx1);
        // Rescale what came before (nothing yet: factor 0 on zeros).
        float a0 = m0 == -INFINITY ? 0.f : exp2f((m0 - nm0) * sl2);
        float a1 = m1 == -INFINITY ? 0.f : exp2f((m1 - nm1) * sl2);
        float t0, t1;
        at_exp_sum(s, nm0, nm1, sl2, t0, t1);
        l0 = l0 * a0 + t0;
        l1 = l1 * a1 + t1;
        m0 = nm0;
        m1 = nm1;
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++) {
            o[nd][0] *= a0;
            o[nd][1] *= a0;
            o[nd][2] *= a1;
            o[nd][3] *= a1;
        }
        at_pv<HD>(o, s, vs, lane);
    }
    float i0 = 1.f / l0, i1 = 1.f / l1;
#pragma unroll
    for (int nd = 0; nd < HD / 8; nd++) {
        int d = nd * 8 + 2 * t4;
        if (r0 < count) {
            bf16* dst = out + ((size_t)(first + r0) * heads + h) * HD + d;
            *(unsigned*)dst = at_pack(o[nd][0] * i0, o[nd][1] * i0);
        }
        if (r1 < count) {
            bf16* dst = out + ((size_t)(first + r1) * heads + h) * HD + d;
            *(unsigned*)dst = at_pack(o[nd][2] * i1, o[nd][3] * i1);
        }
    }
}

#define P_FLASH_MMA (bf16* out, const bf16* q, const bf16* kp, const bf16* vp, const int* base, const int* prefix, const int* tiles, int heads, int kv_heads, float scale, long pool_offset)
#define A_FLASH_MMA (out, q, kp, vp, base, prefix, tiles, heads, kv_heads, scale, pool_offset)
extern "C" __global__ void __launch_bounds__(AT_THREADS) flash_prefill_mma_32_bf16 P_FLASH_MMA {
    pdl_enter();
    flash_prefill_mma<32> A_FLASH_MMA;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) flash_prefill_mma_64_bf16 P_FLASH_MMA {
    pdl_enter();
    flash_prefill_mma<64> A_FLASH_MMA;
}
extern "C" __global__ void __launch_bounds__(AT_THREADS) flash_prefill_mma_128_bf16 P_FLASH_MMA {
    pdl_enter();
    flash_prefill_mma<128> A_FLASH_MMA;
}

// One warp per (causal row, head); head_dim <= 256. Block: 4 warps, rows
// 4 blockIdx.x + warp, head blockIdx.y.
template <typename T>
__device__ void flash_rows(T* out, const T* q, const T* kp, const T* vp, const int* base, const int* prefix,
                           const int* extra_off, int rows, int heads, int kv_heads, int head_dim, float scale,
                           long pool_offset) {
    __shared__ float qs[4][256];
    kp += pool_offset;
    vp += pool_offset;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int r = blockIdx.x * 4 + warp, h = blockIdx.y;
    if (r >= rows || extra_off[r + 1] != extra_off[r]) return;
    int n = prefix[r], kvh = h / (heads / kv_heads);
    size_t width = (size_t)kv_heads * head_dim;
    const T* kb = kp + (size_t)base[r] * width + (size_t)kvh * head_dim;
    const T* vb = vp + (size_t)base[r] * width + (size_t)kvh * head_dim;
    const T* qr = q + ((size_t)r * heads + h) * head_dim;
    for (int d = lane; d < head_dim; d += 32) qs[warp][d] = ld(&qr[d]);
    __syncwarp();
    float m = -INFINITY, l = 0.f, acc[8];
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = 0.f;
    for (int j0 = 0; j0 < n; j0 += 32) {
        int j = j0 + lane;
        float s = -INFINITY;
        if (j < n) {
            const T* k = kb + (size_t)j * width;
            float a = 0.f;
            for (int d = 0; d < head_dim; d++) a = fmaf(qs[warp][d], ld(&k[d]), a);
            s = a * scale;
        }
        float cm = s;
        for (int o = 16; o > 0; o >>= 1) cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, o));
        float nm = fmaxf(m, cm);
        float alpha = m == -INFINITY ? 0.f : expf(m - nm);
        float p = j < n ? expf(s - nm) : 0.f;
        float ps = p;
        for (int o = 16; o > 0; o >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
        l = l * alpha + ps;
        m = nm;
#pragma unroll
        for (int i = 0; i < 8; i++) acc[i] *= alpha;
        int last = min(32, n - j0);
        for (int jj = 0; jj < last; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            const T* v = vb + (size_t)(j0 + jj) * width;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                int d = lane + 32 * i;
                if (d < head_dim) acc[i] = fmaf(pj, ld(&v[d]), acc[i]);
            }
        }
    }
    T* o = out + ((size_t)r * heads + h) * head_dim;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int d = lane + 32 * i;
        if (d < head_dim) st(&o[d], acc[i] / l);
    }
}

#define P_FLASH_ROWS(T) (T* out, const T* q, const T* kp, const T* vp, const int* base, const int* prefix, const int* extra_off, int rows, int heads, int kv_heads, int head_dim, float scale, long pool_offset)
#define A_FLASH_ROWS (out, q, kp, vp, base, prefix, extra_off, rows, heads, kv_heads, head_dim, scale, pool_offset)
BOTH(flash_rows, P_FLASH_ROWS, A_FLASH_ROWS)
