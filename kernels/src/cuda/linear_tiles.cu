
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
// columns x BM tokens; weight and token tiles of 64 k stream into shared
// memory through cp.async, TILE_STAGES deep, so each weight byte is read
// once per token tile and each token row once per column tile. The k slices
// are the blocks of a thread-block cluster (grid x = parts, cluster x =
// parts): each sums its slice of the same output tile, leaves its partial
// sums in its shared memory, and after a cluster barrier each block combines
// a share of the tile by reading every slice's partials in slice order
// through distributed shared memory (no workspace, no second kernel).

constexpr int TILE_BK = 64;
constexpr int TILE_STAGES = 4;

__device__ __forceinline__ unsigned int smem_addr(const void* p) {
    unsigned int a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

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

// The 16-byte unit u (of 8) of row r in a stage buffer of 128-byte rows;
// odd rows swap their halves, so that the eight lanes of a quarter warp
// (rows g, g + 1, units t of one 32-wide chunk) hit all 32 banks once.
__device__ __forceinline__ int tile_unit(int r, int u) { return r * 8 + (u ^ ((r & 1) << 2)); }

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

__device__ __forceinline__ Frag frag_at(const uint4* buf, int r, int u) {
    uint4 v = buf[tile_unit(r, u)];
    return Frag{v.x, v.y, v.z, v.w};
}

// Blocks of WN x WM warps; warp (wn, wm) owns BN/WN columns x BM/WM tokens
// of the block's tile. Dynamic shared memory: TILE_STAGES x (BN + BM) x 128
// bytes. flags: bit 0 SiLU-and-mul epilogue (interleaved gate|up columns).
template <int BN, int BM, int WN, int WM>
__device__ __forceinline__ void linear_tiles(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                             int k, int n, int parts, int flags) {
    constexpr int NTHREADS = 32 * WN * WM, WCOLS = BN / WN, WTOK = BM / WM, WA = WCOLS / 16, WB = WTOK / 8;
    constexpr int STAGE_UNITS = (BN + BM) * 8, NACC = WA * WB * 4;
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    int span = k / parts, kb = part * span, nst = (span + TILE_BK - 1) / TILE_BK;
    // Each thread copies the same 16-byte column u of rows r0, r0 + RSTEP, ...
    // of every stage (WL weight rows, up to XL token rows): the sources and
    // shared-memory slots are worked out once, a stage adds its k offset.
    // Units past the slice (its last 32 k when it ends mid-stage) stay unloaded.
    static_assert((BN * 8) % NTHREADS == 0 && NTHREADS % 8 == 0, "tile rows split evenly over threads");
    constexpr int RSTEP = NTHREADS / 8, WL = BN / RSTEP, XL = (BM + RSTEP - 1) / RSTEP;
    const int u = tid & 7, r0 = tid >> 3;
    const bf16* wsrc[WL];
    int wdst[WL];
#pragma unroll
    for (int j = 0; j < WL; j++) {
        int r = r0 + j * RSTEP;
        wsrc[j] = w + (size_t)min(col0 + r, n - 1) * k + kb + u * 8;
        wdst[j] = tile_unit(r, u);
    }
    const bf16* xsrc[XL];
    int xdst[XL];
#pragma unroll
    for (int j = 0; j < XL; j++) {
        int r = min(r0 + j * RSTEP, BM - 1);
        xsrc[j] = x + (size_t)min(tok0 + r, m - 1) * k + kb + u * 8;
        xdst[j] = BN * 8 + tile_unit(r, u);
    }
    auto load_w = [&](int s) {
        if (s * TILE_BK + u * 8 >= span) return;
        uint4* buf = tiles + (s % TILE_STAGES) * STAGE_UNITS;
#pragma unroll
        for (int j = 0; j < WL; j++) cp_async16(buf + wdst[j], wsrc[j] + s * TILE_BK);
    };
    auto load_x = [&](int s) {
        if (s * TILE_BK + u * 8 >= span) return;
        uint4* buf = tiles + (s % TILE_STAGES) * STAGE_UNITS;
#pragma unroll
        for (int j = 0; j < XL; j++)
            if (r0 + j * RSTEP < BM) cp_async16(buf + xdst[j], xsrc[j] + s * TILE_BK);
    };
    // Weights never depend on the previous kernel: their first stages stream
    // before `pdl_wait`.
#pragma unroll
    for (int s = 0; s < TILE_STAGES - 1; s++)
        if (s < nst) load_w(s);
    pdl_wait();
#pragma unroll
    for (int s = 0; s < TILE_STAGES - 1; s++) {
        if (s < nst) load_x(s);
        cp_async_commit();
    }
    float acc[WA][WB][4];
#pragma unroll
    for (int a = 0; a < WA; a++)
#pragma unroll
        for (int b = 0; b < WB; b++) acc[a][b][0] = acc[a][b][1] = acc[a][b][2] = acc[a][b][3] = 0.f;
    int wc = (warp % WN) * WCOLS, wt = (warp / WN) * WTOK;
    for (int s = 0; s < nst; s++) {
        cp_async_wait<TILE_STAGES - 2>();
        __syncthreads();
        int next = s + TILE_STAGES - 1;
        if (next < nst) {
            load_w(next);
            load_x(next);
        }
        cp_async_commit();
        const uint4* wbuf = tiles + (s % TILE_STAGES) * STAGE_UNITS;
        const uint4* xbuf = wbuf + BN * 8;
        int chunks = min(2, (span - s * TILE_BK) / 32);
#pragma unroll
        for (int c = 0; c < 2; c++) {
            if (c < chunks) {
                Frag lo[WA], hi[WA], xb[WB];
#pragma unroll
                for (int a = 0; a < WA; a++) {
                    lo[a] = frag_at(wbuf, wc + a * 16 + g, 4 * c + t);
                    hi[a] = frag_at(wbuf, wc + a * 16 + g + 8, 4 * c + t);
                }
#pragma unroll
                for (int b = 0; b < WB; b++) xb[b] = frag_at(xbuf, wt + b * 8 + g, 4 * c + t);
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
    cp_async_wait<0>();
    __syncthreads();
    unsigned int rank = 0;
    if (parts > 1) {
        // Each slice's partial sums, thread-major, in its block's shared memory.
        float* partial = (float*)tiles;
#pragma unroll
        for (int a = 0; a < WA; a++)
#pragma unroll
            for (int b = 0; b < WB; b++)
#pragma unroll
                for (int q = 0; q < 4; q++) partial[((a * WB + b) * 4 + q) * NTHREADS + tid] = acc[a][b][q];
        cluster_sync();
        rank = cluster_rank();
#pragma unroll
        for (int i = 0; i < NACC; i++) {
            if (i % parts != (int)rank) continue;
            const float* p = partial + i * NTHREADS + tid;
            float v = ld_cluster(p, 0);
            for (int r = 1; r < parts; r++) v += ld_cluster(p, r);
            acc[i / (WB * 4)][(i / 4) % WB][i % 4] = v;
        }
        cluster_sync();  // no block leaves while another still reads its partials
    }
    bool silu = flags & 1;
    // acc[a][b] = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]: column
    // col0 + wc + 16a + g (+8), token tok0 + wt + 8b + 2t (+1).
#pragma unroll
    for (int a = 0; a < WA; a++) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            int col = col0 + wc + a * 16 + g + (q >= 2 ? 8 : 0);
            float bv = (bias && col < n) ? ld(&bias[col]) : 0.f;
#pragma unroll
            for (int b = 0; b < WB; b++) {
                if (parts > 1 && ((a * WB + b) * 4 + q) % parts != (int)rank) continue;
                int tok = tok0 + wt + b * 8 + 2 * t + (q & 1);
                float v = acc[a][b][q] + bv;
                if (silu) {
                    float u = __shfl_xor_sync(0xffffffffu, v, 4);
                    bf16 tg, tu;
                    st(&tg, v);
                    st(&tu, u);
                    float gv = ld(&tg), uv = ld(&tu);
                    if ((g & 1) == 0 && col + 1 < n && tok < m)
                        st(&y[(size_t)tok * (n / 2) + col / 2], SILU_AND_MUL(gv, uv));
                } else if (col < n && tok < m) {
                    st(&y[(size_t)tok * n + col], v);
                }
            }
        }
    }
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
