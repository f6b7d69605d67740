
// ---------------------------------------------------------------------------
// A projection of one row with the RMSNorm before it in its prologue.
//
// At one row, the norm before a projection (rms_norm_residual,
// moe_combine_norm) is a launch of one block whose time is mostly latency:
// its wait on the kernel before, a few loads, a reduction, a store the
// projection then waits for. Here every block of the projection norms the row
// itself into shared memory after asking for its first weights, in the norm
// kernel's own reduction order (NormedRow: the same bits), and reads
// its tokens from there. The residual's new row (residual + the delta) is
// written once, by the block that finished its norm last (every other block
// has read the old row by then: the ticket is taken after the block's
// reduction, which needed all its loads), at its end; the ticket is zero
// between launches (that block resets it).

// The last step of block_sum over NORM_THREADS threads (block_sum_as_norm's):
// warp 0 adds the virtual warps' sums in `sh` (NORM_THREADS / 32 of them) in
// its xor tree.
__device__ __forceinline__ float norm_warps_sum(float* sh) {
    int nw = NORM_THREADS >> 5;
    float v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.f;
    if ((threadIdx.x >> 5) == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

// The most vectors of the row (16 bytes each) a thread of the block norms.
#define NORMED_ROW_VECTORS 4

// The `In` of linear_mma_pipelined that norms the row: `delta` as
// rms_norm_delta's (StoredDelta, ExpertsDelta of row 0); xs and vs are
// shared (hidden values each: the normed row, the residual's new row).
// Thread t owns the row's vectors t + k blockDim.x (at most
// NORMED_ROW_VECTORS): it asks for their norm weights before the wait, then
// makes their v = residual + delta two at a time (every load of the two in
// flight together) into vs, and scales them into xs. The sum of squares is
// summed from vs as rms_norm_delta's NORM_THREADS threads sum it (each
// virtual thread's vectors in order, each virtual warp's xor tree, warp 0's
// over the virtual warps): the same bits, whichever thread made a value.
template <class D>
struct NormedRow {
    bf16* residual;
    D delta;
    const bf16* w;
    float eps;
    int hidden;
    unsigned int* ticket;
    bf16* xs;
    bf16* vs;
    unsigned int arrived;  // thread 0's ticket (issued in wait, read in finish)
    // Two weight stages asked for before the wait: a one-tile block of k <=
    // 2 x 256 x parts (V2-Lite's q + kv_a) has every weight in flight while
    // it waits and norms.
    static constexpr int STAGES_EARLY = 2;
    __device__ void wait() {
        constexpr int VEC = 8;
        int nvec = hidden / VEC, bd = blockDim.x, tid = threadIdx.x;
        uint4 wq[NORMED_ROW_VECTORS];
#pragma unroll
        for (int k = 0; k < NORMED_ROW_VECTORS; k++)
            if (tid + k * bd < nvec) wq[k] = *(const uint4*)(w + (tid + k * bd) * VEC);
        pdl_wait();
        bool d = delta.has();
#pragma unroll 1
        for (int q0 = tid; q0 < nvec; q0 += 2 * bd) {
            // The second vector, or the first again (its loads unconditional).
            bool two = q0 + bd < nvec;
            int is[2] = {q0 * VEC, (two ? q0 + bd : q0) * VEC};
            float v0[VEC], v1[VEC], d0[VEC], d1[VEC];
            ld16(residual + is[0], v0);
            ld16(residual + is[1], v1);
            delta.pre(is[0], v0);
            delta.pre(is[1], v1);
            if (d) {
                float* const ds[2] = {d0, d1};
                delta.template vecs<2>(is, ds);
                add_as_stored<bf16>(v0, d0);
                add_as_stored<bf16>(v1, d1);
            }
            st16(vs + is[0], v0);
            if (two) st16(vs + is[1], v1);
        }
        __syncthreads();
        // The sum of squares from vs, virtual thread by virtual thread.
        __shared__ float sh[32];
        int lane = tid & 31, warp = tid >> 5, real_warps = bd >> 5;
#pragma unroll 1
        for (int j = 0; j < NORM_THREADS / bd; j++) {
            int vt = tid + j * bd;
            float ss = 0.f;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                int i = (vt + u * NORM_THREADS) * VEC;
                if (i < hidden) {
                    float v[VEC];
                    ld16(vs + i, v);
#pragma unroll
                    for (int e = 0; e < VEC; e++) ss += v[e] * v[e];
                }
            }
            for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
            if (lane == 0) sh[warp + j * real_warps] = ss;
        }
        __syncthreads();
        float inv = rsqrtf(norm_warps_sum(sh) / hidden + eps);
#pragma unroll
        for (int k = 0; k < NORMED_ROW_VECTORS; k++) {
            int i = (tid + k * bd) * VEC;
            if (i < hidden) {
                float v[VEC], wv[VEC], r[VEC];
                ld16(vs + i, v);
                unpack16<bf16>(wq[k], wv);
#pragma unroll
                for (int e = 0; e < VEC; e++) r[e] = v[e] * inv * wv[e];
                st16(xs + i, r);
            }
        }
        __syncthreads();
        // Relaxed: only its order after this block's reads matters, and
        // those have returned (the sums used them). The result is read at
        // the end, so no warp waits on the round trip.
        if (d && tid == 0) arrived = atomicAdd(ticket, 1u);
    }
    __device__ void finish() {
        if (!delta.has() || threadIdx.x >= 32) return;
        unsigned int a = __shfl_sync(0xffffffffu, arrived, 0);
        if (a != gridDim.x - 1) return;
        for (int i = threadIdx.x * 8; i < hidden; i += 32 * 8) *(uint4*)(residual + i) = *(const uint4*)(vs + i);
        if (threadIdx.x == 0) *ticket = 0u;
    }
};

// y = norm(residual + delta) W^T at one row on tensor cores (the pipelined
// one-tile kernel, GROUPS column tiles a block), residual += delta. flags:
// bit 0 the SiLU epilogue. Dynamic
// shared memory: the k slices' partial sums (as the tile kernels', when
// parts > 1), then the normed row and the new residual row (k values each).
template <int GROUPS, class D>
__device__ void linear_mma_normed(bf16* y, bf16* residual, const D& delta, const bf16* w, const bf16* bias, int k,
                                  int n, int parts, int flags, const bf16* norm_w, float eps, unsigned int* ticket) {
    extern __shared__ float tile_partial[];
    bf16* xs = (bf16*)(tile_partial + (parts > 1 ? GROUPS * parts * 4 * 32 : 0));
    int col0 = ((int)blockIdx.x * GROUPS + (int)(threadIdx.x >> 5) / parts) * 16;
    TileColumns out{y, bias, 1, n, parts, flags & 1, col0};
    NormedRow<D> in{residual, delta, norm_w, eps, k, ticket, xs, xs + k, 0u};
    linear_mma_pipelined<1, 8>(xs, w, 1, k, n, parts, tile_partial, out, in);
}

// The delta a stored tensor (a dense MLP's output) or none (null).
#define P_NORMED_STORED \
    (bf16 * y, bf16 * residual, const bf16* d, const bf16* w, const bf16* bias, int k, int n, int parts, int flags, \
     const bf16* norm_w, float eps, unsigned int* ticket)
// The delta the experts' combine of the row (moe_combine_norm's, its
// attention output first when not null).
#define P_NORMED_EXPERTS \
    (bf16 * y, bf16 * residual, const bf16* yexp, const bf16* shared, const float* wts, int top_k, const bf16* attn, \
     const bf16* w, const bf16* bias, int k, int n, int parts, int flags, const bf16* norm_w, float eps,           \
     unsigned int* ticket)

#define LINEAR_MMA_NORMED(SUFFIX, GROUPS)                                                                     \
    extern "C" __global__ void linear_mma_tile1##SUFFIX##_normed_stored_bf16 P_NORMED_STORED {                \
        linear_mma_normed<GROUPS>(y, residual, StoredDelta<bf16>{d}, w, bias, k, n, parts, flags, norm_w, eps, \
                                  ticket);                                                                    \
    }                                                                                                         \
    extern "C" __global__ void linear_mma_tile1##SUFFIX##_normed_experts_bf16 P_NORMED_EXPERTS {              \
        ExpertsDelta<bf16> delta{yexp, shared, wts, top_k, k, attn};                                          \
        linear_mma_normed<GROUPS>(y, residual, delta, w, bias, k, n, parts, flags, norm_w, eps, ticket);      \
    }
LINEAR_MMA_NORMED(, 1)
LINEAR_MMA_NORMED(_g2, 2)
