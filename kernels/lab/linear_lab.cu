// The linear lab: how fast each form of the one-row linear streams the
// Llama-3.1-8B weights on the GPU, alone (CUDA events around one launch,
// median of 31) and as the 129 linears of one decode step in a CUDA graph
// (median of 15 replays, with and without programmatic dependent launches),
// against the device-to-device copy ceiling measured in the same run; and
// that every form gives the project kernel's bits. Compiles the project's
// own kernel sources with nvcc; needs no Rust. On the GPU machine:
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/linear_lab kernels/lab/linear_lab.cu -lcuda
//   /tmp/linear_lab [METHOD...]   # 0 multi-tile mma, 1 FMA, 2 pure read stream,
//                                 # 3 pipelined one-tile mma (the default),
//                                 # 4-6 cp.async staging (4x4, 6x4, 4x8 stages x chunks)
//
// Weights: 15 GB of random bf16 (32 layers and the LM head), about 16 GB of
// device memory.
#include <cuda_runtime.h>
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#undef INFINITY
#include "../src/cuda/prelude.cu"
#include "../src/cuda/linear_fma.cu"
#include "../src/cuda/linear_mma.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void fill_rand(bf16* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        float v = ((h & 0xffff) / 65535.f - 0.5f) * 0.1f;
        st(&p[i], v);
    }
}

struct Lin { int n, k; bf16* w; };
static int g_pdl = 1;
static cudaStream_t S;

template <typename... A>
static void launch(void (*f)(A...), dim3 grid, dim3 block, size_t smem, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid; cfg.blockDim = block; cfg.dynamicSmemBytes = smem; cfg.stream = S;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = g_pdl;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, f, args...));
}

static int k_parts(int k, int n) {
    int tiles = (n + 15) / 16, parts = 1;
    while (parts < 8 && tiles * parts < 768 && k % (64 * parts) == 0 && k / (2 * parts) >= 256) parts *= 2;
    return parts;
}

#include "lab_kernels.cu"

