
// ---------------------------------------------------------------------------
// Latent attention on tensor cores (bf16, sm_80+): the split-K latent
// attention of mla.cu with a block's 16 query heads as the 16 rows of
// mma.m16n8k16, so that one block scores a chunk of keys against 16 heads
// and sums their outputs at once (the FMA kernel takes one or four heads a
// block). Block (row r, group g of 16 heads, split s) takes the keys [s *
// MLA_MMA_KEYS, (s + 1) * MLA_MMA_KEYS) of row r's key list:
//
// 1. The chunk's cache rows (zeros past the row's last key) and the 16 heads'
//    query rows are staged in shared memory, rows MLA_MMA_PAD values longer
//    than D so that the fragment loads below spread over the banks.
// 2. Scores: warp w takes the 8 keys of tile w % 4 and the 32-wide chunks of
//    D of parity w / 4 in ascending order (lane (g, t) holds 8 contiguous
//    values of heads g, g + 8 and of key g: the same k map for both operands,
//    so the products are exact dot products); the two parities' sums are
//    added in that order, times the scale.
// 3. Softmax over the chunk: warp w takes heads 2w, 2w + 1, a lane per key:
//    the max, p = e^(s - max) rounded to bf16 (the operand of the output
//    product), and the sum of the rounded p (lanes' values, xor tree).
// 4. Output: warp w the columns [w * lora / 8, (w + 1) * lora / 8) of
//    sum_e p_e c_e, keys in two 16-key steps in order, the cache rows as the
//    B operand through ldmatrix.trans.
// 5. As the FMA kernel: each block writes its unnormalised partial output
//    and (max, sum) per head; the last block of (row, group) merges the
//    splits in split order (mla_merge_t).
//
// Nothing in a row's arithmetic depends on another row, the batch or the
// launch's shape: decode and verification rows with the same keys give the
// same bits. Needs heads % 16 == 0, D % 32 == 0, D <= 768, lora % 64 == 0
// (the launcher checks). Dynamic shared memory: mla_mma_smem in mla_attention.rs.

#define MLA_MMA_KEYS 32
#define MLA_MMA_PAD 8

// B operand of mma.m16n8k16 for the 16 x 8 block at `p` of a row-major
// [k][n] bf16 array in shared memory whose rows are `stride` values apart:
// lanes 0-7 address rows 0-7, lanes 8-15 rows 8-15 (ldmatrix .trans).
__device__ __forceinline__ void ldsm_b_trans(unsigned int& b0, unsigned int& b1, const bf16* p, int stride, int lane) {
#if __CUDA_ARCH__ >= 800
    const bf16* row = p + (size_t)(lane & 15) * stride;
    unsigned int a = (unsigned int)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(b0), "=r"(b1) : "r"(a));
#endif
}

extern "C" __global__ void mla_attention_mma_bf16(bf16* out, float* part_out, float* part_ml, int* counters,
                                                  const bf16* qcat, const bf16* pool, const int* base,
                                                  const int* prefix, const int* extra_off, const int* extra,
                                                  int heads, int lora, int rd, float scale, int chunk,
                                                  long pool_offset, int row0) {
    // Its own name: an extern "C" kernel's dynamic shared array would
    // clash in linkage with the templates' `smem`.
    extern __shared__ float mma_smem[];
    pdl_enter();
    constexpr int H = 16, NK = MLA_MMA_KEYS;
    int d = lora + rd, dp = d + MLA_MMA_PAD, per = d / 8;
    int rl = blockIdx.x, r = row0 + rl, g0 = blockIdx.y, s = blockIdx.z, splits = gridDim.z;
    int h0 = g0 * H;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    MlaRowKeys rk = mla_row_keys(base, prefix, extra_off, r);
    int start = s * NK, n = min(rk.n, start + NK) - start;
    size_t first = ((size_t)rl * heads + h0) * splits;  // slot of (rl, h0, split 0)
    bf16* ks = (bf16*)mma_smem;                          // [NK][dp]
    bf16* qs = ks + NK * dp;                             // [H][dp]
    float* ps = (float*)(qs + H * dp);                   // [2][H][NK]: the two parities' scores
    bf16* pb = (bf16*)(ps + 2 * H * NK);                 // [H][NK + 8]: p in bf16
    constexpr int PBS = NK + 8;
    if (n <= 0) {
        mla_empty_split(part_out, part_ml, first, H, lora, splits, s);
    } else {
        // 1. Warp w stages keys w, w + 8, w + 16, w + 24 and heads w, w + 8,
        // every 16-byte slice of them loaded before any is stored.
        const bf16* kp = pool + pool_offset;
        const bf16* qh = qcat + ((size_t)r * heads + h0) * d;
        const uint4 zero4 = make_uint4(0u, 0u, 0u, 0u);
        uint4 kv[4][3], qv[2][3];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int j = warp + 8 * u, jj = start + j;
            if (j >= n) {
#pragma unroll
                for (int sl = 0; sl < 3; sl++) kv[u][sl] = zero4;
                continue;
            }
            const uint4* row = (const uint4*)(kp + (size_t)rk.entry(extra, jj) * d);
#pragma unroll
            for (int sl = 0; sl < 3; sl++)
                if (lane + 32 * sl < per) kv[u][sl] = row[lane + 32 * sl];
        }
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const uint4* row = (const uint4*)(qh + (size_t)(warp + 8 * u) * d);
#pragma unroll
            for (int sl = 0; sl < 3; sl++)
                if (lane + 32 * sl < per) qv[u][sl] = row[lane + 32 * sl];
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int sl = 0; sl < 3; sl++)
                if (lane + 32 * sl < per) *(uint4*)(ks + (size_t)(warp + 8 * u) * dp + 8 * (lane + 32 * sl)) = kv[u][sl];
