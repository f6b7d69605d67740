
// ---------------------------------------------------------------------------
// Batch-invariant linear for many rows on tensor cores (bf16, sm_90).
//
// y[m, n] = x[m, k] W[n, k]^T (+ bias) with exactly the per-output arithmetic
// of linear_mma.cu, so a row's bits are the same whichever of the two kernels
// computes it and whatever else is in the batch: k in `parts` equal slices
// (`parts` from the weight's shape alone), each slice summed from zero in
// ascending 32-wide chunks, every chunk as the same two mma.m16n8k16 steps
// with the same k-to-fragment map (lane (g, t) holds k 8t..8t+7 of weight
// rows g and g + 8 and of token g), and the slices' sums added in slice
// order. Only the data movement differs: a block owns a tile of BN output
// columns x BM tokens; weight and token tiles of 32 CHUNKS k stream into
// shared memory through cp.async, STAGES deep, so each weight byte is read
// once per token tile and each token row once per column tile. The k slices
// are the blocks of a thread-block cluster (grid x = parts, cluster x =
// parts): each sums its slice of the same output tile, leaves its partial
// sums in its shared memory, and after a cluster barrier each block combines
// a share of the tile by reading every slice's partials in slice order
// through distributed shared memory (no workspace, no second kernel).

// The engine's stage: 64 k (two chunks), four deep.
constexpr int TILE_CHUNKS = 2;
constexpr int TILE_STAGES = 4;

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned int cluster_rank() {
    unsigned int r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// The float at `p` (this block's shared memory) in cluster block `rank`'s copy.
__device__ __forceinline__ float ld_cluster(const float* p, unsigned int rank) {
    unsigned int a, r = smem_addr(p);
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(r), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
    return v;
}

// The 16-byte unit u (of UNITS, a multiple of 8) of row r in a stage buffer
// of UNITS x 16-byte rows; odd rows swap the halves of each 128 bytes, so
// that the eight lanes of a quarter warp (rows g, g + 1, units 4c + t of
// chunk c) hit all 32 banks once.
template <int UNITS = 8>
__device__ __forceinline__ int tile_unit(int r, int u) { return r * UNITS + (u ^ ((r & 1) << 2)); }

// mma.m16n8k16 as in linear_mma.cu but not volatile: the accumulator's
// data dependence keeps each output's steps in order, while the compiler may
// interleave the independent tiles' steps (volatile asm would issue each
// tile's two steps back to back, every second one waiting on the first).
__device__ __forceinline__ void mma_step(float (&acc)[4], unsigned int a0, unsigned int a1, unsigned int a2,
                                         unsigned int a3, unsigned int b0, unsigned int b1) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// Named barrier `id` (1-15; 0 is __syncthreads') of `count` threads: wait
// for it, or arrive without waiting. Both order the thread's earlier memory
// accesses before the barrier's completion for every thread taking part.
__device__ __forceinline__ void named_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Shared memory a tiled linear's end needs for a BN x BM tile (bytes): its
// sums, token-major, rows padded by 4 floats (the stores of a warp's four
// token pairs land in distinct banks).
template <int BN, int BM>
__host__ __device__ constexpr int tile_sums_bytes() { return BM * (BN + 4) * 4; }

// The end of a tiled linear, by the NTHREADS threads (the first of the
// block) that hold the accumulators: acc[a][b] is the thread's warp's 16
// columns from wcol + 16a and 8 tokens from wtok + 8b of the block's BN x BM
// tile at (col0, tok0). Each thread leaves its sums in `sums` (reused stage
// buffers, tile_sums_bytes); with k in `parts` slices (the blocks of one
// cluster), after a cluster barrier each block adds a contiguous share of
// the tile's sums in slice order through distributed shared memory, then
// adds the bias and stores its share (with the optional SiLU-and-mul:
// interleaved gate|up columns, gate even). A loop over a share rather than
// over the accumulators: the same sums in the same order, in a tenth of the
// machine code, which a block runs once, cold, at its very end
// (results/h200/deep-2026-12-06: the unrolled form's instruction fetch was
// a fifth of a 64-row wgmma linear's stall samples).
template <int WA, int WB, int NTHREADS, int BN, int BM>
__device__ __forceinline__ void tiles_store(float (&acc)[WA][WB][4], float* sums, bf16* y, const bf16* bias, int m,
                                            int n, int parts, bool silu, int col0, int tok0, int wcol, int wtok) {
    constexpr int STRIDE = BN + 4, E = BN * BM;
    const int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, t = lane & 3;
    // acc[a][b] = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]: column
    // wcol + 16a + g (+8), token wtok + 8b + 2t (+1).
#pragma unroll
    for (int a = 0; a < WA; a++)
#pragma unroll
        for (int b = 0; b < WB; b++)
#pragma unroll
            for (int q = 0; q < 4; q++)
                sums[(wtok + b * 8 + 2 * t + (q & 1)) * STRIDE + wcol + a * 16 + g + (q >= 2 ? 8 : 0)] = acc[a][b][q];
    unsigned int rank = 0;
    if (parts > 1) {
        cluster_sync();
        rank = cluster_rank();
    } else {
        named_sync(15, NTHREADS);
    }
    // Column `col`'s sum of token `tok` over the slices, in slice order,
    // with the bias (0 without: -0 sums become +0 as before).
    auto sum = [&](int tok, int col) {
        const float* p = sums + tok * STRIDE + col;
        float v = parts > 1 ? ld_cluster(p, 0) : *p;
        for (int r = 1; r < parts; r++) v += ld_cluster(p, r);
        return v + ((bias && col0 + col < n) ? ld(&bias[col0 + col]) : 0.f);
    };
    const int share = E / parts, first = rank * share;
    if (silu) {
#pragma unroll 1
        for (int e = first / 2 + tid; e < (first + share) / 2; e += NTHREADS) {
            const int tok = e / (BN / 2), col = 2 * (e % (BN / 2));
            bf16 tg, tu;
            st(&tg, sum(tok, col));
            st(&tu, sum(tok, col + 1));
            if (col0 + col + 1 < n && tok0 + tok < m)
                st(&y[(size_t)(tok0 + tok) * (n / 2) + (col0 + col) / 2], SILU_AND_MUL(ld(&tg), ld(&tu)));
        }
    } else {
#pragma unroll 1
        for (int e = first + tid; e < first + share; e += NTHREADS) {
            const int tok = e / BN, col = e % BN;
            const float v = sum(tok, col);
            if (col0 + col < n && tok0 + tok < m) st(&y[(size_t)(tok0 + tok) * n + col0 + col], v);
        }
    }
    if (parts > 1) cluster_sync();  // no block leaves while another still reads its sums
}

// The cp.async side of a tiled or wgmma linear's stage loop. Thread tid (of
// the NTHREADS that load) copies the 16-byte column u = tid % UNITS of
// weight rows r0 + j RSTEP (r0 = tid / UNITS; past n: row n - 1) and of
// token rows r0 + j RSTEP below BM (past m: row m - 1) into every stage, its sources and shared
// addresses worked out once: rows RSTEP apart share their swizzle, so row
// j's slot is j RSTEP rows on from row r0's (the token rows' first slot,
// `xunit0`, in the caller's swizzle). A stage adds its buffer's offset
// (`slot`, an immediate in a loop unrolled by the stage count) and its k
// offset from where the sources point (`koff`; `advance` moves them). Units
// past the k slice (its last 32 k when it ends mid-stage) stay unloaded.
template <int BN, int BM, int UNITS, int NTHREADS>
struct StageLoads {
    static constexpr int RSTEP = NTHREADS / UNITS, WL = BN / RSTEP, XL = (BM + RSTEP - 1) / RSTEP;
    static constexpr int BK = 8 * UNITS, ROW_BYTES = UNITS * 16;
    static_assert((BN * UNITS) % NTHREADS == 0 && RSTEP % 8 == 0, "tile rows split evenly, one swizzle a thread");
    const bf16* wsrc[WL];
    const bf16* xsrc[XL];
    unsigned int wdst, xdst;
    int u, r0, span;
    __device__ __forceinline__ StageLoads(const bf16* w, const bf16* x, int m, int n, int k, int kb, int span_,
                                          int col0, int tok0, unsigned int sbase, int xunit0, int tid) {
        u = tid % UNITS;
        r0 = tid / UNITS;
        span = span_;
#pragma unroll
        for (int j = 0; j < WL; j++) wsrc[j] = w + (size_t)min(col0 + r0 + j * RSTEP, n - 1) * k + kb + u * 8;
#pragma unroll
        for (int j = 0; j < XL; j++)
            xsrc[j] = x + (size_t)min(tok0 + min(r0 + j * RSTEP, BM - 1), m - 1) * k + kb + u * 8;
        wdst = sbase + tile_unit<UNITS>(r0, u) * 16;
        xdst = sbase + xunit0 * 16;
    }
    // Stage s's weights into the buffer `slot` bytes on.
    __device__ __forceinline__ void load_w(int s, int slot, int koff) const {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < WL; j++) cp_async16_at(wdst + slot + j * RSTEP * ROW_BYTES, wsrc[j] + koff);
    }
    // Stage s's tokens into the buffer `slot` bytes on.
    __device__ __forceinline__ void load_x(int s, int slot, int koff) const {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < XL; j++)
            if (r0 + j * RSTEP < BM) cp_async16_at(xdst + slot + j * RSTEP * ROW_BYTES, xsrc[j] + koff);
    }
    // The sources `elems` further along k.
    __device__ __forceinline__ void advance(int elems) {
#pragma unroll
        for (int j = 0; j < WL; j++) wsrc[j] += elems;
#pragma unroll
        for (int j = 0; j < XL; j++) xsrc[j] += elems;
    }
    // In a loop unrolled by STAGES, at stage s (the i-th of its group):
    // stage s + STAGES - 1 of `nst` into its buffer, the sources pointing at
    // the group's first stage; then its cp.async group is committed.
    template <int STAGES>
    __device__ __forceinline__ void next_stage(int s, int i, int nst, int stage_bytes) const {
        const int next = s + STAGES - 1, slot = ((i + STAGES - 1) % STAGES) * stage_bytes;
        if (next < nst) {
            load_w(next, slot, (STAGES - 1 + i) * BK);
            load_x(next, slot, (STAGES - 1 + i) * BK);
        }
        cp_async_commit();
    }
    // The first STAGES - 1 stages of `nst`, buffers `stage_bytes` apart: the
    // weights first (no kernel writes them, so they stream before
    // pdl_wait), then the tokens, a cp.async group a stage.
    template <int STAGES>
    __device__ __forceinline__ void prologue(int nst, int stage_bytes) const {
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++)
            if (s < nst) load_w(s, s * stage_bytes, s * BK);
        pdl_wait();
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < nst) load_x(s, s * stage_bytes, s * BK);
            cp_async_commit();
        }
    }
};

