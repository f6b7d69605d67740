
// ---------------------------------------------------------------------------
// The warpgroup-mma linear of linear_wg.cu with its stage loop's overhead
// taken out (`SPECULA_WG_LEAN=1`; the first form runs by default until this
// one is measured): the same template parameters, and the same cp.async groups, waits, barriers,
// transposes and wgmma steps in the same order on the same data, so the same
// bits. What differs is the address arithmetic. In the first form each stage
// works out again every global source (with its row clamp), every shared
// slot (through `s % STAGES`) and every fragment's swizzled offset: about
// 130 of a stage's ~200 instructions a warp, in a loop that Nsight Compute
// shows issue-bound (0.62 eligible warps a scheduler, 10.7 cycles an
// instruction; ../../../results/h200/narrow-2026-12-05/call1). Here each
// thread works them out once; the loop is unrolled by STAGES so that a
// stage's buffer is an immediate offset, and a group of STAGES stages adds
// its k offset to each source once.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <int WGS, int BM, int CHUNKS, int STAGES, bool EARLY>
__device__ __forceinline__ void linear_wg_lean(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                               int k, int n, int parts, int flags) {
    constexpr int BN = 64 * WGS, NTHREADS = 128 * WGS, UNITS = 4 * CHUNKS, BK = 32 * CHUNKS;
    constexpr int W_UNITS = BN * UNITS, STAGE_UNITS = (BN + BM) * UNITS, NACC = BM / 2;
    constexpr int STAGE_BYTES = STAGE_UNITS * 16, X_UNITS = BM * UNITS, X_BYTES = X_UNITS * 16;
    constexpr int PIECES = BM * CHUNKS, PER_THREAD = (PIECES + NTHREADS - 1) / NTHREADS;
    constexpr int RSTEP = NTHREADS / UNITS, WL = BN / RSTEP, XL = (BM + RSTEP - 1) / RSTEP;
    constexpr int ROW_STEP_BYTES = RSTEP * UNITS * 16;
    static_assert(STAGES >= (EARLY ? 3 : 2) && BM % 16 == 0 && BM <= 64, "wgmma N of 16-64, double-buffered at least");
    static_assert(STAGES * STAGE_UNITS * 16 >= NACC * NTHREADS * 4, "the partial sums fit the stage buffers");
    static_assert(RSTEP % 8 == 0, "a thread's rows share their swizzle");
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    const int span = k / parts, kb = part * span, nst = (span + BK - 1) / BK;
    const unsigned int sbase = smem_addr(tiles);
    // This thread's 16-byte column u of weight rows r0 + j RSTEP and token
    // rows r0 + j RSTEP (as linear_wg.cu's WeightStream and load_x): sources
    // at k offset 0 of the slice, shared addresses in stage 0 (rows RSTEP
    // apart keep the swizzle, so row j is j ROW_STEP_BYTES on).
    const int u = tid % UNITS, r0 = tid / UNITS;
    const bf16* wsrc[WL];
    const bf16* xsrc[XL];
#pragma unroll
    for (int j = 0; j < WL; j++) wsrc[j] = w + (size_t)min(col0 + r0 + j * RSTEP, n - 1) * k + kb + u * 8;
#pragma unroll
    for (int j = 0; j < XL; j++) xsrc[j] = x + (size_t)min(tok0 + min(r0 + j * RSTEP, BM - 1), m - 1) * k + kb + u * 8;
    const unsigned int wdst = sbase + tile_unit<UNITS>(r0, u) * 16;
    const unsigned int xdst = sbase + (W_UNITS + r0 * UNITS + (u ^ (r0 & 7))) * 16;
    // Stage s's weights (or tokens) into the buffer `slot` bytes on, `koff`
    // elements past where the sources point (an immediate in the loop: the
    // sources move once a group of STAGES stages).
    auto load_w = [&](int s, int slot, int koff) {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < WL; j++) cp_async16_at(wdst + slot + j * ROW_STEP_BYTES, wsrc[j] + koff);
    };
    auto load_x = [&](int s, int slot, int koff) {
        if (s * BK + u * 8 >= span) return;
#pragma unroll
        for (int j = 0; j < XL; j++)
            if (r0 + j * RSTEP < BM) cp_async16_at(xdst + slot + j * ROW_STEP_BYTES, xsrc[j] + koff);
    };
    // The transpose (linear_wg.cu's transpose_x): piece p = (row p % BM,
    // chunk p / BM); its four source units and its first destination unit,
    // as byte offsets from the stage's token buffer and the wgmma tile.
    const unsigned char* smem = (const unsigned char*)tiles;
    unsigned char* wgx = (unsigned char*)tiles + STAGES * STAGE_BYTES;
    int tsrc[PER_THREAD][4], tdst[PER_THREAD], tk[PER_THREAD];
