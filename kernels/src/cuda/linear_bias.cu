
// ---------------------------------------------------------------------------
// The bias pass of the cuBLAS linear (above the batch-invariant row count).

// Adds bias[n] to every row of y[m, n] (after a cuBLAS GEMM).
template <typename T>
__device__ void add_bias(T* y, const T* bias, long total, int n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x)
        st(&y[i], ld(&y[i]) + ld(&bias[i % n]));
}

#define P_BIAS(T) (T* y, const T* bias, long total, int n)
BOTH(add_bias, P_BIAS, (y, bias, total, n))