// Blocks of WN x WM warps; warp (wn, wm) owns BN/WN columns x BM/WM tokens
// of the block's tile. Dynamic shared memory: STAGES x (BN + BM) x CHUNKS x
// 64 bytes. flags: bit 0 SiLU-and-mul epilogue (interleaved gate|up columns).
// CHUNKS and STAGES move data only: any of them gives the same bits. Each
// thread works out its cp.async sources (rows clamped) and its shared
// offsets once; the stage loop is unrolled by STAGES, so that a stage's
// buffer is an immediate offset, and the sources move once a group of
// STAGES stages: about half the instructions a stage of the loop that
// worked them out every stage, whose bits it gives
// (results/h200/narrow64-2026-12-06).
template <int BN, int BM, int WN, int WM, int CHUNKS = TILE_CHUNKS, int STAGES = TILE_STAGES>
__device__ __forceinline__ void linear_tiles(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                             int k, int n, int parts, int flags) {
    constexpr int NTHREADS = 32 * WN * WM, WCOLS = BN / WN, WTOK = BM / WM, WA = WCOLS / 16, WB = WTOK / 8;
    constexpr int UNITS = 4 * CHUNKS, BK = 32 * CHUNKS, STAGE_UNITS = (BN + BM) * UNITS;
    constexpr int STAGE_BYTES = STAGE_UNITS * 16, ROW_BYTES = UNITS * 16;
    static_assert(CHUNKS % 2 == 0 && STAGES >= 2, "rows of whole 128 bytes, at least double-buffered");
    static_assert(STAGES * STAGE_BYTES >= tile_sums_bytes<BN, BM>(), "the tile's sums fit the stage buffers");
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    const int span = k / parts, kb = part * span, nst = (span + BK - 1) / BK;
    const unsigned int sbase = smem_addr(tiles);
    StageLoads<BN, BM, UNITS, NTHREADS> loads(w, x, m, n, k, kb, span, col0, tok0, sbase,
                                              BN * UNITS + tile_unit<UNITS>(tid / UNITS, tid % UNITS), tid);
    // Fragment offsets in a stage: weight rows wc + 16a + g (+ 8) and token
    // rows wt + 8b + g all share row g's swizzle, so one offset a chunk each.
    const int wc = (warp % WN) * WCOLS, wt = (warp / WN) * WTOK;
    int fw[CHUNKS], fx[CHUNKS];
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) {
        fw[c] = tile_unit<UNITS>(wc + g, 4 * c + t) * 16;
        fx[c] = (BN * UNITS + tile_unit<UNITS>(wt + g, 4 * c + t)) * 16;
    }
    loads.prologue<STAGES>(nst, STAGE_BYTES);
    float acc[WA][WB][4];