// method: 0 multi-tile mma, 1 FMA, 2 pure read stream, 3+ see lab_linear
static void run_linear(int method, bf16* y, const bf16* x, const Lin& L, int silu, float* sink) {
    int n = L.n, k = L.k;
    if (method == 0) {
        int parts = k_parts(k, n);
        size_t smem = parts > 1 ? parts * 4 * 32 * 4 : 0;
        launch(linear_mma_ku8_bf16, dim3((n + 15) / 16), dim3(32 * parts), smem, y, x, (const bf16*)L.w, (const bf16*)nullptr, 1, k, n, parts, 1, silu);
    } else if (method == 1) {
        if (silu) launch(linear_rows_silu_c2_bf16, dim3((n + 15) / 16), dim3(256), 0, y, x, (const bf16*)L.w, (const bf16*)nullptr, 1, k, n);
        else launch(linear_rows_c1_bf16, dim3((n + 7) / 8), dim3(256), 0, y, x, (const bf16*)L.w, (const bf16*)nullptr, 1, k, n);
    } else if (method == 2) {
        size_t n16 = (size_t)n * k / 8;
        launch(stream_read, dim3(132 * 8), dim3(256), 0, (const uint4*)L.w, n16, sink);
    } else {
        lab_linear(method, y, x, L, silu);
    }
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
    CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    // copy ceiling
    size_t cb = 1ull << 30; void *ca, *cbp; CK(cudaMalloc(&ca, cb)); CK(cudaMalloc(&cbp, cb));
    std::vector<float> ts;
    for (int i = 0; i < 10; i++) { cudaEventRecord(e0, S); cudaMemcpyAsync(cbp, ca, cb, cudaMemcpyDeviceToDevice, S); cudaEventRecord(e1, S); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms); }
    double copy_gbs = 2.0 * cb / (median(ts) * 1e-3) / 1e9;
    printf("copy %.0f GB/s\n", copy_gbs);
    CK(cudaFree(ca)); CK(cudaFree(cbp));

    const int L = 32;
    std::vector<Lin> layers;
    int shapes[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
    double bytes = 0;
    for (int l = 0; l < L; l++) for (int s = 0; s < 4; s++) {
        Lin li{shapes[s][0], shapes[s][1], nullptr};
        size_t ne = (size_t)li.n * li.k; CK(cudaMalloc(&li.w, ne * 2)); fill_rand<<<1024, 256, 0, S>>>(li.w, ne, l * 4 + s); layers.push_back(li); bytes += ne * 2.0;
    }
    Lin head{128256, 4096, nullptr}; CK(cudaMalloc(&head.w, (size_t)head.n * head.k * 2)); fill_rand<<<1024, 256, 0, S>>>(head.w, (size_t)head.n * head.k, 999);
    bytes += (double)head.n * head.k * 2;
    bf16 *xa, *xb, *xc; float* sink;
    CK(cudaMalloc(&xa, 64 * 28672 * 2)); CK(cudaMalloc(&xb, 64 * 28672 * 2)); CK(cudaMalloc(&xc, 64 * 128256 * 2)); CK(cudaMalloc(&sink, 1 << 20));
    fill_rand<<<64, 256, 0, S>>>(xa, 64 * 28672, 5); fill_rand<<<64, 256, 0, S>>>(xb, 64 * 28672, 6);
    CK(cudaStreamSynchronize(S));
    printf("weights %.2f GB\n", bytes / 1e9);

    std::vector<int> methods;
    for (int i = 1; i < argc; i++) methods.push_back(atoi(argv[i]));
    if (methods.empty()) methods = {0, 1, 2, 3};
    for (int m : methods)
        if (m < 0 || m > 6) { printf("methods are 0-6\n"); return 2; }
    // bitwise agreement of every method with the multi-tile mma kernel (m = 1)
    for (int method : methods) {
        if (method == 2) continue;
        for (int s = 0; s < 4; s++) {
            int silu = s == 2;
            const Lin& li = layers[4 + s];
            int ny = silu ? li.n / 2 : li.n;
            bf16 *y0, *y1; CK(cudaMalloc(&y0, ny * 2)); CK(cudaMalloc(&y1, ny * 2));
            run_linear(0, y0, xa, li, silu, sink); run_linear(method, y1, xa, li, silu, sink);
            CK(cudaStreamSynchronize(S));
            std::vector<unsigned short> a(ny), b(ny);
            CK(cudaMemcpy(a.data(), y0, ny * 2, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b.data(), y1, ny * 2, cudaMemcpyDeviceToHost));
            int diff = 0, nz = 0; for (int i = 0; i < ny; i++) { diff += a[i] != b[i]; nz += a[i] != 0; }
            printf("check method %d shape %d: %d of %d differ (%d nonzero)\n", method, s, diff, ny, nz);
            cudaFree(y0); cudaFree(y1);
        }
    }
    const char* names[] = {"mma", "fma", "stream", "tile1", "cp4x4", "cp6x4", "cp4x8"};
    // per kernel isolated (layer 0 weights; and a different layer each rep to defeat L2)
    const char* pn[] = {"qkv", "o", "gate_up", "down"};
    for (int method : methods) {
        for (int pdl = 0; pdl <= 1; pdl++) {
            g_pdl = pdl;
            for (int s = 0; s < 5; s++) {
                std::vector<float> t;
                for (int r = 0; r < 31; r++) {
                    const Lin& li = s < 4 ? layers[(r % L) * 4 + s] : head;
                    cudaEventRecord(e0, S);
                    run_linear(method, s == 2 ? xb : xc, xa, li, 0, sink);
                    cudaEventRecord(e1, S); CK(cudaEventSynchronize(e1));
                    float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms);
                }
                const Lin& li = s < 4 ? layers[s] : head;
                double b = (double)li.n * li.k * 2; float m = median(t);
                printf("isolated %-6s pdl%d %-8s %8.2f us  %5.1f%% of copy\n", names[method], pdl, s < 4 ? pn[s] : "lm_head", m * 1e3, 100.0 * b / (m * 1e-3) / copy_gbs / 1e9);
            }
            // whole chain in a graph
            cudaGraph_t g; cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
            for (int l = 0; l < L; l++) {
                run_linear(method, xb, xa, layers[l * 4 + 0], 0, sink);
                run_linear(method, xc, xb, layers[l * 4 + 1], 0, sink);
                run_linear(method, xb, xc, layers[l * 4 + 2], 1, sink);
                run_linear(method, xa, xb, layers[l * 4 + 3], 0, sink);
            }
            run_linear(method, xc, xa, head, 0, sink);
            CK(cudaStreamEndCapture(S, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
            std::vector<float> t;
            for (int r = 0; r < 15; r++) {
                cudaEventRecord(e0, S); CK(cudaGraphLaunch(ge, S)); cudaEventRecord(e1, S); CK(cudaEventSynchronize(e1));
                float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms);
            }
            float m = median(t);
            printf("chain    %-6s pdl%d %8.3f ms  %5.1f%% of copy\n", names[method], pdl, m, 100.0 * bytes / (m * 1e-3) / copy_gbs / 1e9);
            cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
        }
    }
    return 0;
}
