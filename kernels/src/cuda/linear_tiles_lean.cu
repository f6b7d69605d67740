
// ---------------------------------------------------------------------------
// The tiled tensor-core linear of linear_tiles.cu with its stage loop's
// address arithmetic taken out (`SPECULA_TILES_LEAN=1`; the first form runs
// by default until this one is measured), as linear_wg_lean.cu does for the
// wgmma linear: the same
// cp.async groups, waits, barriers and mma steps in the same order on the
// same data (the same bits); each thread's sources and shared offsets worked
// out once, the loop unrolled by STAGES so that a stage's buffer is an
// immediate offset, the sources moved once a group of STAGES stages.

template <int BN, int BM, int WN, int WM, int CHUNKS = TILE_CHUNKS, int STAGES = TILE_STAGES>
__device__ __forceinline__ void linear_tiles_lean(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                                  int k, int n, int parts, int flags) {
    constexpr int NTHREADS = 32 * WN * WM, WCOLS = BN / WN, WTOK = BM / WM, WA = WCOLS / 16, WB = WTOK / 8;
    constexpr int UNITS = 4 * CHUNKS, BK = 32 * CHUNKS, STAGE_UNITS = (BN + BM) * UNITS, NACC = WA * WB * 4;
    constexpr int STAGE_BYTES = STAGE_UNITS * 16, ROW_BYTES = UNITS * 16;
    constexpr int RSTEP = NTHREADS / UNITS, WL = BN / RSTEP, XL = (BM + RSTEP - 1) / RSTEP;
    static_assert(CHUNKS % 2 == 0 && STAGES >= 2, "rows of whole 128 bytes, at least double-buffered");
    static_assert(STAGES * STAGE_UNITS * 16 >= NACC * NTHREADS * 4, "the partial sums fit the stage buffers");
    static_assert((BN * UNITS) % NTHREADS == 0 && RSTEP % 2 == 0, "tile rows split evenly, one swizzle a thread");
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    const int span = k / parts, kb = part * span, nst = (span + BK - 1) / BK;
    const unsigned int sbase = smem_addr(tiles);
    // This thread's 16-byte column u of weight rows r0 + j RSTEP (past n:
    // row n - 1) and token rows r0 + j RSTEP below BM (past m: row m - 1),
    // as linear_tiles.cu's WeightStream and load_x.
    const int u = tid % UNITS, r0 = tid / UNITS;
    const bf16* wsrc[WL];
    const bf16* xsrc[XL];
#pragma unroll
    for (int j = 0; j < WL; j++) wsrc[j] = w + (size_t)min(col0 + r0 + j * RSTEP, n - 1) * k + kb + u * 8;
#pragma unroll
    for (int j = 0; j < XL; j++) xsrc[j] = x + (size_t)min(tok0 + min(r0 + j * RSTEP, BM - 1), m - 1) * k + kb + u * 8;
    const unsigned int wdst = sbase + tile_unit<UNITS>(r0, u) * 16;
    const unsigned int xdst = sbase + (BN * UNITS + tile_unit<UNITS>(r0, u)) * 16;
    auto load_w = [&](int s, int slot, int koff) {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < WL; j++) cp_async16_at(wdst + slot + j * RSTEP * ROW_BYTES, wsrc[j] + koff);
    };
    auto load_x = [&](int s, int slot, int koff) {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < XL; j++)
            if (r0 + j * RSTEP < BM) cp_async16_at(xdst + slot + j * RSTEP * ROW_BYTES, xsrc[j] + koff);
    };
    // Fragment offsets in a stage: weight rows wc + 16a + g (+ 8) and token
    // rows wt + 8b + g all share row g's swizzle, so one offset a chunk each.
    const int wc = (warp % WN) * WCOLS, wt = (warp / WN) * WTOK;
    int fw[CHUNKS], fx[CHUNKS];
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) {
        fw[c] = tile_unit<UNITS>(wc + g, 4 * c + t) * 16;
        fx[c] = (BN * UNITS + tile_unit<UNITS>(wt + g, 4 * c + t)) * 16;
    }
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++)
        if (s < nst) load_w(s, s * STAGE_BYTES, s * BK);
    pdl_wait();
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nst) load_x(s, s * STAGE_BYTES, s * BK);
        cp_async_commit();
    }
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
            const int next = s + STAGES - 1, next_slot = ((i + STAGES - 1) % STAGES) * STAGE_BYTES;
            if (next < nst) {
                load_w(next, next_slot, (STAGES - 1 + i) * BK);
                load_x(next, next_slot, (STAGES - 1 + i) * BK);
            }
            cp_async_commit();
            const unsigned char* buf = smem + i * STAGE_BYTES;
            const int chunks = min(CHUNKS, (span - s * BK) / 32);
#pragma unroll
            for (int c = 0; c < CHUNKS; c++) {
                if (c < chunks) {
                    Frag lo[WA], hi[WA], xb[WB];
#pragma unroll
                    for (int a = 0; a < WA; a++) {
                        uint4 v = *(const uint4*)(buf + fw[c] + a * 16 * ROW_BYTES);
                        uint4 h = *(const uint4*)(buf + fw[c] + (a * 16 + 8) * ROW_BYTES);
                        lo[a] = Frag{v.x, v.y, v.z, v.w};
                        hi[a] = Frag{h.x, h.y, h.z, h.w};
                    }
#pragma unroll
                    for (int b = 0; b < WB; b++) {
                        uint4 v = *(const uint4*)(buf + fx[c] + b * 8 * ROW_BYTES);
                        xb[b] = Frag{v.x, v.y, v.z, v.w};
                    }
                    // linear_tiles.cu's order: every tile's first step, then
                    // every tile's second.
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
#pragma unroll
        for (int j = 0; j < WL; j++) wsrc[j] += STAGES * BK;
#pragma unroll
        for (int j = 0; j < XL; j++) xsrc[j] += STAGES * BK;
    }
    cp_async_wait<0>();
    __syncthreads();
    tiles_store<WA, WB, NTHREADS>(acc, (float*)tiles, y, bias, m, n, parts, flags & 1, col0 + wc, tok0 + wt);
}

#define LINEAR_TILES_LEAN(BN, BM, WN, WM)                                                                    \
    extern "C" __global__ void __launch_bounds__(32 * WN * WM)                                               \
        linear_tiles_##BN##x##BM##l_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k, \
                                         int n, int parts, int flags) {                                      \
        linear_tiles_lean<BN, BM, WN, WM>(y, x, w, bias, m, k, n, parts, flags);                             \
    }
LINEAR_TILES_LEAN(64, 16, 4, 1)
LINEAR_TILES_LEAN(128, 16, 8, 1)
LINEAR_TILES_LEAN(64, 32, 4, 1)
LINEAR_TILES_LEAN(128, 32, 8, 1)
LINEAR_TILES_LEAN(64, 64, 4, 1)
LINEAR_TILES_LEAN(128, 64, 4, 2)
LINEAR_TILES_LEAN(128, 128, 4, 2)
