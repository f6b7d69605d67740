
// ---------------------------------------------------------------------------
// Batch-invariant linear on warpgroup mma (wgmma, sm_90a only), for tiles
// of 16-64 tokens.
//
// Same arithmetic per output as linear_mma.cu and linear_tiles.cu (k in
// `parts` slices from the weight's shape, each summed from zero in
// ascending 32-wide chunks, each chunk as the same two k16 steps over the
// same k, the slices added in slice order through the cluster), so a row's
// bits are the same in any of the three kernels and any batch:
// `specula-gpu-check --wgmma-bits` showed that a wgmma.m64nNk16 chain gives
// the bits of the mma.m16n8k16 chain over the same operands, whatever N.
// What differs is the instruction: one warpgroup's wgmma multiplies its 64
// weight rows by every token of the tile, at the full tensor-core rate,
// where mma.sync needs a warp instruction per 8 tokens.
//
// The k-to-step map is the engine's: lane (g, t) holds k 8t..8t+7 of a
// chunk; step 1 takes k 8t..8t+3 of each t, step 2 k 8t+4..8t+7. The
// weights (wgmma's A, in registers) are read from shared memory as
// linear_tiles.cu reads them. The tokens (B) come from shared memory
// through a descriptor, in wgmma's no-swizzle K-major layout of 8-token x
// 16-byte core matrices, where a core matrix row holds 8 consecutive k of
// the step: so each token's 64-byte chunk is stored with its 4-byte words
// transposed (the core matrix of k group 4c + w holds word w of the
// chunk's four 16-byte units), which cp.async cannot do: the tokens stream
// into the stages in x's order with the weights, and each stage's are
// copied transposed into one wgmma tile just before its steps (through
// registers from an L2 load instead, a stage ahead, the load's latency
// stood in every stage: 1.5-2x slower).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// One wgmma.m64nNk16, A (64 weight rows x 16 k) from registers in the
// mma.m16n8k16 fragment order, B (N tokens x 16 k) through descriptor `b`,
// accumulating into d (d[j] = the mma accumulator of tokens 8j..8j+7).
template <int N>
__device__ __forceinline__ void wg_mma_rs(float (&d)[N / 8][4], const Frag& a, unsigned long long b);
template <>
__device__ __forceinline__ void wg_mma_rs<16>(float (&d)[2][4], const Frag& a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3])
        : "r"(a.a), "r"(a.b), "r"(a.c), "r"(a.d), "l"(b), "r"(1));
}
template <>
__device__ __forceinline__ void wg_mma_rs<32>(float (&d)[4][4], const Frag& a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
        : "r"(a.a), "r"(a.b), "r"(a.c), "r"(a.d), "l"(b), "r"(1));
}
template <>
__device__ __forceinline__ void wg_mma_rs<64>(float (&d)[8][4], const Frag& a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
        : "r"(a.a), "r"(a.b), "r"(a.c), "r"(a.d), "l"(b), "r"(1));
}

// Keeps `v` in its register, unread and unwritten, across the asm around
// it: the accumulators and A operands of wgmma in flight.
__device__ __forceinline__ void wg_hold(float& v) { asm volatile("" : "+f"(v)::"memory"); }
__device__ __forceinline__ void wg_hold(unsigned int& v) { asm volatile("" : "+r"(v)::"memory"); }

