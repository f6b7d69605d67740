// The rows lab: the bf16 linears of Llama-3.1-8B at 1-512 rows (decode at
// batch 1-64, verify of batch 64 x 6 and 8), each form timed alone (CUDA
// events around one launch, median of 21, weights rotated over four copies
// so no launch finds them in L2) against the device-to-device copy ceiling
// measured in the same run, and every form's output compared bit for bit
// with the small-row kernel's (linear_mma.cu, the definition of a row's
// bits). Compiles the project's own kernel sources with nvcc; no Rust. On
// the GPU machine:
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Xptxas -v -o /tmp/rows_lab kernels/lab/rows_lab.cu -lcuda
//   /tmp/rows_lab            # checks and the timing table
//   /tmp/rows_lab profile    # one launch of each form at 64 and 384 rows (for ncu)
//   /tmp/rows_lab profile-narrow  # the small-row kernel on qkv, o, down at 1-64 rows (for ncu)
//   /tmp/rows_lab chain      # the 129 linears of a decode step in a CUDA graph at 8-64
//                            # rows, which weights tiled, programmatic launches on/off
//
// Shapes: qkv, o, gate|up (SiLU epilogue), down and the LM head.
// Forms: mma (the small-row kernel as the engine lays it out), tiles (the
// tiled kernel as the engine lays it out), stream4 / stream4d3 / stream2d3
// (lab/linear_stream.cu, a candidate: warps of 32 columns, 4 or 2 per block,
// one or two stages of weights in flight).
#include <cuda_runtime.h>
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#undef INFINITY
#include "../src/cuda/prelude.cu"
#include "../src/cuda/linear_mma.cu"
#include "../src/cuda/linear_tiles.cu"
#include "linear_stream.cu"
#include "lab_host.cuh"

static void run_stream(int warps, int depth, bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int silu) {
    int parts = k_parts(k, n);
    int nt = m >= 64 ? 8 : (m + 7) / 8;
    if (nt == 5) nt = 6;
    if (nt == 7) nt = 8;
    if (nt == 1) nt = 2;
    if (warps == 2 && nt != 2 && nt != 4 && nt != 8) nt = nt <= 4 ? 4 : 8;
    if (warps == 2) depth = 3;
    size_t smem = std::max((size_t)STREAM_STAGES * 8 * nt * 128, (size_t)2 * nt * 4 * 32 * warps * 4);
    dim3 grid(parts, (m + 63) / 64, (n + 32 * warps - 1) / (32 * warps)), block(32 * warps);
#define T(NT, W, D) if (nt == NT && warps == W && depth == D) launch(linear_stream_t##NT##_w##W##_d##D##_bf16, grid, block, smem, parts, y, x, w, (const bf16*)nullptr, m, k, n, parts, silu);
    T(2, 4, 2) T(3, 4, 2) T(4, 4, 2) T(6, 4, 2) T(8, 4, 2) T(2, 4, 3) T(3, 4, 3) T(4, 4, 3) T(6, 4, 3) T(8, 4, 3)
    T(2, 2, 3) T(4, 2, 3) T(8, 2, 3)
#undef T
}

static const char* FORMS[] = {"mma", "tiles", "stream4", "stream4d3", "stream2d3"};
const int NFORMS = 5;
static void run_form(int f, bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int silu) {
    if (f == 0) run_mma(y, x, w, m, k, n, silu);
    else if (f == 1) run_tiles(y, x, w, m, k, n, silu);
    else run_stream(f == 4 ? 2 : 4, f == 2 ? 2 : 3, y, x, w, m, k, n, silu);
}


