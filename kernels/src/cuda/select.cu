
// ---------------------------------------------------------------------------
// Selection over rows of logits: argmax (one block per row, or split over
// chunks of a row), top-k, and top-k log-probabilities. Ties go to the lower
// index throughout.

// (value, index) argmax across the warp (a fixed xor tree): larger value
// wins, the lower index on a tie.
__device__ __forceinline__ void warp_argmax(float& v, int& i) {
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
    }
}

// (value, index) argmax across the block: larger value wins, the lower index on a tie.
__device__ void block_argmax(float& v, int& i) {
    __shared__ float sv[32];
    __shared__ int si[32];
    warp_argmax(v, i);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) { sv[warp] = v; si[warp] = i; }
    __syncthreads();
    int nw = blockDim.x >> 5;
    if (threadIdx.x < nw) { v = sv[threadIdx.x]; i = si[threadIdx.x]; } else { v = -INFINITY; i = 0x7fffffff; }
    if (warp == 0) warp_argmax(v, i);
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
// each (+ base) goes to out_idx[round], value(v) to out_val[round]. Fewer
// than k values leave (-inf, index 0x7fffffff) in the rounds past them.
template <typename T, typename F>
__device__ __forceinline__ void top_k_pick(int* out_idx, float* out_val, const T* row, int n, int k, int base, F value) {
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
            out_idx[round] = bi == 0x7fffffff ? bi : bi + base;
            out_val[round] = value(bv);
        }
        __syncthreads();
    }
}

// The k largest of x[r, :n], largest first (ties to the lower index); k <= 32. grid: rows.
template <typename T>
__device__ void top_k_rows(int* out_idx, float* out_val, const T* x, int n, int k) {
    const T* row = x + (size_t)blockIdx.x * n;
    top_k_pick(out_idx + blockIdx.x * k, out_val + blockIdx.x * k, row, n, k, 0, [](float v) { return v; });
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
    warp_argmax(bv, bi);
    if (threadIdx.x == 0) out[blockIdx.x] = bi;
}

// The largest of v[:n] and the sum of exp(v[i] - that), across the block
// (each thread's strided terms, then the block's reductions).
template <typename T>
__device__ __forceinline__ void block_max_sum_exp(const T* v, int n, float& mx, float& sum) {
    mx = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, ld(&v[i]));
    mx = block_max(mx);
    sum = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += expf(ld(&v[i]) - mx);
    sum = block_sum(sum);
}

// The k <= 32 largest log-probabilities of each row of logits x[r, :n]
// (log_softmax, then top-k; ties to the lower index): what a draft tree
// search needs, without copying the logits to the host. grid: rows.
template <typename T>
__device__ void top_k_logprobs(int* out_idx, float* out_logp, const T* x, int n, int k) {
    const T* row = x + (size_t)blockIdx.x * n;
    float mx, sum;
    block_max_sum_exp(row, n, mx, sum);
    float log_sum = logf(sum);
    top_k_pick(out_idx + blockIdx.x * k, out_logp + blockIdx.x * k, row, n, k, 0,
               [=](float v) { return v - mx - log_sum; });
}

// Split top-k log-probabilities, pass 1: block (row, split) over its chunk
// of the row: the chunk's max m, its sum of exp(x - m) (stats[2 * slot],
// stats[2 * slot + 1]) and its k largest logits with their row indices
// (cand_*[slot * k ..]), slot = row * splits + split. grid: (rows, splits).
template <typename T>
__device__ void top_k_logprobs_partial(float* cand_val, int* cand_idx, float* stats, const T* x, int n,
                                       int chunk, int k) {
    const int start = blockIdx.y * chunk, len = min(n, start + chunk) - start;
    const T* part = x + (size_t)blockIdx.x * n + start;
    float mx, sum;
    block_max_sum_exp(part, len, mx, sum);
    const int slot = blockIdx.x * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) {
        stats[2 * slot] = mx;
        stats[2 * slot + 1] = sum;
    }
    top_k_pick(cand_idx + slot * k, cand_val + slot * k, part, len, k, start, [](float v) { return v; });
}

// Split top-k log-probabilities, pass 2: one warp a row. The row's max M
// and log of its sum of exp(x - M) from the splits' stats (lanes over the
// splits, a fixed xor tree: one order whatever the batch), then k rounds
// of a warp argmax over the splits' candidates not picked yet (ties to
// the lower index): out_idx / out_logp [row * k + round] = (index, x - M -
// log sum). grid: rows; 32 threads.
extern "C" __global__ void top_k_logprobs_final(int* out_idx, float* out_logp, const float* cand_val,
                                                const int* cand_idx, const float* stats, int splits, int k) {
    pdl_enter();
    const float* st = stats + 2 * (size_t)blockIdx.x * splits;
    float m = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += 32) m = fmaxf(m, st[2 * s]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.f;
    for (int s = threadIdx.x; s < splits; s += 32) sum += st[2 * s + 1] * expf(st[2 * s] - m);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float log_sum = logf(sum);
    const int cands = splits * k;
    const float* cv = cand_val + (size_t)blockIdx.x * cands;
    const int* ci = cand_idx + (size_t)blockIdx.x * cands;
    __shared__ int picked[32];
    for (int round = 0; round < k; round++) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int c = threadIdx.x; c < cands; c += 32) {
            const int i = ci[c];
            bool taken = false;
            for (int p = 0; p < round; p++) taken |= picked[p] == i;
            const float v = cv[c];
            if (!taken && i != 0x7fffffff && (v > bv || (v == bv && i < bi))) { bv = v; bi = i; }
        }
        warp_argmax(bv, bi);
        if (threadIdx.x == 0) {
            picked[round] = bi;
            out_idx[blockIdx.x * k + round] = bi;
            out_logp[blockIdx.x * k + round] = bv - m - log_sum;
        }
        __syncwarp();
    }
}

#define P_ARGMAX(T) (int* out, const T* x, int n)
BOTH(argmax_rows, P_ARGMAX, (out, x, n))
#define P_TOPK(T) (int* out_idx, float* out_val, const T* x, int n, int k)
BOTH(top_k_rows, P_TOPK, (out_idx, out_val, x, n, k))
#define P_ARGMAX_PART(T) (float* vals, int* idxs, const T* x, int n, int chunk)
BOTH(argmax_partial, P_ARGMAX_PART, (vals, idxs, x, n, chunk))
#define P_TOPK_LOGP(T) (int* out_idx, float* out_logp, const T* x, int n, int k)
BOTH(top_k_logprobs, P_TOPK_LOGP, (out_idx, out_logp, x, n, k))
#define P_TOPK_LOGP_PART(T) (float* cand_val, int* cand_idx, float* stats, const T* x, int n, int chunk, int k)
BOTH(top_k_logprobs_partial, P_TOPK_LOGP_PART, (cand_val, cand_idx, stats, x, n, chunk, k))