// The per-stage copy of a stage's tokens (x's order, 16-byte unit u of row
// r at u ^ (r % 8), so that eight rows' same unit are eight bank groups)
// into a wgmma token tile (module comment), by NTHREADS threads: piece p =
// (row p % BM, chunk p / BM); thread tid's pieces' four source units and
// first destination unit, as byte offsets from the stage's buffer (its
// tokens after W_UNITS weight units) and from the token tile.
template <int BM, int CHUNKS, int W_UNITS, int NTHREADS>
struct TokenTranspose {
    static constexpr int UNITS = 4 * CHUNKS, PIECES = BM * CHUNKS, PER_THREAD = (PIECES + NTHREADS - 1) / NTHREADS;
    int src[PER_THREAD][4], dst[PER_THREAD], kof[PER_THREAD];
    __device__ __forceinline__ explicit TokenTranspose(int tid) {
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++) {
            int p = tid + i * NTHREADS, r = p % BM, c = p / BM;
#pragma unroll
            for (int q = 0; q < 4; q++) src[i][q] = (W_UNITS + r * UNITS + ((4 * c + q) ^ (r & 7))) * 16;
            dst[i] = (4 * c * BM + r) * 16;
            kof[i] = p < PIECES ? c * 32 : 1 << 30;  // past every span: no piece
        }
    }
    // Stage s's tokens (the stage at `stage`) into the token tile at `tile`;
    // chunks past the slice's `span` are left alone.
    __device__ __forceinline__ void run(const unsigned char* stage, unsigned char* tile, int s, int span) const {
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++) {
            if (s * 32 * CHUNKS + kof[i] >= span) continue;
            uint4 h[4];
#pragma unroll
            for (int q = 0; q < 4; q++) h[q] = *(const uint4*)(stage + src[i][q]);
            unsigned char* d = tile + dst[i];
            *(uint4*)d = make_uint4(h[0].x, h[1].x, h[2].x, h[3].x);
            *(uint4*)(d + BM * 16) = make_uint4(h[0].y, h[1].y, h[2].y, h[3].y);
            *(uint4*)(d + 2 * BM * 16) = make_uint4(h[0].z, h[1].z, h[2].z, h[3].z);
            *(uint4*)(d + 3 * BM * 16) = make_uint4(h[0].w, h[1].w, h[2].w, h[3].w);
        }
    }
};

// One stage's wgmma steps of a warpgroup: its weight fragments read from
// the stage at `stage` (offsets `frag`, row g + 8 eight rows of UNITS units
// on), then each of the `chunks` chunks' two k16 steps against the token
// tile of descriptor `dtile`, waited for.
template <int BM, int CHUNKS>
__device__ __forceinline__ void wg_stage_steps(float (&acc)[1][BM / 8][4], const unsigned char* stage,
                                               const int (&frag)[CHUNKS], unsigned long long dtile, int chunks) {
    constexpr int UNITS = 4 * CHUNKS;
    Frag lo[CHUNKS], hi[CHUNKS];
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) {
        if (c < chunks) {
            lo[c] = ld_frag((const bf16*)(stage + frag[c]));
            hi[c] = ld_frag((const bf16*)(stage + frag[c] + 8 * UNITS * 16));
        }
    }
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    // Descriptor of k group 4c (+ 2): the start address field (address >> 4)
    // moved along.
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

