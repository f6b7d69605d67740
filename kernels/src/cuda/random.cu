
// ---------------------------------------------------------------------------
// Random fills made on the device (random weights without a host upload).

// x[i] = offset + scale * u_i, u_i uniform in [-1, 1) from a hash of (seed, i).
template <typename T>
__device__ void fill_uniform(T* x, long n, unsigned long long seed, float scale, float offset) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        unsigned long long z = seed + (unsigned long long)i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        float u = (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
        st(&x[i], offset + scale * u);
    }
}

#define P_FILL(T) (T* x, long n, unsigned long long seed, float scale, float offset)
BOTH(fill_uniform, P_FILL, (x, n, seed, scale, offset))
