
// ---------------------------------------------------------------------------
// Tensor-core pieces of the bf16 attention kernels (flash_prefill.cu,
// tree_attention.cu): a tile of AT_KEYS keys and values in shared memory
// (rows padded by 8 elements: conflict-free fragment loads), one warp's
// m16n8k16 products of 16 query vectors against it, and the value product.
// Every output element of an mma depends only on its own query vector and
// the tile's keys (never on the other 15 vectors), so a vector's scores and
// value sums are the same bits in whichever tile slot and with whichever
// neighbours it is computed.

#define AT_KEYS 64
#define AT_THREADS 128

__device__ __forceinline__ void at_mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                       unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned at_smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared without passing through registers.
__device__ __forceinline__ void at_cp16(void* smem, const void* g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(at_smem_addr(smem)), "l"(g));
}

__device__ __forceinline__ void at_cp_wait_all() {
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

// Two floats as packed bf16 (round to nearest even), `lo` in the low half.
__device__ __forceinline__ unsigned at_pack(float lo, float hi) {
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// Tile row stride in elements.
template <int HD>
__device__ __forceinline__ constexpr int at_stride() { return HD + 8; }

// Loads AT_KEYS keys and values of one kv head into ks/vs: tile row i from
// pool entry entry_of(i) (< 0: zeros). Every thread of the block takes part;
// the caller waits (at_cp_wait_all) and synchronises.
template <int HD, typename F>
__device__ __forceinline__ void at_load_tile(bf16* ks, bf16* vs, const bf16* kp, const bf16* vp, size_t width,
                                             int kvh, F entry_of) {
    constexpr int PER_ROW = HD / 8;  // 16-byte pieces per key
    for (int c = threadIdx.x; c < AT_KEYS * PER_ROW; c += blockDim.x) {
        int i = c / PER_ROW, piece = c % PER_ROW;
        long e = entry_of(i);
        bf16* kd = ks + i * at_stride<HD>() + piece * 8;
        bf16* vd = vs + i * at_stride<HD>() + piece * 8;
        if (e >= 0) {
            size_t off = (size_t)e * width + (size_t)kvh * HD + piece * 8;
            at_cp16(kd, kp + off);
            at_cp16(vd, vp + off);
        } else {
            *(uint4*)kd = make_uint4(0, 0, 0, 0);
            *(uint4*)vd = make_uint4(0, 0, 0, 0);
        }
    }
}

// A fragments of 16 query vectors (rows g and g + 8 of the warp's tile:
// q0 and q1, null for none) over HD.
template <int HD>
__device__ __forceinline__ void at_load_q(unsigned (&qa)[HD / 16][4], const bf16* q0, const bf16* q1, int lane) {
    int t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        int d = kk * 16 + 2 * t;
        qa[kk][0] = q0 ? *(const unsigned*)(q0 + d) : 0u;
        qa[kk][1] = q1 ? *(const unsigned*)(q1 + d) : 0u;
        qa[kk][2] = q0 ? *(const unsigned*)(q0 + d + 8) : 0u;
        qa[kk][3] = q1 ? *(const unsigned*)(q1 + d + 8) : 0u;
    }
}

// Raw scores s[n][.] of the warp's 16 vectors against NS x 8 keys from ks
// (a tile's rows): s[n][0..1] = (vector g, keys 8n + 2t, +1), s[n][2..3] =
// vector g + 8.
template <int HD, int NS = AT_KEYS / 8>
__device__ __forceinline__ void at_scores(float (&s)[NS][4], const unsigned (&qa)[HD / 16][4], const bf16* ks,
                                          int lane) {
    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int n = 0; n < NS; n++) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        const bf16* kr = ks + (n * 8 + g) * at_stride<HD>() + 2 * t;
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            unsigned b0 = *(const unsigned*)(kr + kk * 16);
            unsigned b1 = *(const unsigned*)(kr + kk * 16 + 8);
            at_mma(s[n], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], b0, b1);
        }
    }
}

// The A fragment of P for the 16 keys of s[2 kk] and s[2 kk + 1] (weights in
// the layout of at_scores, rounded to bf16).
template <int NS>
__device__ __forceinline__ uint4 at_p_frag(const float (&p)[NS][4], int kk) {
    return make_uint4(at_pack(p[2 * kk][0], p[2 * kk][1]), at_pack(p[2 * kk][2], p[2 * kk][3]),
                      at_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]), at_pack(p[2 * kk + 1][2], p[2 * kk + 1][3]));
}

