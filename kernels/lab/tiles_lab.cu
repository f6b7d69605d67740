// The tiles lab: which layout of the tiled linear (`linear_tiles.cu`:
// block tile BN columns x BM tokens, WN x WM warps, stages of 32 CHUNKS k,
// STAGES deep) streams the Llama-3.1-8B weights fastest at 16-128 rows,
// where the engine's rule keeps the narrow projections (qkv, o, down) in
// the small-row kernel at 28-34% of the copy ceiling (rows_lab). Each layout
// is timed alone (CUDA events around one launch, median of 21, weights
// rotated over four random copies) and inside the 129 linears of a decode
// step captured in one CUDA graph with programmatic dependent launches
// (median of 15 replays); every layout's output is compared bit for bit
// with the small-row kernel's on fresh random inputs. Compiles the
// project's kernel sources with nvcc; no Rust. On the GPU machine:
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tiles_lab kernels/lab/tiles_lab.cu -lcuda
//   /tmp/tiles_lab          # checks and the per-launch table
//   /tmp/tiles_lab chain    # the decode step's linears, narrow weights in each layout
//   /tmp/tiles_lab hotspot  # the small kernel and the 64-column tile reading 1, 4, 16 copies of x
//   /tmp/tiles_lab profile | profile-layouts   # single launches for ncu
#include <ctime>
#include <cuda_runtime.h>
#undef INFINITY
#include "../src/cuda/prelude.cu"
#include "../src/cuda/linear_mma.cu"
#include "../src/cuda/linear_tiles.cu"
#include "linear_tiles_lean.cu"
#include "lab_host.cuh"

typedef void (*TileKernel)(bf16*, const bf16*, const bf16*, const bf16*, int, int, int, int, int);

struct Layout { const char* name; int bn, bm, wn, wm, chunks, stages; TileKernel f; };

#define LAB_TILES(BN, BM, WN, WM, CH, ST)                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * WN * WM)                                              \
        lab_tiles_##BN##x##BM##_##WN##x##WM##_c##CH##_s##ST(bf16* y, const bf16* x, const bf16* w,          \
                                                           const bf16* bias, int m, int k, int n, int parts, \
                                                           int flags) {                                     \
        linear_tiles<BN, BM, WN, WM, CH, ST>(y, x, w, bias, m, k, n, parts, flags);                         \
    }
#define LAYOUT(BN, BM, WN, WM, CH, ST) \
    {#BN "x" #BM " w" #WN "x" #WM " c" #CH " s" #ST, BN, BM, WN, WM, CH, ST, lab_tiles_##BN##x##BM##_##WN##x##WM##_c##CH##_s##ST}

#define LAB_LEAN(BN, BM, WN, WM, ST, LATE)                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * WN * WM)                                              \
        lab_lean_##BN##x##BM##_##WN##x##WM##_s##ST##_l##LATE(bf16* y, const bf16* x, const bf16* w,         \
                                                           const bf16* bias, int m, int k, int n, int parts, \
                                                           int flags) {                                     \
        linear_tiles_lean<BN, BM, WN, WM, ST, LATE>(y, x, w, bias, m, k, n, parts, flags);                   \
    }