#pragma unroll
    for (int i = 0; i < PER_THREAD; i++) {
        int p = tid + i * NTHREADS, r = p % BM, c = p / BM;
#pragma unroll
        for (int q = 0; q < 4; q++) tsrc[i][q] = (W_UNITS + r * UNITS + ((4 * c + q) ^ (r & 7))) * 16;
        tdst[i] = (4 * c * BM + r) * 16;
        tk[i] = p < PIECES ? c * 32 : 1 << 30;  // past every span: no piece
    }
    auto transpose_x = [&](int s, int slot, int tile) {
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++) {
            if (s * BK + tk[i] >= span) continue;
            uint4 h[4];
#pragma unroll
            for (int q = 0; q < 4; q++) h[q] = *(const uint4*)(smem + slot + tsrc[i][q]);
            unsigned char* dst = wgx + tile * X_BYTES + tdst[i];
            *(uint4*)dst = make_uint4(h[0].x, h[1].x, h[2].x, h[3].x);
            *(uint4*)(dst + BM * 16) = make_uint4(h[0].y, h[1].y, h[2].y, h[3].y);
            *(uint4*)(dst + 2 * BM * 16) = make_uint4(h[0].z, h[1].z, h[2].z, h[3].z);
            *(uint4*)(dst + 3 * BM * 16) = make_uint4(h[0].w, h[1].w, h[2].w, h[3].w);
        }
    };
    // The weight fragments' offsets in a stage (rows g and g + 8 of the
    // warp's 16, as frag_at reads them).
    const int wc = (warp >> 2) * 64 + (warp & 3) * 16;
    int frag[CHUNKS];
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) frag[c] = tile_unit<UNITS>(wc + g, 4 * c + t) * 16;
    // The prologue (stream_prologue's order: every early stage's weights,
    // then pdl_wait, then each stage's tokens, a group a stage).
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++)
        if (s < nst) load_w(s, s * STAGE_BYTES, s * BK);
    pdl_wait();
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nst) load_x(s, s * STAGE_BYTES, s * BK);
        cp_async_commit();
    }
    float acc[1][BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; j++) acc[0][j][0] = acc[0][j][1] = acc[0][j][2] = acc[0][j][3] = 0.f;
    const unsigned long long desc0 = wg_desc_at(smem_addr(wgx), BM * 16, 128);
    if constexpr (EARLY) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        transpose_x(0, 0, 0);
    }
    for (int s0 = 0; s0 < nst; s0 += STAGES) {
        // The fragments' offsets held in registers (the compiler would
        // otherwise work them out again from the thread index every stage).
#pragma unroll
        for (int c = 0; c < CHUNKS; c++) asm volatile("" : "+r"(frag[c]));
#pragma unroll
        for (int i = 0; i < STAGES; i++) {
            const int s = s0 + i;
            if (s >= nst) break;
            if constexpr (EARLY) {
                cp_async_wait<STAGES - 3>();
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            } else {
                cp_async_wait<STAGES - 2>();
            }
            __syncthreads();
            const int next = s + STAGES - 1, next_slot = ((i + STAGES - 1) % STAGES) * STAGE_BYTES;
            if (next < nst) {
                load_w(next, next_slot, (STAGES - 1 + i) * BK);
                load_x(next, next_slot, (STAGES - 1 + i) * BK);
            }
            cp_async_commit();
            int tile = 0;
            if constexpr (EARLY) {
                if (s + 1 < nst) transpose_x(s + 1, ((i + 1) % STAGES) * STAGE_BYTES, (s + 1) & 1);
                tile = s & 1;
            } else {
                transpose_x(s, i * STAGE_BYTES, 0);
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                __syncthreads();
            }
            const int chunks = min(CHUNKS, (span - s * BK) / 32);
            Frag lo[CHUNKS], hi[CHUNKS];
#pragma unroll
            for (int c = 0; c < CHUNKS; c++) {
                if (c < chunks) {
                    uint4 a = *(const uint4*)(smem + i * STAGE_BYTES + frag[c]);
                    uint4 b = *(const uint4*)(smem + i * STAGE_BYTES + frag[c] + 8 * UNITS * 16);
                    lo[c] = Frag{a.x, a.y, a.z, a.w};
                    hi[c] = Frag{b.x, b.y, b.z, b.w};
                }
            }
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            // Descriptor of k group 4c (+ 2) of tile `tile`: the start
            // address field (address >> 4) moved along.
            const unsigned long long dtile = desc0 + ((unsigned)(tile * X_BYTES) >> 4);
#pragma unroll
            for (int c = 0; c < CHUNKS; c++) {
                if (c < chunks) {
                    unsigned long long d1 = dtile + (((4 * c) * BM * 16) >> 4);
                    unsigned long long d2 = dtile + (((4 * c + 2) * BM * 16) >> 4);
                    wg_mma_rs<BM>(acc[0], Frag{lo[c].a, hi[c].a, lo[c].b, hi[c].b}, d1);
                    wg_mma_rs<BM>(acc[0], Frag{lo[c].c, hi[c].c, lo[c].d, hi[c].d}, d2);
                }
            }
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
            for (int c = 0; c < CHUNKS; c++) {
                wg_hold(lo[c].a), wg_hold(lo[c].b), wg_hold(lo[c].c), wg_hold(lo[c].d);
                wg_hold(hi[c].a), wg_hold(hi[c].b), wg_hold(hi[c].c), wg_hold(hi[c].d);
            }
#pragma unroll
            for (int j = 0; j < BM / 8; j++)
                wg_hold(acc[0][j][0]), wg_hold(acc[0][j][1]), wg_hold(acc[0][j][2]), wg_hold(acc[0][j][3]);
        }
        // The sources at the next group's first stage.
#pragma unroll
        for (int j = 0; j < WL; j++) wsrc[j] += STAGES * BK;
#pragma unroll
        for (int j = 0; j < XL; j++) xsrc[j] += STAGES * BK;
    }
    cp_async_wait<0>();
    __syncthreads();
    tiles_store<1, BM / 8, NTHREADS>(acc, (float*)tiles, y, bias, m, n, parts, flags & 1, col0 + wc, tok0);
}

