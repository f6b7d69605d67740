
// ---------------------------------------------------------------------------
// SiLU and multiply: gate and up as two tensors, or as one fused gate|up
// projection (halves or interleaved).

// out = silu(gate) * up, element-wise over n values.
template <typename T>
__device__ void silu_mul(T* out, const T* gate, const T* up, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float g = ld(&gate[i]);
        st(&out[i], SILU_AND_MUL(g, ld(&up[i])));
    }
}

// out[r, i] = silu(gu[r, 2i]) * gu[r, 2i + 1] (interleaved gate|up, after a cuBLAS GEMM).
template <typename T>
__device__ void silu_mul_interleaved(T* out, const T* gu, long rows, int inner) {
    long total = rows * inner;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        float g = ld(&gu[2 * i]);
        st(&out[i], SILU_AND_MUL(g, ld(&gu[2 * i + 1])));
    }
}

// out[r, i] = silu(gu[r, i]) * gu[r, inner + i] (the fused gate|up projection).
template <typename T>
__device__ void silu_mul_fused(T* out, const T* gu, long rows, int inner) {
    long total = rows * inner;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        long r = i / inner, c = i % inner;
        float g = ld(&gu[r * 2 * inner + c]);
        st(&out[i], SILU_AND_MUL(g, ld(&gu[r * 2 * inner + inner + c])));
    }
}

#define P_SILU(T) (T* out, const T* gate, const T* up, long n)
BOTH(silu_mul, P_SILU, (out, gate, up, n))
#define P_SMI(T) (T* out, const T* gu, long rows, int inner)
BOTH(silu_mul_interleaved, P_SMI, (out, gu, rows, inner))
#define P_SMF(T) (T* out, const T* gu, long rows, int inner)
BOTH(silu_mul_fused, P_SMF, (out, gu, rows, inner))
