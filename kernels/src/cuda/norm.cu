
// ---------------------------------------------------------------------------
// RMSNorm, with the residual add fused.

// Threads of a norm's block (norm.rs: NORM_THREADS).
#define NORM_THREADS 512

// residual += delta (when there is one: the row's values rounded to T as a
// kernel would have stored them); out = rmsnorm(residual) * w, for row
// blockIdx.x. The kernel's entry: the norm's weights are loaded (into
// registers, or asked of L2 on the scalar path) before the wait on the
// previous kernel (no kernel writes them), then `make_delta()` (after the
// wait) gives the delta: `has()`, `vec(i, v)` (its VEC values from column i,
// i a multiple of VEC) and `one(i)`, and what comes to the residual before
// it: `pre(i, v)` and `pre_one(i, x)` (an addend not yet added to it, rounded
// to T as a kernel would have stored the sum; StoredDelta's do nothing). Rows whose width is a multiple of 16
// bytes and fits 4 vectors per thread stay in registers (one read of each
// input); others take a scalar loop.
template <typename T, typename F>
__device__ void rms_norm_delta(T* out, T* residual, F make_delta, const T* w, float eps, int hidden) {
    constexpr int VEC = 16 / sizeof(T);
    T* x = residual + (size_t)blockIdx.x * hidden;
    T* o = out + (size_t)blockIdx.x * hidden;
    int nv = hidden / VEC;
    bool fits = hidden % VEC == 0 && nv <= 4 * (int)blockDim.x;
    float wv[4][VEC];
    if (fits) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int i = (threadIdx.x + u * blockDim.x) * VEC;
            if (i < hidden) ld16(w + i, wv[u]);
        }
    } else {
        prefetch_l2_span(w, (size_t)hidden * sizeof(T), threadIdx.x, blockDim.x);
    }
    pdl_enter();
    auto delta = make_delta();
    bool d = delta.has();
    if (fits) {
        float v[4][VEC];
        float ss = 0.f;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int i = (threadIdx.x + u * blockDim.x) * VEC;
            if (i < hidden) {
                ld16(x + i, v[u]);
                delta.pre(i, v[u]);
                if (d) {
                    float dv[VEC];
                    delta.vec(i, dv);
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
                float r[VEC];
#pragma unroll
                for (int e = 0; e < VEC; e++) r[e] = v[u][e] * inv * wv[u][e];
                st16(o + i, r);
            }
        }
        return;
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        if (d) st(&x[i], delta.pre_one(i, ld(&x[i])) + delta.one(i));
        float v = ld(&x[i]);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss) / hidden + eps);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) st(&o[i], ld(&x[i]) * inv * ld(&w[i]));
}

// A delta stored as a [rows, hidden] tensor (or none: a null pointer).
template <typename T>
struct StoredDelta {
    const T* d;
    __device__ bool has() const { return d != nullptr; }
    __device__ void vec(int i, float* v) const { ld16(d + i, v); }
    __device__ float one(int i) const { return ld(&d[i]); }
    __device__ void pre(int, float*) const {}
    __device__ float pre_one(int, float x) const { return x; }
};

// v[e] = v[e] + d[e] rounded to T, as a kernel storing the sum would leave
// it (rms_norm_delta spells the same out in its tuned loop).
template <typename T>
__device__ __forceinline__ void add_as_stored(float* v, const float* d) {
#pragma unroll
    for (int e = 0; e < 16 / (int)sizeof(T); e++) {
        T t;
        st(&t, v[e] + d[e]);
        v[e] = ld(&t);
    }
}