#define LEAN(BN, BM, WN, WM, ST, LATE)                                                       \
    {"lean " #BN "x" #BM " w" #WN "x" #WM " s" #ST "/" #LATE, BN, BM, WN, WM, 2, ST, \
     lab_lean_##BN##x##BM##_##WN##x##WM##_s##ST##_l##LATE}

// Per token tile BM: the engine's tile (c2 s4); the deeper and wider stages
// of the call-1 table in results/h200/tiles-lab-2026-12-03/README.md (c2 s8,
// c4 s4, 32 columns c2 s8, 128 columns c2 s6 and c4 s4; call 1 also ran
// c4 s6, c8 s3 and 32-column c4 s6 and c8 s4, slower still); then the lean
// kernel in several layouts, its dependents launched from its start (0) or
// after its k loop (1).
#define LAYOUTS_FOR(BM, M, L)                                                                                   \
    M(64, BM, 4, 1, 2, 4) M(64, BM, 4, 1, 2, 8) M(64, BM, 4, 1, 4, 4) M(32, BM, 2, 1, 2, 8) M(128, BM, 8, 1, 2, 6) \
        M(128, BM, 4, 2, 4, 4) L(64, BM, 4, 1, 4, 0) L(64, BM, 4, 1, 3, 0) L(64, BM, 4, 1, 6, 0)               \
            L(32, BM, 2, 1, 4, 0) L(128, BM, 4, 2, 4, 0) L(64, BM, 4, 1, 4, 1) L(64, BM, 4, 1, 3, 1)           \
                L(64, BM, 4, 1, 6, 1) L(32, BM, 2, 1, 4, 1) L(128, BM, 4, 2, 4, 1)
#define DECLARE(BN, BM, WN, WM, CH, ST) LAB_TILES(BN, BM, WN, WM, CH, ST)
#define DECLARE_LEAN(BN, BM, WN, WM, ST, LATE) LAB_LEAN(BN, BM, WN, WM, ST, LATE)
#define ENTRY(BN, BM, WN, WM, CH, ST) LAYOUT(BN, BM, WN, WM, CH, ST),
#define ENTRY_LEAN(BN, BM, WN, WM, ST, LATE) LEAN(BN, BM, WN, WM, ST, LATE),
LAYOUTS_FOR(16, DECLARE, DECLARE_LEAN)
LAYOUTS_FOR(32, DECLARE, DECLARE_LEAN)
LAYOUTS_FOR(64, DECLARE, DECLARE_LEAN)
static const Layout LAYOUTS[] = {LAYOUTS_FOR(16, ENTRY, ENTRY_LEAN) LAYOUTS_FOR(32, ENTRY, ENTRY_LEAN)
                                     LAYOUTS_FOR(64, ENTRY, ENTRY_LEAN)};
const int NLAYOUTS = sizeof(LAYOUTS) / sizeof(LAYOUTS[0]);

// The hot-spot probe: the same kernels reading their token rows from one of
// `reps` identical copies of x (copy blockIdx % reps), so that the blocks of
// one k slice no longer all read the same addresses. Same bits by
// construction; if the time falls with `reps`, reading one token tile from
// every block is the limit.
#define LAB_REP_TILES(BN, BM, WN, WM)                                                                        \
    extern "C" __global__ void __launch_bounds__(32 * WN * WM) lab_rep_tiles_##BN##x##BM(                    \
        bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k, int n, int parts, int flags,   \
        int reps) {                                                                                          \
        linear_tiles<BN, BM, WN, WM>(y, x + (size_t)(blockIdx.z % reps) * m * k, w, bias, m, k, n, parts, flags); \
    }
LAB_REP_TILES(64, 16, 4, 1)
LAB_REP_TILES(64, 32, 4, 1)
LAB_REP_TILES(64, 64, 4, 1)
extern "C" __global__ void lab_rep_mma_ku8(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k,
                                           int n, int parts, int groups, int flags, int reps) {
    linear_mma<8>(y, x + (size_t)(blockIdx.x % reps) * m * k, w, bias, m, k, n, parts, groups, flags);
}
extern "C" __global__ void lab_rep_mma_ku4(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int m, int k,
                                           int n, int parts, int groups, int flags, int reps) {
    linear_mma<4>(y, x + (size_t)(blockIdx.x % reps) * m * k, w, bias, m, k, n, parts, groups, flags);
}

// run_mma's layout (16-64 rows) and the 64-column tile of the rows' token tile, reading x's copy blockIdx % reps.
static void run_rep(bool tiles, int reps, bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int silu) {
    int parts = k_parts(k, n), ntile = std::min(8, (m + 7) / 8);
    if (tiles) {
        int bm = m <= 16 ? 16 : m <= 32 ? 32 : 64;
        dim3 grid(parts, (m + bm - 1) / bm, (n + 63) / 64), block(128);
        size_t smem = (size_t)TILE_STAGES * (64 + bm) * 128;
        auto f = bm == 16 ? lab_rep_tiles_64x16 : bm == 32 ? lab_rep_tiles_64x32 : lab_rep_tiles_64x64;
        launch(f, grid, block, smem, parts, y, x, w, (const bf16*)nullptr, m, k, n, parts, silu, reps);
    } else if (m <= 32) {
        size_t smem = parts > 1 ? (size_t)parts * ntile * 4 * 32 * 4 : 0;
        launch(lab_rep_mma_ku8, dim3((n + 15) / 16), dim3(32 * parts), smem, 1, y, x, w, (const bf16*)nullptr, m, k, n, parts, 1, silu, reps);
    } else {
        int groups = 8 / parts;
        size_t smem = parts > 1 ? (size_t)groups * parts * ntile * 4 * 32 * 4 : 0;
        launch(lab_rep_mma_ku4, dim3((n + 16 * groups - 1) / (16 * groups)), dim3(32 * groups * parts), smem, 1, y, x, w, (const bf16*)nullptr, m, k, n, parts, groups, silu, reps);
    }
}