// o += P V over the tile for NP 16-wide output column pairs: o[2j], o[2j + 1]
// hold pair pair0 + j stride (columns 16 (pair0 + j stride) .. + 15;
// o[.][0..1] = vector g, o[.][2..3] = g + 8), P's fragment for keys
// 16 kk .. 16 kk + 15 from frag(kk). A pair's sums are the same mma chain
// whichever pairs a warp takes.
template <int HD, int NP, typename F>
__device__ __forceinline__ void at_pv_frags(float (&o)[2 * NP][4], F frag, const bf16* vs, int lane, int pair0 = 0,
                                            int stride = 1) {
#pragma unroll
    for (int kk = 0; kk < AT_KEYS / 16; kk++) {
        uint4 a = frag(kk);
        // Lane l addresses row (key) 16 kk + 8 ((l / 8) % 2) + l % 8 of the
        // column block 8 (2 pair + l / 16).
        int key = kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
#pragma unroll
        for (int j = 0; j < NP; j++) {
            const bf16* src = vs + key * at_stride<HD>() + (2 * (pair0 + j * stride) + (lane >> 4)) * 8;
            unsigned r0, r1, r2, r3;
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                         : "r"(at_smem_addr(src)));
            at_mma(o[2 * j], a.x, a.y, a.z, a.w, r0, r1);
            at_mma(o[2 * j + 1], a.x, a.y, a.z, a.w, r2, r3);
        }
    }
}

// The 8-wide output column block o[j] holds for a warp that takes the
// column pairs pair0, pair0 + stride, ... (at_pv_frags): o[2i] and o[2i + 1]
// are pair pair0 + i stride's two halves.
__device__ __forceinline__ int at_col8(int j, int pair0, int stride) { return 2 * (pair0 + j / 2 * stride) + j % 2; }

// o[nd][.] += P V over the tile (P: the weights p[n][.] in the layout of
// at_scores, rounded to bf16); o[nd][0..1] = (vector g, d = 8 nd + 2t, +1).
template <int HD>
__device__ __forceinline__ void at_pv(float (&o)[HD / 8][4], const float (&p)[AT_KEYS / 8][4], const bf16* vs,
                                      int lane) {
    at_pv_frags<HD, HD / 16>(o, [&](int kk) { return at_p_frag(p, kk); }, vs, lane);
}

// Masks s to the vectors' visible tile rows (vector g: rows < lim0; g + 8:
// < lim1; rows counted from s[0]) and returns their maxima over the warp's
// four lanes of each vector.
template <int NS = AT_KEYS / 8>
__device__ __forceinline__ void at_mask_max(float (&s)[NS][4], int lim0, int lim1, int lane, float& mx0,
                                            float& mx1) {
    int t = lane & 3;
    mx0 = -INFINITY;
    mx1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < NS; n++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int i = n * 8 + 2 * t + j;
            if (i >= lim0) s[n][j] = -INFINITY;
            if (i >= lim1) s[n][2 + j] = -INFINITY;
            mx0 = fmaxf(mx0, s[n][j]);
            mx1 = fmaxf(mx1, s[n][2 + j]);
        }
    }
#pragma unroll
    for (int o = 1; o < 4; o <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, o));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, o));
    }
}

// p = exp(scale (s - m)) in place (0 where masked) and the vectors' sums
// over the tile (each lane's 16 in key order, then the four lanes pairwise).
__device__ __forceinline__ void at_exp_sum(float (&s)[AT_KEYS / 8][4], float m0, float m1, float sl2, float& l0,
                                           float& l1) {
    float b0 = m0 == -INFINITY ? 0.f : m0 * sl2, b1 = m1 == -INFINITY ? 0.f : m1 * sl2;
    l0 = 0.f;
    l1 = 0.f;
#pragma unroll
    for (int n = 0; n < AT_KEYS / 8; n++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            s[n][j] = exp2f(fmaf(s[n][j], sl2, -b0));
            s[n][2 + j] = exp2f(fmaf(s[n][2 + j], sl2, -b1));
            l0 += s[n][j];
            l1 += s[n][2 + j];
        }
    }
#pragma unroll
    for (int o = 1; o < 4; o <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, o);
        l1 += __shfl_xor_sync(0xffffffffu, l1, o);
    }
}