// block_sum of a block of NORM_THREADS threads, in a block of NORM_THREADS
// / V: thread t holds the values s[j] of the virtual threads t + j *
// blockDim.x, and the sums run as block_sum's over the virtual block (each
// virtual warp's xor tree, then the virtual warps' sums by warp 0's): the
// same bits as block_sum with NORM_THREADS threads.
template <int V>
__device__ float block_sum_as_norm(const float (&s)[V]) {
    __shared__ float sh[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, real_warps = blockDim.x >> 5;
    float r[V];
#pragma unroll
    for (int j = 0; j < V; j++) {
        r[j] = s[j];
        for (int o = 16; o > 0; o >>= 1) r[j] += __shfl_xor_sync(0xffffffffu, r[j], o);
    }
    __syncthreads();
    if (lane == 0) {
#pragma unroll
        for (int j = 0; j < V; j++) sh[warp + j * real_warps] = r[j];
    }
    __syncthreads();
    int nw = NORM_THREADS >> 5;
    float v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.f;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

// rms_norm_row in a block of NORM_THREADS / V threads (see rms_norm_row).
template <int V, typename T>
__device__ void rms_norm_row_v(T* dst, T* keep, const T* x, const T* d, const T* w, float eps, int hidden) {
    constexpr int VEC = 16 / sizeof(T);
    float ss[V];
#pragma unroll
    for (int j = 0; j < V; j++) {
        ss[j] = 0.f;
        int vt = threadIdx.x + j * blockDim.x;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int i = (vt + u * NORM_THREADS) * VEC;
            if (i < hidden) {
                float v[VEC], dv[VEC];
                ld16(x + i, v);
                ld16(d + i, dv);
                add_as_stored<T>(v, dv);
                // The sum as T (exact: each value is T's), read back below.
                st16(dst + i, v);
#pragma unroll
                for (int e = 0; e < VEC; e++) ss[j] += v[e] * v[e];
            }
        }
    }
    float inv = rsqrtf(block_sum_as_norm<V>(ss) / hidden + eps);
#pragma unroll
    for (int j = 0; j < V; j++) {
        int vt = threadIdx.x + j * blockDim.x;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int i = (vt + u * NORM_THREADS) * VEC;
            if (i < hidden) {
                float v[VEC], wv[VEC], r[VEC];
                ld16(dst + i, v);
                ld16(w + i, wv);
#pragma unroll
                for (int e = 0; e < VEC; e++) r[e] = v[e] * inv * wv[e];
                st16(dst + i, r);
                if (keep) st16(keep + i, r);
            }
        }
    }
}

// Row `row`'s RMSNorm as rms_norm_delta's register path computes it in its
// NORM_THREADS threads (the same bits), in a block of NORM_THREADS or
// NORM_THREADS / 2 threads: v = x + d rounded to T, out = rmsnorm(v) * w,
// stored into `dst` (which holds v meanwhile) and, when not null, `keep`; x
// is not written. Needs hidden % VEC == 0 and hidden / VEC <= 4 *
// NORM_THREADS (moe_route_norm_fits in moe_route.rs); every thread of the
// block calls it.
template <typename T>
__device__ void rms_norm_row(T* dst, T* keep, const T* x, const T* d, const T* w, float eps, int hidden) {
    if (blockDim.x == NORM_THREADS) rms_norm_row_v<1>(dst, keep, x, d, w, eps, hidden);
    else rms_norm_row_v<2>(dst, keep, x, d, w, eps, hidden);
}

// residual += delta; out = rmsnorm(residual) * w. grid: rows. Enters as a
// programmatic dependent itself (rms_norm_delta).
template <typename T>
__device__ void rms_norm_residual(T* out, T* residual, const T* delta, const T* w, float eps, int hidden) {
    auto make = [&]() { return StoredDelta<T>{delta ? delta + (size_t)blockIdx.x * hidden : nullptr}; };
    rms_norm_delta(out, residual, make, w, eps, hidden);
}

#define P_RMS(T) (T* out, T* residual, const T* delta, const T* w, float eps, int hidden)
KERNELS_ENTERED(rms_norm_residual, rms_norm_residual, T_ONLY, P_RMS, (out, residual, delta, w, eps, hidden), NO_ENTER)
