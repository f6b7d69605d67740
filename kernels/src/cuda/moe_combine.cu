
// ---------------------------------------------------------------------------
// The experts' output of a row: combined alone (moe_combine), or combined
// into the residual stream by the next RMSNorm (moe_combine_norm, one launch
// fewer a layer), the same bits either way.

// Row r's combine: sum_j wts[r, j] * yexp[pos[r, j]] over its slots in order
// (ascending expert id; multiply, then add: no fusing), then + shared[r]
// when there are shared experts, rounded to T as a kernel stores it. The
// slots' offsets and weights sit in shared memory (moe_combine_slots).
template <typename T>
struct ExpertsDelta {
    const T* yexp;
    const T* shared;
    const size_t* off;
    const float* wt;
    int top_k;
    __device__ bool has() const { return true; }
    __device__ void vec(int i, float* v) const {
        constexpr int VEC = 16 / sizeof(T);
        float acc[VEC];
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[e] = 0.f;
        for (int j = 0; j < top_k; j++) {
            float y[VEC];
            ld16(yexp + off[j] + i, y);
#pragma unroll
            for (int e = 0; e < VEC; e++) acc[e] = __fadd_rn(acc[e], __fmul_rn(y[e], wt[j]));
        }
        float sv[VEC];
        if (shared) ld16(shared + i, sv);
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
        for (int j = 0; j < top_k; j++) acc = __fadd_rn(acc, __fmul_rn(ld(&yexp[off[j] + i]), wt[j]));
        if (shared) acc = __fadd_rn(acc, ld(&shared[i]));
        T t;
        st(&t, acc);
        return ld(&t);
    }
};

// Row blockIdx.x's slots (pair offsets into yexp, weights) staged in shared
// memory, so that a thread's top_k loads are in flight together.
template <typename T>
__device__ ExpertsDelta<T> moe_combine_slots(const T* yexp, const T* shared, const int* pos, const float* wts,
                                             int top_k, int hidden) {
    __shared__ size_t off[16];
    __shared__ float wt[16];
    int r = blockIdx.x;
    if (threadIdx.x < top_k) {
        size_t i = (size_t)r * top_k + threadIdx.x;
        off[threadIdx.x] = (size_t)pos[i] * hidden;
        wt[threadIdx.x] = wts[i];
    }
    __syncthreads();
    return ExpertsDelta<T>{yexp, shared ? shared + (size_t)r * hidden : nullptr, off, wt, top_k};
}

// out[r] = row r's combine. grid: (rows, column blocks), a column a thread.
template <typename T>
__device__ void moe_combine(T* out, const T* yexp, const T* shared, const int* pos, const float* wts, int top_k,
                            int hidden) {
    ExpertsDelta<T> dl = moe_combine_slots(yexp, shared, pos, wts, top_k, hidden);
    for (int d = blockIdx.y * blockDim.x + threadIdx.x; d < hidden; d += gridDim.y * blockDim.x)
        st(&out[(size_t)blockIdx.x * hidden + d], dl.one(d));
}

#define P_MOE_COMBINE(T) (T* out, const T* yexp, const T* shared, const int* pos, const float* wts, int top_k, int hidden)
BOTH(moe_combine, P_MOE_COMBINE, (out, yexp, shared, pos, wts, top_k, hidden))

// residual += row r's combine (as moe_combine stores it), then out =
// rmsnorm(residual) * w (rms_norm_residual's arithmetic). grid: rows.
// Enters as a programmatic dependent itself (rms_norm_delta).
template <typename T>
__device__ void moe_combine_norm(T* out, T* residual, const T* yexp, const T* shared, const int* pos, const float* wts,
                                 int top_k, const T* w, float eps, int hidden) {
    auto make = [&]() { return moe_combine_slots(yexp, shared, pos, wts, top_k, hidden); };
    rms_norm_delta(out, residual, make, w, eps, hidden);
}

#define P_MOE_COMBINE_NORM(T) (T* out, T* residual, const T* yexp, const T* shared, const int* pos, const float* wts, int top_k, const T* w, float eps, int hidden)
KERNELS_ENTERED(moe_combine_norm, moe_combine_norm, T_ONLY, P_MOE_COMBINE_NORM, (out, residual, yexp, shared, pos, wts, top_k, w, eps, hidden), NO_ENTER)
