
// ---------------------------------------------------------------------------
// Batch-invariant small-row linear in FMA (f32, or bf16 when k is not a
// multiple of 32 or SPECULA_LINEAR=fma).

// y[m, n] = x[m, k] W[n, k]^T (+ bias) for few rows: each warp computes C
// adjacent output columns for a tile of R <= 8 rows, so one x load serves C
// columns and one weight load serves R rows. Every lane sums its own
// k-slice in ascending order and the warp reduces in a fixed tree; neither
// depends on R, C, m or the other rows, so an output is bit-identical
// whatever batch it is computed in (batch-invariant: the verify forward
// gives the baseline decode's rows exactly).
template <typename T, int R, int C, bool SILU>
__device__ __forceinline__ void linear_rows_tile(T* y, const T* x, const T* w, const T* bias, int k, int n, int col0, int lane) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = C >= 4 ? 1 : 4 / C;
    const int stride = 32 * VEC;
    const T* wr[C];
#pragma unroll
    for (int c = 0; c < C; c++) wr[c] = w + (size_t)min(col0 + c, n - 1) * k;
    float acc[C][R];
#pragma unroll
    for (int c = 0; c < C; c++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[c][r] = 0.f;
    int kv = (k % VEC == 0) ? k : 0;
    int i = lane * VEC;
    for (; i + (U - 1) * stride < kv; i += U * stride) {
        float wv[U][C][VEC];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int c = 0; c < C; c++) ld16(wr[c] + i + u * stride, wv[u][c]);
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                float xv[VEC];
                ld16(x + (size_t)r * k + i + u * stride, xv);
#pragma unroll
                for (int c = 0; c < C; c++) {
                    float s = 0.f;
#pragma unroll
                    for (int j = 0; j < VEC; j++) s = fmaf(wv[u][c][j], xv[j], s);
                    acc[c][r] += s;
                }
            }
        }
    }
    for (; i < kv; i += stride) {
        float wv[C][VEC];
#pragma unroll
        for (int c = 0; c < C; c++) ld16(wr[c] + i, wv[c]);
#pragma unroll
        for (int r = 0; r < R; r++) {
            float xv[VEC];
            ld16(x + (size_t)r * k + i, xv);
#pragma unroll
            for (int c = 0; c < C; c++) {
                float s = 0.f;
#pragma unroll
                for (int j = 0; j < VEC; j++) s = fmaf(wv[c][j], xv[j], s);
                acc[c][r] += s;
            }
        }
    }
    for (int t = kv + lane; t < k; t += 32) {
#pragma unroll
        for (int c = 0; c < C; c++) {
            float wv = ld(&wr[c][t]);
#pragma unroll
            for (int r = 0; r < R; r++) acc[c][r] = fmaf(wv, ld(&x[(size_t)r * k + t]), acc[c][r]);
        }
    }
    float res[C][R];
#pragma unroll
    for (int c = 0; c < C; c++) {
        float b = (bias && col0 + c < n) ? ld(&bias[col0 + c]) : 0.f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float v = acc[c][r];
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            res[c][r] = v + b;
        }
    }
    if (lane != 0) return;
    if (SILU) {
        // Columns 2i, 2i+1 are gate_i, up_i (interleaved weights): y[r, i] = silu(gate) * up,
        // each rounded to T first as if stored.
#pragma unroll
        for (int j = 0; j < C / 2; j++) {
            if (col0 + 2 * j + 1 < n) {
#pragma unroll
                for (int r = 0; r < R; r++) {
                    T tg, tu;
                    st(&tg, res[2 * j][r]);
                    st(&tu, res[2 * j + 1][r]);
                    float g = ld(&tg), u = ld(&tu);
                    st(&y[(size_t)r * (n / 2) + col0 / 2 + j], SILU_AND_MUL(g, u));
                }
            }
        }
    } else {
#pragma unroll
        for (int c = 0; c < C; c++) {
            if (col0 + c < n) {
#pragma unroll
                for (int r = 0; r < R; r++) st(&y[(size_t)r * n + col0 + c], res[c][r]);
            }
        }
    }
}

template <typename T, int C, bool SILU>
__device__ void linear_rows(T* y, const T* x, const T* w, const T* bias, int m, int k, int n) {
    pdl_launch_dependents();
    pdl_wait();
    int col0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * C;
    int lane = threadIdx.x & 31;
    if (col0 >= n) return;
    int yw = SILU ? n / 2 : n;
    for (int m0 = 0; m0 < m; m0 += 8) {
        const T* xt = x + (size_t)m0 * k;
        T* yt = y + (size_t)m0 * yw;
        switch (min(8, m - m0)) {
            case 1: linear_rows_tile<T, 1, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            case 2: linear_rows_tile<T, 2, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            case 3: linear_rows_tile<T, 3, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            case 4: linear_rows_tile<T, 4, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            case 5: linear_rows_tile<T, 5, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            case 6: linear_rows_tile<T, 6, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            case 7: linear_rows_tile<T, 7, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
            default: linear_rows_tile<T, 8, C, SILU>(yt, xt, w, bias, k, n, col0, lane); break;
        }
    }
}

#define LIN_C(NAME, C, SILU)                                                                              \
    extern "C" __global__ void NAME##_f32(float* y, const float* x, const float* w, const float* bias, int m, \
                                          int k, int n) {                                                     \
        linear_rows<float, C, SILU>(y, x, w, bias, m, k, n);                                                  \
    }                                                                                                         \
    extern "C" __global__ void NAME##_bf16(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m,    \
                                           int k, int n) {                                                    \
        linear_rows<bf16, C, SILU>(y, x, w, bias, m, k, n);                                                   \
    }
LIN_C(linear_rows_c1, 1, false)
LIN_C(linear_rows_c2, 2, false)
LIN_C(linear_rows_c4, 4, false)
LIN_C(linear_rows_silu_c2, 2, true)
LIN_C(linear_rows_silu_c4, 4, true)
