// ---------------------------------------------------------------------------
// Weights as stored in a checkpoint (f32, bf16 or f16) placed into a device
// buffer of T: the element conversion and a fused layout's strided slot in
// one pass (the loader uploads stored bytes and runs this on the device).

// Stored element i of src as a float; dtype 0 = f32, 1 = bf16, 2 = f16.
__device__ __forceinline__ float stored_float(const void* src, int dtype, long i) {
    if (dtype == 0) return ((const float*)src)[i];
    unsigned short b = ((const unsigned short*)src)[i];
    if (dtype == 1) return __uint_as_float(((unsigned int)b) << 16);
    float v;
    asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(b));
    return v;
}

// dst[offset + r * stride + c] = src[r * cols + c] for rows x cols stored
// elements (grid-stride).
template <typename T>
__device__ void place_rows(T* dst, const void* src, int dtype, long rows, int cols, long stride, long offset) {
    long n = rows * cols;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        long r = i / cols;
        long c = i - r * cols;
        st(&dst[offset + r * stride + c], stored_float(src, dtype, i));
    }
}

#define P_PLACE(T) (T* dst, const void* src, int dtype, long rows, int cols, long stride, long offset)
BOTH(place_rows, P_PLACE, (dst, src, dtype, rows, cols, stride, offset))