#pragma unroll
    for (int a = 0; a < WA; a++)
#pragma unroll
        for (int b = 0; b < WB; b++) acc[a][b][0] = acc[a][b][1] = acc[a][b][2] = acc[a][b][3] = 0.f;
    const unsigned char* smem = (const unsigned char*)tiles;
    for (int s0 = 0; s0 < nst; s0 += STAGES) {
        // Held in registers, not worked out again from the thread index.
#pragma unroll
        for (int c = 0; c < CHUNKS; c++) asm volatile("" : "+r"(fw[c]), "+r"(fx[c]));
#pragma unroll
        for (int i = 0; i < STAGES; i++) {
            const int s = s0 + i;
            if (s >= nst) break;
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            loads.next_stage<STAGES>(s, i, nst, STAGE_BYTES);
            const unsigned char* buf = smem + i * STAGE_BYTES;
            const int chunks = min(CHUNKS, (span - s * BK) / 32);
#pragma unroll
            for (int c = 0; c < CHUNKS; c++) {
                if (c < chunks) {
                    Frag lo[WA], hi[WA], xb[WB];
#pragma unroll
                    for (int a = 0; a < WA; a++) {
                        lo[a] = ld_frag((const bf16*)(buf + fw[c] + a * 16 * ROW_BYTES));
                        hi[a] = ld_frag((const bf16*)(buf + fw[c] + (a * 16 + 8) * ROW_BYTES));
                    }
#pragma unroll
                    for (int b = 0; b < WB; b++) xb[b] = ld_frag((const bf16*)(buf + fx[c] + b * 8 * ROW_BYTES));
                    // Every tile's first step (k 0..3 of each lane's 8), then every
                    // tile's second (4..7): mma_chunk's order for each output.
#pragma unroll
                    for (int a = 0; a < WA; a++)
#pragma unroll
                        for (int b = 0; b < WB; b++)
                            mma_step(acc[a][b], lo[a].a, hi[a].a, lo[a].b, hi[a].b, xb[b].a, xb[b].b);
#pragma unroll
                    for (int a = 0; a < WA; a++)
#pragma unroll
                        for (int b = 0; b < WB; b++)
                            mma_step(acc[a][b], lo[a].c, hi[a].c, lo[a].d, hi[a].d, xb[b].c, xb[b].d);
                }
            }
        }
        loads.advance(STAGES * BK);
    }
    cp_async_wait<0>();
    __syncthreads();
    tiles_store<WA, WB, NTHREADS, BN, BM>(acc, (float*)tiles, y, bias, m, n, parts, flags & 1, col0, tok0, wc, wt);
}

#define LINEAR_TILES(BN, BM, WN, WM)                                                                        \
    extern "C" __global__ void __launch_bounds__(32 * WN * WM)                                              \
        linear_tiles_##BN##x##BM##_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k, \
                                        int n, int parts, int flags) {                                      \
        linear_tiles<BN, BM, WN, WM>(y, x, w, bias, m, k, n, parts, flags);                                 \
    }
LINEAR_TILES(64, 16, 4, 1)
LINEAR_TILES(128, 16, 8, 1)
LINEAR_TILES(64, 32, 4, 1)
LINEAR_TILES(128, 32, 8, 1)
LINEAR_TILES(64, 64, 4, 1)
LINEAR_TILES(128, 64, 4, 2)
LINEAR_TILES(128, 128, 4, 2)
