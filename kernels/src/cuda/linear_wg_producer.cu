
// ---------------------------------------------------------------------------
// The wgmma linear with a producer warpgroup (sm_90a only).
//
// linear_wg.cu's stages, operands and wgmma steps in the same order (so the
// same bits), with the work split between the block's warpgroups: the last
// one, the producer, streams the stages in through cp.async and copies each
// stage's tokens transposed into a wgmma token tile; the first WGS, the
// consumers, read their weight fragments and run the steps. They hand the
// stages over through named barriers: FULL(slot) once a stage's weights have
// landed and its tokens are transposed (the producer arrives, the consumers
// wait), EMPTY(slot) once the consumers' steps on it are done, its weight
// fragments read and its token tile multiplied (the other way round). So a
// stage's loads, waits and transpose overlap the last stage's steps, on
// warps of their own: at 64 rows the single-role loop's four warps spent
// their time waiting on their own loads, transposes and barriers in turn
// (results/h200/narrow64-2026-12-06, deep-2026-12-06).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// WGS consumer warpgroups (64 output columns each) and one producer
// warpgroup a block, BM tokens, stages of 32 CHUNKS k, STAGES deep, two
// wgmma token tiles (stage s's in tile s % 2). Grid and cluster as
// linear_wg.cu's. Barriers: FULL(i) = 1 + i, EMPTY(i) = 1 + STAGES + i,
// the producer's own 1 + 2 STAGES.
template <int WGS, int BM, int CHUNKS, int STAGES>
__device__ __forceinline__ void linear_wg_producer(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,
                                                   int k, int n, int parts, int flags) {
    constexpr int BN = 64 * WGS, CONSUMERS = 128 * WGS, NTHREADS = CONSUMERS + 128, UNITS = 4 * CHUNKS;
    constexpr int BK = 32 * CHUNKS, W_UNITS = BN * UNITS, STAGE_BYTES = (BN + BM) * UNITS * 16;
    constexpr int X_BYTES = BM * UNITS * 16, PRODUCER_BAR = 1 + 2 * STAGES;
    static_assert(STAGES >= 2 && PRODUCER_BAR < 16 && BM % 16 == 0 && BM <= 64, "barrier ids 1-15, wgmma N 16-64");
    static_assert(STAGES * STAGE_BYTES >= tile_sums_bytes<BN, BM>(), "the tile's sums fit the stage buffers");
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    const int tid = threadIdx.x;
    const int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    const int span = k / parts, kb = part * span, nst = (span + BK - 1) / BK;
    const unsigned char* smem = (const unsigned char*)tiles;
    unsigned char* wgx = (unsigned char*)tiles + STAGES * STAGE_BYTES;
    if (tid >= CONSUMERS) {
        // The producer: loads and token tiles, as linear_wg.cu's non-early
        // loop has them, each stage handed over through FULL; the slot a
        // stage's loads go to (the last stage's) only once EMPTY says the
        // consumers are done with it, and that stage's token tile with it.
        const int p = tid - CONSUMERS, r0 = p / UNITS;
        StageLoads<BN, BM, UNITS, 128> loads(w, x, m, n, k, kb, span, col0, tok0, smem_addr(tiles),
                                             W_UNITS + r0 * UNITS + ((p % UNITS) ^ (r0 & 7)), p);
        const TokenTranspose<BM, CHUNKS, W_UNITS, 128> transpose(p);
        loads.prologue<STAGES>(nst, STAGE_BYTES);
        for (int s0 = 0; s0 < nst; s0 += STAGES) {
#pragma unroll
            for (int i = 0; i < STAGES; i++) {
                const int s = s0 + i;
                if (s >= nst) break;
                cp_async_wait<STAGES - 2>();
                named_sync(PRODUCER_BAR, 128);  // every producer thread's loads of stage s are in
                transpose.run(smem + i * STAGE_BYTES, wgx + (s & 1) * X_BYTES, s, span);
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                named_arrive(1 + i, NTHREADS);
                if (s > 0) named_sync(1 + STAGES + (i + STAGES - 1) % STAGES, NTHREADS);
                loads.next_stage<STAGES>(s, i, nst, STAGE_BYTES);
            }
            loads.advance(STAGES * BK);
        }
        cp_async_wait<0>();
        __syncthreads();
        if (parts > 1) {
            // tiles_store's two cluster barriers, which every thread of the
            // cluster's blocks must reach.
            cluster_sync();
            cluster_sync();
        }
        return;
    }
    // The consumers: linear_wg.cu's steps, stage by stage.
    pdl_wait();  // the output may still be read by the kernel before
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int wc = (warp >> 2) * 64 + (warp & 3) * 16;
    int frag[CHUNKS];
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) frag[c] = tile_unit<UNITS>(wc + g, 4 * c + t) * 16;
    float acc[1][BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; j++) acc[0][j][0] = acc[0][j][1] = acc[0][j][2] = acc[0][j][3] = 0.f;
    const unsigned long long desc0 = wg_desc_at(smem_addr(wgx), BM * 16, 128);
    for (int s0 = 0; s0 < nst; s0 += STAGES) {
#pragma unroll
        for (int c = 0; c < CHUNKS; c++) asm volatile("" : "+r"(frag[c]));
#pragma unroll
        for (int i = 0; i < STAGES; i++) {
            const int s = s0 + i;
            if (s >= nst) break;
            named_sync(1 + i, NTHREADS);
            const int chunks = min(CHUNKS, (span - s * BK) / 32);
            wg_stage_steps<BM, CHUNKS>(acc, smem + i * STAGE_BYTES, frag,
                                       desc0 + ((unsigned)((s & 1) * X_BYTES) >> 4), chunks);
            if (s + 1 < nst) named_arrive(1 + STAGES + i, NTHREADS);
        }
    }
    __syncthreads();
    tiles_store<1, BM / 8, CONSUMERS, BN, BM>(acc, (float*)tiles, y, bias, m, n, parts, flags & 1, col0, tok0, wc, 0);
}

#define LINEAR_WG_PRODUCER(WGS, BM, CHUNKS, STAGES)                                                         \
    extern "C" __global__ void __launch_bounds__(128 * WGS + 128)                                           \
        linear_wg_##WGS##_##BM##_##CHUNKS##_##STAGES##p_bf16(bf16* y, const bf16* x, const bf16* w,         \
                                                             const bf16* bias, int m, int k, int n,         \
                                                             int parts, int flags) {                        \
        linear_wg_producer<WGS, BM, CHUNKS, STAGES>(y, x, w, bias, m, k, n, parts, flags);                  \
    }
LINEAR_WG_PRODUCER(1, 16, 2, 4)
LINEAR_WG_PRODUCER(1, 32, 2, 4)
LINEAR_WG_PRODUCER(1, 64, 2, 4)
LINEAR_WG_PRODUCER(2, 64, 2, 4)
LINEAR_WG_PRODUCER(2, 32, 2, 4)
LINEAR_WG_PRODUCER(2, 64, 2, 3)

#endif