int main(int argc, char** argv) {
    bool profile = argc > 1 && !strcmp(argv[1], "profile");
    CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    double copy_gbs = copy_ceiling(e0, e1);
    printf("copy %.0f GB/s\n", copy_gbs);
    const Shape* shapes = SHAPES;
    const int COPIES = 4, MMAX = 512;
    std::vector<bf16*> w[NSHAPES];
    for (int s = 0; s < NSHAPES; s++)
        for (int c = 0; c < COPIES; c++) {
            size_t ne = (size_t)shapes[s].n * shapes[s].k; bf16* p; CK(cudaMalloc(&p, ne * 2));
            fill_rand<<<1024, 256, 0, S>>>(p, ne, 100 * s + c); w[s].push_back(p);
        }
    bf16 *x, *y0, *y1;
    CK(cudaMalloc(&x, (size_t)MMAX * 14336 * 2)); CK(cudaMalloc(&y0, (size_t)MMAX * 128256 * 2)); CK(cudaMalloc(&y1, (size_t)MMAX * 128256 * 2));
    fill_rand<<<256, 256, 0, S>>>(x, (size_t)MMAX * 14336, 7);
    CK(cudaStreamSynchronize(S));
    if (profile) {
        for (int m : {64, 384})
            for (int f = 0; f < NFORMS; f++) run_form(f, y1, x, w[2][0], m, shapes[2].k, shapes[2].n, 1);
        CK(cudaStreamSynchronize(S));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "profile-narrow")) {
        // The narrow weights (qkv, o, down) in the small-row kernel at 1, 16,
        // 32 and 64 rows, one launch each (for ncu).
        for (int s : {0, 1, 3})
            for (int m : {1, 16, 32, 64}) run_form(0, y1, x, w[s][0], m, shapes[s].k, shapes[s].n, 0);
        CK(cudaStreamSynchronize(S));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "chain")) {
        // 32 layers (qkv, o, gate|up, down; the four copies of each weight in
        // turn) and the LM head, each linear's input the previous one's output
        // region, captured in one graph; `tiled` says which weights run tiled
        // (bit 0 gate|up, bit 1 the LM head, bit 2 qkv and down), the rest in the
        // small kernel. Median of 15 replays.
        // bit 3: the tiled launches without programmatic serialization; bit 4:
        // the launch after a tiled one without it.
        const char* names[] = {"small", "gate_up", "lm_head", "gate_up+lm_head", "all", "gu+lm,tile-nopdl",
                               "gu+lm,next-nopdl"};
        int masks[] = {0, 1, 2, 3, 7, 3 | 8, 3 | 16};
        const int NV = 7;
        printf("%-6s %4s %-16s %10s\n", "pdl", "m", "tiled", "graph ms");
        for (int pdl = 1; pdl >= 0; pdl--)
            for (int m : {16, 24, 32, 64})
                for (int v = 0; v < NV; v++) {
                    if (v >= 5 && !pdl) continue;
                    g_pdl = pdl;
                    int mask = masks[v];
                    bool after_tiled = false;
                    auto lin = [&](int s, bf16* y, const bf16* xin, int c) {
                        const Shape& sh = shapes[s];
                        bool t = m > 8 && ((s == 2 && (mask & 1)) || (s == 4 && (mask & 2)) || ((s == 0 || s == 3) && (mask & 4)));
                        g_pdl = pdl && !((t && (mask & 8)) || (after_tiled && (mask & 16)));
                        run_form(t ? 1 : 0, y, xin, w[s][c], m, sh.k, sh.n, sh.silu);
                        after_tiled = t;
                    };
                    auto step = [&]() {
                        for (int l = 0; l < 32; l++) {
                            int c = l % COPIES;
                            lin(0, y0, x, c);
                            lin(1, y1, y0, c);
                            lin(2, y0, x, c);
                            lin(3, y1, y0, c);
                        }
                        lin(4, y0, y1, 0);
                    };
                    step();  // eager once: attributes set and modules warm outside the capture
                    CK(cudaStreamSynchronize(S));
                    cudaGraph_t g; cudaGraphExec_t ge;
                    CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
                    step();
                    CK(cudaStreamEndCapture(S, &g));
                    CK(cudaGraphInstantiate(&ge, g, 0));
                    std::vector<float> t;
                    for (int r = 0; r < 16; r++) {
                        CK(cudaEventRecord(e0, S)); CK(cudaGraphLaunch(ge, S)); CK(cudaEventRecord(e1, S));
                        CK(cudaEventSynchronize(e1));
                        float el; cudaEventElapsedTime(&el, e0, e1); if (r) t.push_back(el);
                    }
                    CK(cudaGetLastError());
                    printf("%-6d %4d %-16s %10.3f\n", pdl, m, names[v], median(t));
                    cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
                }
        return 0;
    }
    int ms_[] = {1, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
    int bad = 0;
    printf("%-8s %4s %-8s %9s %8s %7s %8s %s\n", "shape", "m", "form", "us", "GB/s", "ofcopy", "TFLOP/s", "bits vs mma");
    for (int s = 0; s < NSHAPES; s++) {
        const Shape& sh = shapes[s];
        int ny = sh.silu ? sh.n / 2 : sh.n;
        for (int m : ms_) {
            std::vector<unsigned short> ref((size_t)m * ny), got((size_t)m * ny);
            CK(cudaMemsetAsync(y0, 0xff, (size_t)m * ny * 2, S));
            run_mma(y0, x, w[s][0], m, sh.k, sh.n, sh.silu);
            CK(cudaStreamSynchronize(S));
            CK(cudaMemcpy(ref.data(), y0, (size_t)m * ny * 2, cudaMemcpyDeviceToHost));
            for (int f = 0; f < NFORMS; f++) {
                if (f == 1 && m < 16) continue;
                int diff = 0;
                if (f > 0) {
                    CK(cudaMemsetAsync(y1, 0xff, (size_t)m * ny * 2, S));
                    run_form(f, y1, x, w[s][0], m, sh.k, sh.n, sh.silu);
                    CK(cudaStreamSynchronize(S));
                    CK(cudaMemcpy(got.data(), y1, (size_t)m * ny * 2, cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < got.size(); i++) diff += got[i] != ref[i];
                    bad += diff > 0;
                }
                std::vector<float> t;
                for (int r = 0; r < 21; r++) {
                    CK(cudaEventRecord(e0, S));
                    run_form(f, y1, x, w[s][r % COPIES], m, sh.k, sh.n, sh.silu);
                    CK(cudaEventRecord(e1, S)); CK(cudaEventSynchronize(e1));
                    float el; cudaEventElapsedTime(&el, e0, e1); t.push_back(el);
                }
                CK(cudaGetLastError());
                float us = median(t) * 1e3;
                double bytes = (double)sh.n * sh.k * 2 + (double)m * sh.k * 2 + (double)m * ny * 2;
                double gbs = bytes / (us * 1e-6) / 1e9, tf = 2.0 * m * sh.n * sh.k / (us * 1e-6) / 1e12;
                printf("%-8s %4d %-8s %9.2f %8.0f %6.1f%% %8.1f %s\n", sh.name, m, FORMS[f], us, gbs, 100 * gbs / copy_gbs, tf,
                       f == 0 ? "-" : diff ? "DIFFER" : "same");
                if (diff) printf("  %d of %zu values differ\n", diff, got.size());
            }
        }
    }
    printf("%s\n", bad ? "SOME FORMS DIFFER FROM THE SMALL-ROW KERNEL" : "every form gives the small-row kernel's bits");
    return bad ? 1 : 0;
}