static size_t layout_smem(const Layout& l) { return (size_t)l.stages * (l.bn + l.bm) * l.chunks * 64; }

static void run_layout(const Layout& l, bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int silu) {
    int parts = k_parts(k, n);
    dim3 grid(parts, (m + l.bm - 1) / l.bm, (n + l.bn - 1) / l.bn), block(32 * l.wn * l.wm);
    launch(l.f, grid, block, layout_smem(l), parts, y, x, w, (const bf16*)nullptr, m, k, n, parts, silu);
}

// The token tile a layout is for at m rows: the smallest of 16, 32, 64 holding them (64 above).
static int token_tile(int m) { return m <= 16 ? 16 : m <= 32 ? 32 : 64; }

// The engine's rule (MmaForm::for_shape): wide weights (gate|up, the LM head) tiled past 16 rows,
// the narrow ones in the small-row kernel below 128 rows.
static void run_engine(int s, bf16* y, const bf16* x, const bf16* w, int m) {
    const Shape& sh = SHAPES[s];
    if (sh.n >= 16384 && m > 16) run_tiles(y, x, w, m, sh.k, sh.n, sh.silu);
    else run_mma(y, x, w, m, sh.k, sh.n, sh.silu);
}

int main(int argc, char** argv) {
    bool chain = argc > 1 && !strcmp(argv[1], "chain");
    CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    double copy_gbs = copy_ceiling(e0, e1);
    printf("copy %.0f GB/s\n", copy_gbs);
    const int COPIES = 4, MMAX = 128;
    std::vector<bf16*> w[NSHAPES];
    for (int s = 0; s < NSHAPES; s++)
        for (int c = 0; c < COPIES; c++) {
            size_t ne = (size_t)SHAPES[s].n * SHAPES[s].k; bf16* p; CK(cudaMalloc(&p, ne * 2));
            fill_rand<<<1024, 256, 0, S>>>(p, ne, 100 * s + c + 1000 * (unsigned)time(nullptr)); w[s].push_back(p);
        }
    bf16 *x, *y0, *y1;
    CK(cudaMalloc(&x, (size_t)MMAX * 14336 * 2)); CK(cudaMalloc(&y0, (size_t)MMAX * 128256 * 2)); CK(cudaMalloc(&y1, (size_t)MMAX * 128256 * 2));
    fill_rand<<<256, 256, 0, S>>>(x, (size_t)MMAX * 14336, 7 + (unsigned)time(nullptr));
    CK(cudaStreamSynchronize(S));
    if (argc > 1 && !strcmp(argv[1], "profile-layouts")) {
        // One launch of each 64-token layout at 64 rows of qkv (for ncu).
        for (int v = 0; v < NLAYOUTS; v++)
            if (LAYOUTS[v].bm == 64) run_layout(LAYOUTS[v], y1, x, w[0][0], 64, SHAPES[0].k, SHAPES[0].n, 0);
        CK(cudaStreamSynchronize(S));
        return 0;
    }
    if (argc > 1 && (!strcmp(argv[1], "hotspot") || !strcmp(argv[1], "profile"))) {
        // x's 16 copies, then each narrow weight (and gate|up) at 16 / 32 / 64 rows through the small
        // kernel and the 64-column tile, reading 1, 4 or 16 copies. `profile`: one launch each at 64 rows
        // of qkv (for ncu).
        bool prof = !strcmp(argv[1], "profile");
        const int REPS = 16;
        bf16* xr; CK(cudaMalloc(&xr, (size_t)REPS * 64 * 14336 * 2));
        int bad = 0;
        printf("%-8s %4s %-6s %4s %9s %7s %s\n", "shape", "m", "form", "reps", "us", "ofcopy", "bits vs mma");
        for (int s : {0, 1, 3, 2}) {
            const Shape& sh = SHAPES[s];
            int ny = sh.silu ? sh.n / 2 : sh.n;
            for (int m : {16, 32, 64}) {
                if (prof && (s != 0 || m != 64)) continue;
                for (int r = 0; r < REPS; r++)
                    CK(cudaMemcpyAsync(xr + (size_t)r * m * sh.k, x, (size_t)m * sh.k * 2, cudaMemcpyDeviceToDevice, S));
                std::vector<unsigned short> ref((size_t)m * ny), got((size_t)m * ny);
                run_mma(y0, x, w[s][0], m, sh.k, sh.n, sh.silu);
                CK(cudaStreamSynchronize(S));
                CK(cudaMemcpy(ref.data(), y0, (size_t)m * ny * 2, cudaMemcpyDeviceToHost));
                for (int tiles = 0; tiles < 2; tiles++)
                    for (int reps : {1, 4, 16}) {
                        if (prof) { run_rep(tiles, reps, y1, xr, w[s][0], m, sh.k, sh.n, sh.silu); continue; }
                        CK(cudaMemsetAsync(y1, 0xff, (size_t)m * ny * 2, S));
                        run_rep(tiles, reps, y1, xr, w[s][0], m, sh.k, sh.n, sh.silu);
                        CK(cudaStreamSynchronize(S));
                        CK(cudaMemcpy(got.data(), y1, (size_t)m * ny * 2, cudaMemcpyDeviceToHost));
                        int diff = 0;
                        for (size_t i = 0; i < got.size(); i++) diff += got[i] != ref[i];
                        bad += diff > 0;
                        std::vector<float> t;
                        for (int r = 0; r < 21; r++) {
                            CK(cudaEventRecord(e0, S));
                            run_rep(tiles, reps, y1, xr, w[s][r % COPIES], m, sh.k, sh.n, sh.silu);
                            CK(cudaEventRecord(e1, S)); CK(cudaEventSynchronize(e1));
                            float el; cudaEventElapsedTime(&el, e0, e1); t.push_back(el);
                        }
                        CK(cudaGetLastError());
                        float us = median(t) * 1e3;
                        double bytes = (double)sh.n * sh.k * 2 + (double)m * sh.k * 2 + (double)m * ny * 2;
                        printf("%-8s %4d %-6s %4d %9.2f %6.1f%% %s\n", sh.name, m, tiles ? "tiles" : "mma", reps, us,
                               100 * bytes / (us * 1e-6) / 1e9 / copy_gbs, diff ? "DIFFER" : "same");
                    }
            }
        }
        CK(cudaStreamSynchronize(S));
        return bad ? 1 : 0;
    }
    if (chain) {
        // 32 layers (qkv, o, gate|up, down, the four copies in turn) and the LM head in one graph; the
        // engine's rule, then the narrow weights in each layout of the rows' token tile (wide ones as
        // the engine has them), then that layout for gate|up as well.
        printf("%4s %-24s %-10s %10s %8s\n", "m", "layout", "on", "graph ms", "ofcopy");
        double bytes = 0;
        for (int s = 0; s < 4; s++) bytes += 32.0 * SHAPES[s].n * SHAPES[s].k * 2;
        bytes += (double)SHAPES[4].n * SHAPES[4].k * 2;
        for (int m : {16, 24, 32, 48, 64}) {
            for (int v = -1; v < 3 * NLAYOUTS; v++) {
                const Layout* l = v < 0 ? nullptr : &LAYOUTS[v % NLAYOUTS];
                // 0: the narrow weights in the layout; 1: and gate|up; 2: down and gate|up only.
                int on = v < 0 ? -1 : v / NLAYOUTS;
                if (l && l->bm != token_tile(m)) continue;
                auto lin = [&](int s, bf16* y, const bf16* xin, int c) {
                    const Shape& sh = SHAPES[s];
                    bool mine = on == 2 ? (s == 2 || s == 3) : (s == 0 || s == 1 || s == 3 || (s == 2 && on == 1));
                    if (l && mine) run_layout(*l, y, xin, w[s][c], m, sh.k, sh.n, sh.silu);
                    else run_engine(s, y, xin, w[s][c], m);
                };
                auto step = [&]() {
                    for (int layer = 0; layer < 32; layer++) {
                        int c = layer % COPIES;
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
                float ms = median(t);
                printf("%4d %-24s %-10s %10.3f %7.1f%%\n", m, l ? l->name : "engine", on < 0 ? "-" : on == 1 ? "+gate_up" : on == 2 ? "down+gu" : "narrow",
                       ms, 100 * bytes / (ms * 1e-3) / 1e9 / copy_gbs);
                cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
            }
        }
        return 0;
    }
    int bad = 0;
    printf("%-8s %4s %-24s %9s %8s %7s %8s %s\n", "shape", "m", "form", "us", "GB/s", "ofcopy", "TFLOP/s", "bits vs mma");
    for (int s = 0; s < 4; s++) {
        const Shape& sh = SHAPES[s];
        int ny = sh.silu ? sh.n / 2 : sh.n;
        for (int m : {16, 24, 32, 48, 64, 96, 128}) {
            std::vector<unsigned short> ref((size_t)m * ny), got((size_t)m * ny);
            CK(cudaMemsetAsync(y0, 0xff, (size_t)m * ny * 2, S));
            run_mma(y0, x, w[s][0], m, sh.k, sh.n, sh.silu);
            CK(cudaStreamSynchronize(S));
            CK(cudaMemcpy(ref.data(), y0, (size_t)m * ny * 2, cudaMemcpyDeviceToHost));
            for (int v = -2; v < NLAYOUTS; v++) {
                if (v >= 0 && LAYOUTS[v].bm != token_tile(m)) continue;
                auto run = [&](bf16* y, const bf16* wt) {
                    if (v == -2) run_mma(y, x, wt, m, sh.k, sh.n, sh.silu);
                    else if (v == -1) run_tiles(y, x, wt, m, sh.k, sh.n, sh.silu);
                    else run_layout(LAYOUTS[v], y, x, wt, m, sh.k, sh.n, sh.silu);
                };
                int diff = 0;
                if (v > -2) {
                    CK(cudaMemsetAsync(y1, 0xff, (size_t)m * ny * 2, S));
                    run(y1, w[s][0]);
                    CK(cudaStreamSynchronize(S));
                    CK(cudaMemcpy(got.data(), y1, (size_t)m * ny * 2, cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < got.size(); i++) diff += got[i] != ref[i];
                    bad += diff > 0;
                }
                std::vector<float> t;
                for (int r = 0; r < 21; r++) {
                    CK(cudaEventRecord(e0, S));
                    run(y1, w[s][r % COPIES]);
                    CK(cudaEventRecord(e1, S)); CK(cudaEventSynchronize(e1));
                    float el; cudaEventElapsedTime(&el, e0, e1); t.push_back(el);
                }
                CK(cudaGetLastError());
                float us = median(t) * 1e3;
                double bytes = (double)sh.n * sh.k * 2 + (double)m * sh.k * 2 + (double)m * ny * 2;
                double gbs = bytes / (us * 1e-6) / 1e9, tf = 2.0 * m * sh.n * sh.k / (us * 1e-6) / 1e12;
                const char* name = v == -2 ? "mma" : v == -1 ? "tiles (engine layout)" : LAYOUTS[v].name;
                printf("%-8s %4d %-24s %9.2f %8.0f %6.1f%% %8.1f %s\n", sh.name, m, name, us, gbs, 100 * gbs / copy_gbs, tf,
                       v == -2 ? "-" : diff ? "DIFFER" : "same");
                if (diff) printf("  %d of %zu values differ\n", diff, got.size());
            }
        }
    }
    printf("%s\n", bad ? "SOME LAYOUTS DIFFER FROM THE SMALL-ROW KERNEL" : "every layout gives the small-row kernel's bits");
    return bad ? 1 : 0;
}
