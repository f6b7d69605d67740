
// ---------------------------------------------------------------------------
// Selection over rows of logits: argmax (one block per row, or split over
// chunks of a row), top-k, and top-k log-probabilities. Ties go to the lower
// index throughout.

// (value, index) argmax across the block: larger value wins, the lower index on a tie.
__device__ void block_argmax(float& v, int& i) {
    __shared__ float sv[32];
    __shared__ int si[32];
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) { sv[warp] = v; si[warp] = i; }
    __syncthreads();
    int nw = blockDim.x >> 5;
    if (threadIdx.x < nw) { v = sv[threadIdx.x]; i = si[threadIdx.x]; } else { v = -INFINITY; i = 0x7fffffff; }
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, v, o);
            int oi = __shfl_xor_sync(0xffffffffu, i, o);
            if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
        }
    }
    if (threadIdx.x == 0) { sv[0] = v; si[0] = i; }
    __syncthreads();
    v = sv[0];
    i = si[0];
}

// out[r] = argmax of x[r, :n]; grid: rows.
template <typename T>
__device__ void argmax_rows(int* out, const T* x, int n) {
    const T* row = x + (size_t)blockIdx.x * n;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ld(&row[i]);
        if (v > bv) { bv = v; bi = i; }
    }
    block_argmax(bv, bi);
    if (threadIdx.x == 0) out[blockIdx.x] = bi;
}

// The k <= 32 largest of row[:n], largest first (ties to the lower index), in
// k rounds of a block argmax over the values not picked yet: the index of
// each goes to out_idx[blockIdx.x * k + round], value(v) to out_val there.
template <typename T, typename F>
__device__ __forceinline__ void top_k_pick(int* out_idx, float* out_val, const T* row, int n, int k, F value) {
    __shared__ int picked[32];
    for (int round = 0; round < k; round++) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            bool taken = false;
            for (int p = 0; p < round; p++) taken |= picked[p] == i;
            float v = ld(&row[i]);
            if (!taken && v > bv) { bv = v; bi = i; }
        }
        block_argmax(bv, bi);
        if (threadIdx.x == 0) {
            picked[round] = bi;
            out_idx[blockIdx.x * k + round] = bi;
            out_val[blockIdx.x * k + round] = value(bv);
        }
        __syncthreads();
    }
}

// The k largest of x[r, :n], largest first (ties to the lower index); k <= 32. grid: rows.
template <typename T>
__device__ void top_k_rows(int* out_idx, float* out_val, const T* x, int n, int k) {
    const T* row = x + (size_t)blockIdx.x * n;
    top_k_pick(out_idx, out_val, row, n, k, [](float v) { return v; });
}

// Split argmax, pass 1: block (row, split) finds the largest of its chunk.
template <typename T>
__device__ void argmax_partial(float* vals, int* idxs, const T* x, int n, int chunk) {
    const T* row = x + (size_t)blockIdx.x * n;
    int start = blockIdx.y * chunk, end = min(n, start + chunk);
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) {
        float v = ld(&row[i]);
        if (v > bv) { bv = v; bi = i; }
    }
    block_argmax(bv, bi);
    if (threadIdx.x == 0) {
        vals[blockIdx.x * gridDim.y + blockIdx.y] = bv;
        idxs[blockIdx.x * gridDim.y + blockIdx.y] = bi;
    }
}

// Split argmax, pass 2: one warp per row over its splits (ties to the lower index).
extern "C" __global__ void argmax_final(int* out, const float* vals, const int* idxs, int splits) {
    pdl_enter();
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int s = threadIdx.x; s < splits; s += 32) {
        float v = vals[blockIdx.x * splits + s];
        int i = idxs[blockIdx.x * splits + s];
        if (v > bv || (v == bv && i < bi)) { bv = v; bi = i; }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
    }
    if (threadIdx.x == 0) out[blockIdx.x] = bi;
}

// The k <= 32 largest log-probabilities of each row of logits x[r, :n]
// (log_softmax, then top-k; ties to the lower index): what a draft tree
// search needs, without copying the logits to the host. grid: rows.
template <typename T>
__device__ void top_k_logprobs(int* out_idx, float* out_logp, const T* x, int n, int k) {
    const T* row = x + (size_t)blockIdx.x * n;
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, ld(&row[i]));
    mx = block_max(mx);
    float sum = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += expf(ld(&row[i]) - mx);
    float log_sum = logf(block_sum(sum));
    top_k_pick(out_idx, out_logp, row, n, k, [=](float v) { return v - mx - log_sum; });
}

#define P_ARGMAX(T) (int* out, const T* x, int n)
BOTH(argmax_rows, P_ARGMAX, (out, x, n))
#define P_TOPK(T) (int* out_idx, float* out_val, const T* x, int n, int k)
BOTH(top_k_rows, P_TOPK, (out_idx, out_val, x, n, k))
#define P_ARGMAX_PART(T) (float* vals, int* idxs, const T* x, int n, int chunk)
BOTH(argmax_partial, P_ARGMAX_PART, (vals, idxs, x, n, chunk))
#define P_TOPK_LOGP(T) (int* out_idx, float* out_logp, const T* x, int n, int k)
BOTH(top_k_logprobs, P_TOPK_LOGP, (out_idx, out_logp, x, n, k))
