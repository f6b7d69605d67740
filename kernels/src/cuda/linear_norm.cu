
// ---------------------------------------------------------------------------
// A projection of one row with the RMSNorm before it in its prologue.
//
// At one row, the norm before a projection (rms_norm_residual,
// moe_combine_norm) is a launch of one block whose time is mostly latency:
// its wait on the kernel before, a few loads, a reduction, a store the
// projection then waits for. Here every block of the projection norms the row
// itself into shared memory after asking for its first weights, in the norm
// kernel's own reduction order (rms_norm_row_looped: the same bits), and reads
// its tokens from there. The residual's new row (residual + the delta) is
// written once, by the block that finished its norm last (every other block
// has read the old row by then: the ticket is taken after the block's
// reduction, which needed all its loads), at its end; the ticket is zero
// between launches (that block resets it).

// The `In` of linear_mma_pipelined that norms the row: `delta` as
// rms_norm_delta's (StoredDelta, ExpertsDelta of row 0); xs and vs are
// shared (hidden values each: the normed row, the residual's new row).
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
    __device__ void wait() {
        pdl_wait();
        rms_norm_row_looped(vs, xs, residual, delta, w, eps, hidden);
        __syncthreads();
        // Relaxed: only its order after this block's reads matters, and
        // those have returned (the reduction used them). The result is read
        // at the end, so no warp waits on the round trip.
        if (delta.has() && threadIdx.x == 0) arrived = atomicAdd(ticket, 1u);
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
// one-tile kernel, GROUPS column tiles a block), residual += delta. Dynamic
// shared memory: the k slices' partial sums (as the tile kernels', when
// parts > 1), then the normed row and the new residual row (k values each).
template <int GROUPS, class D>
__device__ void linear_mma_normed(bf16* y, bf16* residual, const D& delta, const bf16* w, const bf16* bias, int k,
                                  int n, int parts, int flags, const bf16* norm_w, float eps, unsigned int* ticket) {
    extern __shared__ float tile_partial[];
    bf16* xs = (bf16*)(tile_partial + (parts > 1 ? GROUPS * parts * 4 * 32 : 0));
    int col0 = ((int)blockIdx.x * GROUPS + (int)(threadIdx.x >> 5) / parts) * 16;
    TileColumns out{y, bias, 1, n, parts, flags, col0};
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
