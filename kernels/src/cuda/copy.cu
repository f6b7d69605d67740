
// ---------------------------------------------------------------------------
// Row copies (no arithmetic): the embedding gather, column copies, and the
// KV compaction after verification.

// out[r] = table[ids[r]]; grid: rows.
template <typename T>
__device__ void embedding_gather(T* out, const T* table, const unsigned int* ids, int hidden) {
    const T* src = table + (size_t)ids[blockIdx.x] * hidden;
    T* dst = out + (size_t)blockIdx.x * hidden;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = src[i];
}

// dst[r, off + j] = src[r, j] for rows of width w into rows of width dst_w. grid: rows.
template <typename T>
__device__ void copy_cols(T* dst, const T* src, int w, int dst_w, int off) {
    const T* s = src + (size_t)blockIdx.x * w;
    T* d = dst + (size_t)blockIdx.x * dst_w + off;
    for (int j = threadIdx.x; j < w; j += blockDim.x) d[j] = s[j];
}

// kv_commit: for every layer (grid.y) and sequence (grid.x), moves pool rows
// src[i] -> dst[i] for i in off[s]..off[s+1], in order (dst <= src, ascending);
// vp null: keys only (a latent-attention cache).
template <typename T>
__device__ void kv_commit(T* kp, T* vp, const int* src, const int* dst, const int* off, int width, long layer_stride) {
    T* k = kp + blockIdx.y * layer_stride;
    T* v = vp ? vp + blockIdx.y * layer_stride : nullptr;
    for (int i = off[blockIdx.x]; i < off[blockIdx.x + 1]; i++) {
        size_t s = (size_t)src[i] * width, d = (size_t)dst[i] * width;
        if (s != d) {
            for (int w = threadIdx.x; w < width; w += blockDim.x) {
                k[d + w] = k[s + w];
                if (v) v[d + w] = v[s + w];
            }
        }
        __syncthreads();
    }
}

#define P_EMB(T) (T* out, const T* table, const unsigned int* ids, int hidden)
BOTH(embedding_gather, P_EMB, (out, table, ids, hidden))
#define P_COPYC(T) (T* dst, const T* src, int w, int dst_w, int off)
BOTH(copy_cols, P_COPYC, (dst, src, w, dst_w, off))
#define P_KV(T) (T* kp, T* vp, const int* src, const int* dst, const int* off, int width, long layer_stride)
BOTH(kv_commit, P_KV, (kp, vp, src, dst, off, width, layer_stride))

// A forward's inputs staged as one array of 32-bit words (staged_words.rs),
// spread over their buffers: block f copies field f, whose row of `table`
// is (device address, first word in `src`, words). It triggers no early
// launch: the next kernel starts once every field is written, so no kernel
// after it can read an input before it is there.
extern "C" __global__ void scatter_words(const unsigned int* src, const unsigned long long* table) {
    pdl_wait();
    const unsigned long long* f = table + 3 * blockIdx.x;
    unsigned int* dst = (unsigned int*)f[0];
    const unsigned int* from = src + f[1];
    unsigned int n = (unsigned int)f[2];
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = from[i];
}