#pragma unroll
        for (int u = 0; u < 2; u++)
#pragma unroll
            for (int sl = 0; sl < 3; sl++)
                if (lane + 32 * sl < per) *(uint4*)(qs + (size_t)(warp + 8 * u) * dp + 8 * (lane + 32 * sl)) = qv[u][sl];
        __syncthreads();
        // 2. Scores of key tile w % 4 over the chunks of parity w / 4.
        {
            int tile = warp & 3, par = warp >> 2;
            const bf16* qlo = qs + (size_t)g * dp + 8 * t;
            const bf16* qhi = qs + (size_t)(g + 8) * dp + 8 * t;
            const bf16* kr = ks + (size_t)(8 * tile + g) * dp + 8 * t;
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 5
            for (int c = 32 * par; c < d; c += 64) mma_chunk(acc, ld_frag(qlo + c), ld_frag(qhi + c), ld_frag(kr + c));
            float* sp = ps + par * H * NK;
            int key = 8 * tile + 2 * t;
            sp[g * NK + key] = acc[0];
            sp[g * NK + key + 1] = acc[1];
            sp[(g + 8) * NK + key] = acc[2];
            sp[(g + 8) * NK + key + 1] = acc[3];
        }
        __syncthreads();
        // 3. Softmax of heads 2w, 2w + 1, lane j the chunk's key j.
#pragma unroll
        for (int u = 0; u < 2; u++) {
            int hh = 2 * warp + u;
            bool live = lane < n;
            float v = live ? (ps[hh * NK + lane] + ps[H * NK + hh * NK + lane]) * scale : -INFINITY;
            float mx = v;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            bf16 pv;
            st(&pv, live ? expf(v - mx) : 0.f);
            pb[hh * PBS + lane] = pv;
            float sum = ld(&pv);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            if (lane == 0) {
                size_t slot = first + (size_t)hh * splits + s;
                part_ml[2 * slot] = mx;
                part_ml[2 * slot + 1] = sum;
            }
        }
        __syncthreads();
        // 4. Output columns of warp w: two 16-key steps, 8-column tiles.
        int cols = lora / 8, c0 = warp * cols;
        unsigned int a[2][4];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const bf16* plo = pb + (size_t)g * PBS + 16 * k + 2 * t;
            const bf16* phi = pb + (size_t)(g + 8) * PBS + 16 * k + 2 * t;
            a[k][0] = *(const unsigned int*)plo;
            a[k][1] = *(const unsigned int*)phi;
            a[k][2] = *(const unsigned int*)(plo + 8);
            a[k][3] = *(const unsigned int*)(phi + 8);
        }
        for (int nt = 0; nt < cols; nt += 8) {
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int k = 0; k < 2; k++) {
                unsigned int b0, b1;
                ldsm_b_trans(b0, b1, ks + (size_t)(16 * k) * dp + c0 + nt, dp, lane);
                mma_bf16(acc, a[k][0], a[k][1], a[k][2], a[k][3], b0, b1);
            }
            int col = c0 + nt + 2 * t;
            *(float2*)&part_out[(first + (size_t)g * splits + s) * lora + col] = make_float2(acc[0], acc[1]);
            *(float2*)&part_out[(first + (size_t)(g + 8) * splits + s) * lora + col] = make_float2(acc[2], acc[3]);
        }
    }
    mla_finish_split(out + ((size_t)r * heads + h0) * lora, part_out + first * lora, part_ml + 2 * first, counters, H, lora,
                     splits, mma_smem, H);
}
