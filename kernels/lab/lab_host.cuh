// Host helpers shared by the lab programs that time the project's linears
// (rows_lab.cu, tiles_lab.cu): error checks, random fill, one launch with
// optional programmatic serialization and a cluster, the engine's launch
// layouts of the small-row and tiled kernels (mma_layout.rs), the median,
// the copy ceiling, and the Llama-3.1-8B linear shapes. Included after the
// project's kernel sources.
#pragma once
#include <cuda_runtime.h>
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void fill_rand(bf16* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        float v = ((h & 0xffff) / 65535.f - 0.5f) * 0.1f;
        st(&p[i], v);
    }
}

static cudaStream_t S;
static int g_pdl = 1;

template <typename... A>
static void launch(void (*f)(A...), dim3 grid, dim3 block, size_t smem, int cluster, A... args) {
    if (smem > 48 * 1024) CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid; cfg.blockDim = block; cfg.dynamicSmemBytes = smem; cfg.stream = S;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = g_pdl;
    int na = 1;
    if (cluster > 1) {
        at[1].id = cudaLaunchAttributeClusterDimension;
        at[1].val.clusterDim.x = cluster; at[1].val.clusterDim.y = 1; at[1].val.clusterDim.z = 1;
        na = 2;
    }
    cfg.attrs = at; cfg.numAttrs = na;
    CK(cudaLaunchKernelEx(&cfg, f, args...));
}

// mma_layout.rs: mma_k_parts, MmaLaunch::for_shape, TileLaunch::for_shape.
static int k_parts(int k, int n) {
    int tiles = (n + 15) / 16, parts = 1;
    while (parts < 8 && tiles * parts < 768 && k % (64 * parts) == 0 && k / (2 * parts) >= 256) parts *= 2;
    return parts;
}

static void run_mma(bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int silu) {
    int parts = k_parts(k, n), tiles = std::min(8, (m + 7) / 8);
    if (m <= 8) {
        size_t smem = parts > 1 ? parts * 4 * 32 * 4 : 0;
        launch(linear_mma_tile1_bf16, dim3((n + 15) / 16), dim3(32 * parts), smem, 1, y, x, w, (const bf16*)nullptr, m, k, n, parts, silu);
    } else if (m <= 32) {
        size_t smem = parts > 1 ? (size_t)parts * tiles * 4 * 32 * 4 : 0;
        launch(linear_mma_ku8_bf16, dim3((n + 15) / 16), dim3(32 * parts), smem, 1, y, x, w, (const bf16*)nullptr, m, k, n, parts, 1, silu);
    } else {
        int groups = 8 / parts;
        size_t smem = parts > 1 ? (size_t)groups * parts * tiles * 4 * 32 * 4 : 0;
        launch(linear_mma_ku4_bf16, dim3((n + 16 * groups - 1) / (16 * groups)), dim3(32 * groups * parts), smem, 1, y, x, w, (const bf16*)nullptr, m, k, n, parts, groups, silu);
    }
}

static void run_tiles(bf16* y, const bf16* x, const bf16* w, int m, int k, int n, int silu) {
    int parts = k_parts(k, n);
    int bm = m <= 16 ? 16 : m <= 32 ? 32 : m <= 255 ? 64 : 128;
    int blocks = (n + 127) / 128 * parts * ((m + bm - 1) / bm);
    int bn = (bm < 128 && blocks < 128) ? 64 : 128;
    int warps = (bn == 64 && bm <= 64) ? 4 : 8;
    size_t smem = 4 * (bn + bm) * 128;
    dim3 grid(parts, (m + bm - 1) / bm, (n + bn - 1) / bn), block(32 * warps);
#define T(BN, BM) if (bn == BN && bm == BM) launch(linear_tiles_##BN##x##BM##_bf16, grid, block, smem, parts, y, x, w, (const bf16*)nullptr, m, k, n, parts, silu);
    T(64, 16) T(128, 16) T(64, 32) T(128, 32) T(64, 64) T(128, 64) T(128, 128)
#undef T
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// The device-to-device copy ceiling in GB/s (bytes read + written), median of 10 copies of 1 GiB.
static double copy_ceiling(cudaEvent_t e0, cudaEvent_t e1) {
    size_t cb = 1ull << 30; void *ca, *cbp; CK(cudaMalloc(&ca, cb)); CK(cudaMalloc(&cbp, cb));
    std::vector<float> ts;
    for (int i = 0; i < 10; i++) { cudaEventRecord(e0, S); cudaMemcpyAsync(cbp, ca, cb, cudaMemcpyDeviceToDevice, S); cudaEventRecord(e1, S); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms); }
    CK(cudaFree(ca)); CK(cudaFree(cbp));
    return 2.0 * cb / (median(ts) * 1e-3) / 1e9;
}

struct Shape { const char* name; int n, k, silu; };
// Llama-3.1-8B: qkv, o, gate|up (SiLU epilogue), down and the LM head.
static const Shape SHAPES[] = {{"qkv", 6144, 4096, 0}, {"o", 4096, 4096, 0}, {"gate_up", 28672, 4096, 1},
                               {"down", 4096, 14336, 0}, {"lm_head", 128256, 4096, 0}};
const int NSHAPES = 5;
