
// ---------------------------------------------------------------------------
// RMSNorm, with the residual add fused.

// residual += delta (when delta is not null); out = rmsnorm(residual) * w. grid: rows.
// Rows whose width is a multiple of 16 bytes and fits 4 vectors per thread
// stay in registers (one read of each input); others take a scalar loop.
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

#define P_RMS(T) (T* out, T* residual, const T* delta, const T* w, float eps, int hidden)
BOTH(rms_norm_residual, P_RMS, (out, residual, delta, w, eps, hidden))
