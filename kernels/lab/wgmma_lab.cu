// The wgmma lab (issue 18, item 3): can a linear for many rows run on
// warpgroup mma (wgmma, sm_90a) and stay batch-invariant beside the engine's
// mma.sync kernels? Two questions, answered on fresh random inputs (bf16
// with exponents over 2^-6..2^6 and both signs, f32 accumulators, seeded by
// the clock): (1) does one warpgroup's wgmma.m64nNk16 chain give the bits of
// the same chain of mma.m16n8k16 steps (kernels in wgmma_bits.cu), for k of
// 16 to 4096? (2) are a token's bits under wgmma the same for N = 8, 16 and
// 64 tokens in the instruction? Each output is also checked against a
// double-precision sum (a wrong operand layout shows as a large error, not
// as a bit difference). No Rust; on the GPU machine, from the repository root:
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/wgmma_lab kernels/lab/wgmma_lab.cu
//   /tmp/wgmma_lab          # exit 0 when every output is within the error bound
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
#undef INFINITY
#include "../src/cuda/prelude.cu"
#include "wgmma_bits.cu"

#define CK(x)                                                                     \
    do {                                                                          \
        cudaError_t e = (x);                                                      \
        if (e != cudaSuccess) {                                                   \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));      \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

static uint64_t rng;
static uint32_t next_u32() {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
// A random bf16: mantissa of 7 random bits, exponent in [-6, 6], either sign.
static bf16 rand_bf16() {
    float v = ldexpf(1.f + (next_u32() & 0x7f) / 128.f, (int)(next_u32() % 13) - 6);
    return (bf16)(f_bits((next_u32() & 1) ? -v : v) >> 16);
}
static float bf16_f(bf16 h) { return bits_f((uint32_t)h << 16); }

typedef void (*LabKernel)(float*, const bf16*, const bf16*, float*, int);

// D [64, n] from kernel f on device inputs a [64, k], b [n, k], c [64, n].
static std::vector<float> run(LabKernel f, const bf16* a, const bf16* b, const std::vector<float>& c, int n, int k) {
    float *dc, *dd;
    CK(cudaMalloc(&dc, c.size() * 4));
    CK(cudaMalloc(&dd, c.size() * 4));
    CK(cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dd, 0xff, c.size() * 4));
    f<<<1, 128>>>(dd, a, b, dc, k);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> d(c.size());
    CK(cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(dc));
    CK(cudaFree(dd));
    return d;
}

int main() {
    rng = (uint64_t)time(nullptr) * 0x9E3779B97F4A7C15ull;
    printf("seed %llu\n", (unsigned long long)rng);
    const int ns[3] = {8, 16, 64};
    LabKernel wg[3] = {lab_wgmma<8>, lab_wgmma<16>, lab_wgmma<64>};
    LabKernel mm[3] = {lab_mma<8>, lab_mma<16>, lab_mma<64>};
    long diff_mma = 0, diff_n = 0, outputs = 0, token_outputs = 0;
    double worst = 0.0;
    for (int k : {16, 32, 256, 4096}) {
        for (int trial = 0; trial < 4; trial++) {
            bool zero_c = trial % 2 == 0;
            std::vector<bf16> ha((size_t)64 * k), hb((size_t)64 * k);
            for (auto& v : ha) v = rand_bf16();
            for (auto& v : hb) v = rand_bf16();
            std::vector<float> c64((size_t)64 * 64);
            for (auto& v : c64) v = zero_c ? 0.f : bf16_f(rand_bf16()) * 16.f;
            bf16 *da, *db;
            CK(cudaMalloc(&da, ha.size() * 2));
            CK(cudaMalloc(&db, hb.size() * 2));
            CK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
            std::vector<float> wg8;
            for (int i = 0; i < 3; i++) {
                int n = ns[i];
                std::vector<float> c((size_t)64 * n);
                for (int r = 0; r < 64; r++)
                    for (int j = 0; j < n; j++) c[(size_t)r * n + j] = c64[(size_t)r * 64 + j];
                std::vector<float> dw = run(wg[i], da, db, c, n, k), dm = run(mm[i], da, db, c, n, k);
                long dm_n = 0, dn_n = 0;
                double err = 0.0;
                for (int r = 0; r < 64; r++) {
                    for (int j = 0; j < n; j++) {
                        size_t o = (size_t)r * n + j;
                        double s = c[o], mag = fabs(c[o]);
                        for (int q = 0; q < k; q++) {
                            double p = (double)bf16_f(ha[(size_t)r * k + q]) * bf16_f(hb[(size_t)j * k + q]);
                            s += p;
                            mag += fabs(p);
                        }
                        double e = fabs(dw[o] - s) / (mag > 0 ? mag : 1.0);
                        if (!(e <= err)) err = e;  // NaN counts as the worst
                        dm_n += f_bits(dw[o]) != f_bits(dm[o]);
                        if (i > 0 && j < 8) dn_n += f_bits(dw[o]) != f_bits(wg8[(size_t)r * 8 + j]);
                    }
                }
                if (i == 0) wg8 = dw;
                diff_mma += dm_n;
                diff_n += dn_n;
                outputs += 64 * n;
                token_outputs += i > 0 ? 64 * 8 : 0;
                if (!(err <= worst)) worst = err;
                printf("k %4d N %2d C %s: wgmma vs double max rel err %.2e; wgmma != mma.sync: %ld of %d", k, n,
                       zero_c ? "0   " : "rand", err, dm_n, 64 * n);
                if (i > 0) printf("; tokens 0-7 != N 8: %ld of 512", dn_n);
                printf("\n");
            }
            CK(cudaFree(da));
            CK(cudaFree(db));
        }
    }
    // A wrong operand layout sums the wrong products: errors of order 1. The
    // bound leaves room for tensor cores that round their k16 sums more
    // coarsely than f32 (a step's error against the running sum's magnitude).
    bool layout_ok = worst < 1e-2;
    printf("operand layout: %s (worst relative error %.2e)\n", layout_ok ? "right" : "WRONG", worst);
    printf("wgmma bits = mma.sync bits: %s (%ld of %ld outputs differ)\n", diff_mma == 0 ? "yes" : "no", diff_mma,
           outputs);
    printf("wgmma bits independent of N: %s (%ld of %ld token outputs differ)\n", diff_n == 0 ? "yes" : "no", diff_n,
           token_outputs);
    return layout_ok ? 0 : 1;
}