#define LINEAR_WG_LEAN(WGS, BM, CHUNKS, STAGES, EARLY, TAG)                                                 \
    extern "C" __global__ void __launch_bounds__(128 * WGS)                                                 \
        linear_wg_##WGS##_##BM##_##CHUNKS##_##STAGES##TAG##l_bf16(bf16* y, const bf16* x, const bf16* w,    \
                                                                  const bf16* bias, int m, int k, int n,    \
                                                                  int parts, int flags) {                   \
        linear_wg_lean<WGS, BM, CHUNKS, STAGES, EARLY>(y, x, w, bias, m, k, n, parts, flags);               \
    }
LINEAR_WG_LEAN(1, 16, 2, 4, false, )
LINEAR_WG_LEAN(2, 16, 2, 4, false, )
LINEAR_WG_LEAN(1, 32, 2, 4, false, )
LINEAR_WG_LEAN(2, 32, 2, 4, false, )
LINEAR_WG_LEAN(1, 64, 2, 4, false, )
LINEAR_WG_LEAN(2, 64, 2, 4, false, )
LINEAR_WG_LEAN(1, 16, 2, 3, false, )
LINEAR_WG_LEAN(1, 32, 2, 3, false, )
LINEAR_WG_LEAN(1, 64, 2, 3, false, )
LINEAR_WG_LEAN(2, 64, 2, 3, false, )
LINEAR_WG_LEAN(1, 16, 2, 4, true, e)
LINEAR_WG_LEAN(1, 32, 2, 4, true, e)
LINEAR_WG_LEAN(1, 64, 2, 4, true, e)
LINEAR_WG_LEAN(2, 64, 2, 4, true, e)
LINEAR_WG_LEAN(1, 64, 2, 5, true, e)
LINEAR_WG_LEAN(2, 64, 2, 5, true, e)

#endif
