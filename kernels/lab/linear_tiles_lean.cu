// A candidate form of the tiled linear, kept in the lab: the tile and
// arithmetic of linear_tiles.cu (same bits, checked by tiles_lab) with every
// address worked out once and the mma operands loaded as written. Measured
// on the H200 (results/h200/tiles-lab-2026-12-03): alone it is up to 26%
// faster than the engine's forms on down and gate|up at 64 rows, but inside
// a decode step's linears in a CUDA graph it gains at most 2% over the
// engine's rule at 16-64 rows, so the engine does not use it.
// Included after linear_mma.cu and linear_tiles.cu.

// cp.async of 16 bytes to the shared-memory address `dst` (a 32-bit shared window offset).
__device__ __forceinline__ void cp_async16_at(unsigned int dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
// Shared-memory loads at 32-bit shared addresses, as written: volatile, so
// that the compiler neither fuses neighbouring words into one vector load
// (whose registers would then be copied into each mma's operand order) nor
// sinks them next to their use.
__device__ __forceinline__ unsigned int lds32(unsigned int addr) {
    unsigned int v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}
__device__ __forceinline__ Frag lds128(unsigned int addr) {
    Frag f;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(f.a), "=r"(f.b), "=r"(f.c), "=r"(f.d) : "r"(addr));
    return f;
}

// The same tile and arithmetic as linear_tiles<BN, BM, WN, WM> (stages of
// 64 k), with every address worked out once: each thread's copy slots share
// one swizzle (its rows differ by an even step), so a stage's copies are one
// add from a base; each lane's fragments lie at fixed offsets from two
// bases (its rows all have the parity of g), so every shared-memory load is
// one instruction. Same bits as linear_tiles (and the small-row kernel).
// LATE_DEPENDENTS: the next kernel may launch only once this one's k loop
// is done, instead of from its start.
template <int BN, int BM, int WN, int WM, int STAGES = TILE_STAGES, bool LATE_DEPENDENTS = false>
__device__ __forceinline__ void linear_tiles_lean(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                                  int k, int n, int parts, int flags) {
    constexpr int NTHREADS = 32 * WN * WM, WCOLS = BN / WN, WTOK = BM / WM, WA = WCOLS / 16, WB = WTOK / 8;
    constexpr int ROW = 128, BK = 64, STAGE_BYTES = (BN + BM) * ROW, RING = STAGES * STAGE_BYTES;
    constexpr int RSTEP = NTHREADS / 8, WL = BN / RSTEP, XL = (BM + RSTEP - 1) / RSTEP;
    static_assert(BN % RSTEP == 0 && RSTEP % 2 == 0 && STAGES >= 2, "copy rows of one parity, double-buffered");
    static_assert(RING >= BN * BM * 4, "the partial sums fit the stage buffers");
    extern __shared__ uint4 tiles[];
    if (!LATE_DEPENDENTS) pdl_launch_dependents();
    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    int span = k / parts, kb = part * span, nst = (span + BK - 1) / BK;
    // Copies: thread (r0, u) moves unit u of rows r0, r0 + RSTEP, ... of each stage.
    const int u = tid & 7, r0 = tid >> 3;
    const unsigned int cdst = smem_addr(tiles) + r0 * ROW + ((u ^ ((r0 & 1) << 2)) << 4);
    const bf16* wsrc[WL];
    const bf16* xsrc[XL];
#pragma unroll
    for (int j = 0; j < WL; j++) wsrc[j] = w + (size_t)min(col0 + r0 + j * RSTEP, n - 1) * k + kb + u * 8;
#pragma unroll
    for (int j = 0; j < XL; j++) xsrc[j] = x + (size_t)min(tok0 + min(r0 + j * RSTEP, BM - 1), m - 1) * k + kb + u * 8;
    // Units past the slice (its last 32 k when it ends mid-stage) stay unloaded.
    auto issue_w = [&](int s, unsigned int slot) {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < WL; j++) cp_async16_at(cdst + slot + j * RSTEP * ROW, wsrc[j] + s * BK);
    };
    auto issue_x = [&](int s, unsigned int slot) {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < XL; j++)
            if (r0 + j * RSTEP < BM) cp_async16_at(cdst + slot + (BN + j * RSTEP) * ROW, xsrc[j] + s * BK);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++)
        if (s < nst) issue_w(s, s * STAGE_BYTES);
    pdl_wait();
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nst) issue_x(s, s * STAGE_BYTES);
        cp_async_commit();
    }
    float acc[WA][WB][4];
#pragma unroll
    for (int a = 0; a < WA; a++)
#pragma unroll
        for (int b = 0; b < WB; b++) acc[a][b][0] = acc[a][b][1] = acc[a][b][2] = acc[a][b][3] = 0.f;
    int wc = (warp % WN) * WCOLS, wt = (warp / WN) * WTOK, p = g & 1;
    // Lane (g, t)'s unit of chunk c is 4c + t with bit 2 flipped on odd rows.
    const int off0 = (4 * p + t) << 4, off1 = (4 * (1 - p) + t) << 4;
    const unsigned int wlane = smem_addr(tiles) + (wc + g) * ROW, xlane = wlane + (BN + wt - wc) * ROW;
    unsigned int slot = 0, next_slot = (STAGES - 1) * STAGE_BYTES;
    for (int s = 0; s < nst; s++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (s + STAGES - 1 < nst) {
            issue_w(s + STAGES - 1, next_slot);
            issue_x(s + STAGES - 1, next_slot);
        }
        cp_async_commit();
        int chunks = min(2, (span - s * BK) / 32);
#pragma unroll
        for (int c = 0; c < 2; c++) {
            if (c < chunks) {
                int off = slot + (c ? off1 : off0);
                // The A operand of each step straight from shared memory in its register order (rows g
                // and g + 8 word by word), so no fragment is reassembled per mma.
                unsigned int q1[WA][4], q2[WA][4];
                Frag xb[WB];
#pragma unroll
                for (int a = 0; a < WA; a++) {
                    unsigned int lo = wlane + off + a * 16 * ROW, hi = lo + 8 * ROW;
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        q1[a][2 * h] = lds32(lo + 4 * h);
                        q1[a][2 * h + 1] = lds32(hi + 4 * h);
                        q2[a][2 * h] = lds32(lo + 8 + 4 * h);
                        q2[a][2 * h + 1] = lds32(hi + 8 + 4 * h);
                    }
                }
#pragma unroll
                for (int b = 0; b < WB; b++) xb[b] = lds128(xlane + off + b * 8 * ROW);
#pragma unroll
                for (int a = 0; a < WA; a++)
#pragma unroll
                    for (int b = 0; b < WB; b++)
                        mma_step(acc[a][b], q1[a][0], q1[a][1], q1[a][2], q1[a][3], xb[b].a, xb[b].b);
#pragma unroll
                for (int a = 0; a < WA; a++)
#pragma unroll
                    for (int b = 0; b < WB; b++)
                        mma_step(acc[a][b], q2[a][0], q2[a][1], q2[a][2], q2[a][3], xb[b].c, xb[b].d);
            }
        }
        slot = slot + STAGE_BYTES == RING ? 0 : slot + STAGE_BYTES;
        next_slot = next_slot + STAGE_BYTES == RING ? 0 : next_slot + STAGE_BYTES;
    }
    if (LATE_DEPENDENTS) pdl_launch_dependents();
    cp_async_wait<0>();
    __syncthreads();
    tiles_store<WA, WB, NTHREADS>(acc, (float*)tiles, y, bias, m, n, parts, flags & 1, col0 + wc, tok0 + wt);
}
