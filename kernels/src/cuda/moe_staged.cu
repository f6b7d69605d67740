
// ---------------------------------------------------------------------------
// The grouped linear with its operands staged in shared memory (bf16,
// sm_80+): moe_mma_tile's chunks, fragments and mma steps in the same order
// (so the same bits), but each lane copies the 16-byte pieces it will
// multiply (two weight rows and its token, a 32-wide chunk) into its own
// slots of the warp's ring by cp.async, STAGES stages of KU chunks deep,
// instead of holding two stages in registers. At one row the register form
// holds 255 registers a thread, so eight warps an SM with at most a stage
// each in flight, its samples 84% long-scoreboard waits on the weights
// (results/h200/reach-2026-12-06, call 4); here a warp keeps STAGES - 1
// stages in flight at no register cost. A lane reads only what it copied
// itself, so cp.async.wait_group alone orders a slot's copy before its reads
// (no barrier), and a slot is refilled only after this lane's reads of it.

// 16 bytes of shared memory at addr into a fragment (volatile: kept in
// program order with the copies that refill the slot).
__device__ __forceinline__ Frag lds_frag(unsigned int addr) {
    Frag f;
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(f.a), "=r"(f.b), "=r"(f.c), "=r"(f.d)
                 : "r"(addr)
                 : "memory");
    return f;
}

// Bytes of one warp's ring: STAGES x KU chunks x (weight row g, row g + 8,
// token g) x 32 lanes x 16 bytes.
template <int KU, int STAGES>
__host__ __device__ constexpr int moe_ring_bytes() {
    return STAGES * KU * 3 * 32 * 16;
}

// moe_mma_tile's work (the same arguments) from the warp's ring at shared
// address `ring`; `partial` (for parts > 1) lies after every warp's ring.
template <int KU, int STAGES>
__device__ __forceinline__ void moe_mma_tile_staged(bf16* y, const bf16* x, const bf16* we, int p0, int cnt,
                                                    const int* pair_row, const int* pair_route, int k, int n,
                                                    int parts, bool silu, int col0, float* partial,
                                                    unsigned int ring) {
    constexpr int SLOT = KU * 3 * 512;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int part = warp % parts, span = k / parts, kb = part * span;
    const bf16* wlo = we + (size_t)min(col0 + g, n - 1) * k + 8 * t + kb;
    const bf16* whi = we + (size_t)min(col0 + g + 8, n - 1) * k + 8 * t + kb;
    const int chunks = span / 32, nst = (chunks + KU - 1) / KU;
    const unsigned int base = ring + warp * STAGES * SLOT + lane * 16;
    const Frag zero{0u, 0u, 0u, 0u};
    for (int m0 = 0; m0 < cnt; m0 += 8) {
        const int mt = min(8, cnt - m0);
        const bool live = g < mt;
        const int p = p0 + m0 + min(g, mt - 1);
        const int row = pair_row ? pair_row[p] : p;
        const bf16* xr = x + (size_t)row * k + 8 * t + kb;
        int orow[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int q = p0 + m0 + min(2 * t + i, mt - 1);
            orow[i] = pair_route ? pair_route[q] : q;
        }
        // Stage s's chunks into its slot, one cp.async group (empty past
        // the last stage, so that the waits count alike).
        auto issue = [&](int s) {
            if (s < nst) {
                const unsigned int d = base + (s % STAGES) * SLOT;
#pragma unroll
                for (int u = 0; u < KU; u++) {
                    const int c = s * KU + u;
                    if (c < chunks) {
                        cp_async16_at(d + (3 * u) * 512, wlo + 32 * c);
                        cp_async16_at(d + (3 * u + 1) * 512, whi + 32 * c);
                        if (live) cp_async16_at(d + (3 * u + 2) * 512, xr + 32 * c);
                    }
                }
            }
            cp_async_commit();
        };
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) issue(s);
        float acc[1][4] = {{0.f, 0.f, 0.f, 0.f}};
        for (int s = 0; s < nst; s++) {
            cp_async_wait<STAGES - 2>();  // stage s has landed (this lane's copies)
            const unsigned int d = base + (s % STAGES) * SLOT;
            Frag lo[KU], hi[KU], xv[KU];
#pragma unroll
            for (int u = 0; u < KU; u++) {
                if (s * KU + u < chunks) {
                    lo[u] = lds_frag(d + (3 * u) * 512);
                    hi[u] = lds_frag(d + (3 * u + 1) * 512);
                    xv[u] = live ? lds_frag(d + (3 * u + 2) * 512) : zero;
                }
            }
            // The slot read last stage (this lane's reads are done) takes
            // stage s + STAGES - 1 while this one multiplies.
            issue(s + STAGES - 1);
#pragma unroll
            for (int u = 0; u < KU; u++)
                if (s * KU + u < chunks) mma_chunk(acc[0], lo[u], hi[u], xv[u]);
        }
        cp_async_wait<0>();
        moe_mma_store(acc, y, orow, mt, n, parts, silu, col0, partial);
    }
}

// moe_mma_bf16 with the staged tile: block (column tile, slot), one warp per
// slice of k, each warp's ring of moe_ring_bytes<KU, STAGES>() bytes at the
// start of the dynamic shared memory, the slices' partial sums after them.
template <int KU, int STAGES>
__device__ __forceinline__ void moe_mma_staged(bf16* y, const bf16* x, const bf16* w, const int4* slots,
                                               const int* pair_row, const int* pair_route, int k, int n, int parts,
                                               int flags) {
    extern __shared__ float moe_staged_smem[];
    pdl_launch_dependents();  // as moe_mma_bf16: the next launch may start at once
    pdl_wait();
    int4 sl = __ldcg(&slots[blockIdx.y]);
    if (sl.x < 0) return;
    const int warps = blockDim.x >> 5;
    float* partial = moe_staged_smem + warps * moe_ring_bytes<KU, STAGES>() / 4;
    moe_mma_tile_staged<KU, STAGES>(y, x, w + (size_t)sl.x * n * k, sl.y, sl.z - sl.y, pair_row, pair_route, k, n,
                                    parts, flags & 1, blockIdx.x * 16, partial, smem_addr(moe_staged_smem));
}

#define MOE_MMA_STAGED(KU, STAGES)                                                                              \
    extern "C" __global__ void moe_mma_staged_##KU##_##STAGES##_bf16(                                          \
        bf16* y, const bf16* x, const bf16* w, const int4* slots, const int* pair_row, const int* pair_route, \
        int k, int n, int parts, int flags) {                                                                   \
        moe_mma_staged<KU, STAGES>(y, x, w, slots, pair_row, pair_route, k, n, parts, flags);                  \
    }
MOE_MMA_STAGED(8, 4)
MOE_MMA_STAGED(4, 6)
MOE_MMA_STAGED(4, 4)
