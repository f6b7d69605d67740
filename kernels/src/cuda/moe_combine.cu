
// ---------------------------------------------------------------------------
// The experts' output of a row: combined alone (moe_combine), or combined
// into the residual stream by the next RMSNorm (moe_combine_norm, one launch
// fewer a layer), the same bits either way.

// Row r's combine: sum_j wts[r, j] * yexp[r, j] over its routes in order
// (ascending expert id; multiply, then add: no fusing), then + shared[r]
// when there are shared experts, rounded to T as a kernel stores it. The
// down product leaves yexp by route ([rows, top_k, hidden]), so a thread's
// loads of the routes' values and weights depend on nothing loaded before
// them and go out together.
template <typename T>
struct ExpertsDelta {
    const T* yexp;    // row r's routes
    const T* shared;  // row r's shared experts' output, or null
    const float* wt;  // row r's route weights
    int top_k, hidden;
    const T* attn;    // row r's attention output not yet in the residual (moe_route's norm), or null
    __device__ bool has() const { return true; }
    // residual + attn rounded to T, as rms_norm_residual would have stored it.
    __device__ void pre(int i, float* v) const {
        if (!attn) return;
        constexpr int VEC = 16 / sizeof(T);
        float a[VEC];
        ld16(attn + i, a);
        add_as_stored<T>(v, a);
    }
    __device__ float pre_one(int i, float x) const {
        if (!attn) return x;
        T t;
        st(&t, x + ld(&attn[i]));
        return ld(&t);
    }
    __device__ void vec(int i, float* v) const {
        constexpr int VEC = 16 / sizeof(T);
        float acc[VEC];
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[e] = 0.f;
        float sv[VEC];
        if (shared) ld16(shared + i, sv);
        // Eight routes' loads in flight together, then added in order (a loop
        // of one load a route waited on memory once a route past the
        // compiler's unrolling).
        for (int j0 = 0; j0 < top_k; j0 += 8) {
            uint4 y[8];
            float w[8];
#pragma unroll
            for (int u = 0; u < 8; u++) {
                if (j0 + u < top_k) {
                    y[u] = *(const uint4*)(yexp + (size_t)(j0 + u) * hidden + i);
                    w[u] = wt[j0 + u];
                }
            }
#pragma unroll
            for (int u = 0; u < 8; u++) {
                if (j0 + u < top_k) {
                    float yv[VEC];
                    unpack16<T>(y[u], yv);
#pragma unroll
                    for (int e = 0; e < VEC; e++) acc[e] = __fadd_rn(acc[e], __fmul_rn(yv[e], w[u]));
                }
            }
        }
#pragma unroll
        for (int e = 0; e < VEC; e++) {
            if (shared) acc[e] = __fadd_rn(acc[e], sv[e]);
            T t;
            st(&t, acc[e]);
            v[e] = ld(&t);
        }
    }
    __device__ float one(int i) const {
        float acc = 0.f;
#pragma unroll 16
        for (int j = 0; j < top_k; j++) acc = __fadd_rn(acc, __fmul_rn(ld(&yexp[(size_t)j * hidden + i]), wt[j]));
        if (shared) acc = __fadd_rn(acc, ld(&shared[i]));
        T t;
        st(&t, acc);
        return ld(&t);
    }
};

// Row blockIdx.x's combine (and its attention output, when not yet added).
template <typename T>
__device__ ExpertsDelta<T> moe_combine_row(const T* yexp, const T* shared, const float* wts, int top_k, int hidden,
                                           const T* attn = nullptr) {
    size_t r = blockIdx.x;
    return ExpertsDelta<T>{yexp + r * top_k * hidden, shared ? shared + r * hidden : nullptr, wts + r * top_k, top_k,
                           hidden, attn ? attn + r * hidden : nullptr};
}

// out[r] = row r's combine. grid: (rows, column blocks), a column a thread.
template <typename T>
__device__ void moe_combine(T* out, const T* yexp, const T* shared, const float* wts, int top_k, int hidden) {
    ExpertsDelta<T> dl = moe_combine_row(yexp, shared, wts, top_k, hidden);
    for (int d = blockIdx.y * blockDim.x + threadIdx.x; d < hidden; d += gridDim.y * blockDim.x)
        st(&out[(size_t)blockIdx.x * hidden + d], dl.one(d));
}

#define P_MOE_COMBINE(T) (T* out, const T* yexp, const T* shared, const float* wts, int top_k, int hidden)
BOTH(moe_combine, P_MOE_COMBINE, (out, yexp, shared, wts, top_k, hidden))

// residual += attn when given (the layer's attention output, left out of
// the residual by a routing that ran the post-attention norm itself:
// moe_route's norm), then residual += row r's combine (as moe_combine
// stores it), then out = rmsnorm(residual) * w (rms_norm_residual's
// arithmetic). grid: rows. Enters as a programmatic dependent itself
// (rms_norm_delta).
template <typename T>
__device__ void moe_combine_norm(T* out, T* residual, const T* yexp, const T* shared, const float* wts, int top_k,
                                 const T* w, float eps, int hidden, const T* attn) {
    auto make = [&]() { return moe_combine_row(yexp, shared, wts, top_k, hidden, attn); };
    rms_norm_delta(out, residual, make, w, eps, hidden);
}

#define P_MOE_COMBINE_NORM(T) (T* out, T* residual, const T* yexp, const T* shared, const float* wts, int top_k, const T* w, float eps, int hidden, const T* attn)
KERNELS_BOUNDED(moe_combine_norm, moe_combine_norm, T_ONLY, P_MOE_COMBINE_NORM, (out, residual, yexp, shared, wts, top_k, w, eps, hidden, attn), NO_ENTER, NORM_THREADS)