// Blocks of WGS warpgroups, each 64 output columns x the BM tokens of the
// block's tile; stages of 32 CHUNKS k, STAGES deep, and the wgmma token
// tile after them. Grid and cluster as linear_tiles.cu's.
// EARLY: two wgmma token tiles; stage s + 1's tokens are transposed while
// stage s's steps run, one barrier a stage instead of two (one stage fewer
// in flight for the same STAGES).
// Addresses as linear_tiles.cu's: worked out once, the loop unrolled by
// STAGES (results/h200/narrow64-2026-12-06: a stage of one warpgroup x 32
// tokens was 206 instructions a warp, 4 of them wgmma, when each stage
// worked out its sources, slots and fragment offsets again; ~103 now).
template <int WGS, int BM, int CHUNKS, int STAGES, bool EARLY>
__device__ __forceinline__ void linear_wg(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k,
                                          int n, int parts, int flags) {
    constexpr int BN = 64 * WGS, NTHREADS = 128 * WGS, UNITS = 4 * CHUNKS, BK = 32 * CHUNKS;
    constexpr int W_UNITS = BN * UNITS, STAGE_UNITS = (BN + BM) * UNITS;
    constexpr int STAGE_BYTES = STAGE_UNITS * 16, X_UNITS = BM * UNITS, X_BYTES = X_UNITS * 16;
    static_assert(STAGES >= (EARLY ? 3 : 2) && BM % 16 == 0 && BM <= 64, "wgmma N of 16-64, double-buffered at least");
    static_assert(STAGES * STAGE_BYTES >= tile_sums_bytes<BN, BM>(), "the tile's sums fit the stage buffers");
    extern __shared__ uint4 tiles[];
    pdl_launch_dependents();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int part = blockIdx.x, tok0 = blockIdx.y * BM, col0 = blockIdx.z * BN;
    const int span = k / parts, kb = part * span, nst = (span + BK - 1) / BK;
    const unsigned int sbase = smem_addr(tiles);
    // The loads as linear_tiles.cu's; the tokens in TokenTranspose's order.
    const int r0 = tid / UNITS;
    StageLoads<BN, BM, UNITS, NTHREADS> loads(w, x, m, n, k, kb, span, col0, tok0, sbase,
                                              W_UNITS + r0 * UNITS + ((tid % UNITS) ^ (r0 & 7)), tid);
    const unsigned char* smem = (const unsigned char*)tiles;
    unsigned char* wgx = (unsigned char*)tiles + STAGES * STAGE_BYTES;
    const TokenTranspose<BM, CHUNKS, W_UNITS, NTHREADS> transpose(tid);
    auto transpose_x = [&](int s, int slot, int tile) { transpose.run(smem + slot, wgx + tile * X_BYTES, s, span); };
    // The weight fragments' offsets in a stage (rows g and g + 8 of the
    // warp's 16, unit 4c + t of row g's swizzle; row g + 8 is 8 rows on).
    const int wc = (warp >> 2) * 64 + (warp & 3) * 16;
    int frag[CHUNKS];
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) frag[c] = tile_unit<UNITS>(wc + g, 4 * c + t) * 16;
    loads.prologue<STAGES>(nst, STAGE_BYTES);
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
            loads.next_stage<STAGES>(s, i, nst, STAGE_BYTES);
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
            wg_stage_steps<BM, CHUNKS>(acc, smem + i * STAGE_BYTES, frag,
                                       desc0 + ((unsigned)(tile * X_BYTES) >> 4), chunks);
        }
        loads.advance(STAGES * BK);  // the sources at the next group's first stage
    }
    cp_async_wait<0>();
    __syncthreads();
    tiles_store<1, BM / 8, NTHREADS, BN, BM>(acc, (float*)tiles, y, bias, m, n, parts, flags & 1, col0, tok0, wc, 0);
}

#define LINEAR_WG(WGS, BM, CHUNKS, STAGES, EARLY, TAG)                                                     \
    extern "C" __global__ void __launch_bounds__(128 * WGS)                                                 \
        linear_wg_##WGS##_##BM##_##CHUNKS##_##STAGES##TAG##_bf16(bf16* y, const bf16* x, const bf16* w,     \
                                                                 const bf16* bias, int m, int k, int n,     \
                                                                 int parts, int flags) {                    \
        linear_wg<WGS, BM, CHUNKS, STAGES, EARLY>(y, x, w, bias, m, k, n, parts, flags);                    \
    }
LINEAR_WG(1, 16, 2, 4, false, )
LINEAR_WG(2, 16, 2, 4, false, )
LINEAR_WG(1, 32, 2, 4, false, )
LINEAR_WG(2, 32, 2, 4, false, )
LINEAR_WG(1, 64, 2, 4, false, )
LINEAR_WG(2, 64, 2, 4, false, )
LINEAR_WG(1, 16, 2, 3, false, )
LINEAR_WG(1, 32, 2, 3, false, )
LINEAR_WG(1, 64, 2, 3, false, )
LINEAR_WG(2, 64, 2, 3, false, )
LINEAR_WG(1, 16, 2, 4, true, e)
LINEAR_WG(1, 32, 2, 4, true, e)
LINEAR_WG(1, 64, 2, 4, true, e)
LINEAR_WG(2, 64, 2, 4, true, e)
LINEAR_WG(1, 64, 2, 5, true, e)
LINEAR_WG(2, 64, 2, 5, true, e)

#endif
