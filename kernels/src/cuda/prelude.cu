// specula's CUDA kernels, compiled at run time by NVRTC (no headers needed):
// device.rs concatenates this prelude and then one file per op family.
// Every kernel exists for float (_f32) and bfloat16 (_bf16, stored as
// unsigned short, computed in float). Each has a CPU reference in
// kernels/src/cpu, and the GPU check (cuda/check) compares them on random
// inputs.
//
// The prelude: the bf16 type, loads and stores in float, programmatic
// dependent launch, block-wide reductions, and the macros that declare a
// kernel in both element types.

typedef unsigned short bf16;
#define INFINITY __int_as_float(0x7f800000)

__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const bf16* p) { return __uint_as_float(((unsigned int)*p) << 16); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(bf16* p, float v) {
    unsigned int u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) { *p = 0x7fc0; return; }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    *p = (bf16)(u >> 16);
}

// Two adjacent values (p 8-byte aligned for f32, 4-byte for bf16).
__device__ __forceinline__ void ld2(const float* p, float& a, float& b) {
    float2 v = *(const float2*)p;
    a = v.x;
    b = v.y;
}
__device__ __forceinline__ void ld2(const bf16* p, float& a, float& b) {
    unsigned int w = *(const unsigned int*)p;
    a = __uint_as_float(w << 16);
    b = __uint_as_float(w & 0xffff0000u);
}
// 16 bytes of T, as loaded, as floats.
template <typename T>
__device__ __forceinline__ void unpack16(uint4 a, float* v);
template <>
__device__ __forceinline__ void unpack16<float>(uint4 a, float* v) {
    v[0] = __uint_as_float(a.x); v[1] = __uint_as_float(a.y); v[2] = __uint_as_float(a.z); v[3] = __uint_as_float(a.w);
}
template <>
__device__ __forceinline__ void unpack16<bf16>(uint4 a, float* v) {
    unsigned int w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[2 * i] = __uint_as_float(w[i] << 16);
        v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
// 16 bytes of T as floats.
__device__ __forceinline__ void ld16(const float* p, float* v) {
    float4 a = *(const float4*)p;
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
}
__device__ __forceinline__ void ld16(const bf16* p, float* v) { unpack16<bf16>(*(const uint4*)p, v); }

// 16 bytes of floats stored as T.
__device__ __forceinline__ void st16(float* p, const float* v) { *(float4*)p = make_float4(v[0], v[1], v[2], v[3]); }
__device__ __forceinline__ void st16(bf16* p, const float* v) {
    unsigned int w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        bf16 a, b;
        st(&a, v[2 * i]);
        st(&b, v[2 * i + 1]);
        w[i] = (unsigned int)a | ((unsigned int)b << 16);
    }
    *(uint4*)p = make_uint4(w[0], w[1], w[2], w[3]);
}

// Programmatic dependent launch (sm_90+; no-ops elsewhere and when the
// kernel was launched without the attribute): `pdl_launch_dependents` lets
// the next kernel in the stream start early (it may only touch data that no
// earlier kernel writes until its own `pdl_wait`), `pdl_wait` blocks until
// the previous kernel has finished and its writes are visible.
__device__ __forceinline__ void pdl_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}
#ifdef SPECULA_STAMPS
// Wait-return stamps (SPECULA_STAMPS=1 compiles them in; stamps.rs reads
// them): thread 0 of block (0, 0, 0) of every kernel takes a slot before its
// wait on the kernel before (the atomic's round trip under the wait) and
// stores the global timer as the wait returns, with the launch's block count
// and threads a block. In one stream a kernel's wait returns as the one
// before completes, so consecutive stamps (by time) give each kernel's share
// of the step as it runs, overlap included.
#define SPECULA_STAMPS_CAP 65536
__device__ unsigned long long specula_stamps[2 * SPECULA_STAMPS_CAP];
__device__ unsigned int specula_stamp_count;
__device__ __forceinline__ bool stamp_thread() {
    return (threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y | blockIdx.z) == 0;
}
__device__ __forceinline__ void stamp_store(unsigned int i) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (i < SPECULA_STAMPS_CAP) {
        specula_stamps[2 * i] = t;
        specula_stamps[2 * i + 1] = (unsigned long long)(gridDim.x * gridDim.y * gridDim.z) |
                                    ((unsigned long long)(blockDim.x * blockDim.y * blockDim.z) << 32);
    }
}
#endif
__device__ __forceinline__ void pdl_wait() {
#ifdef SPECULA_STAMPS
    const bool stamp = stamp_thread();
    const unsigned int slot = stamp ? atomicAdd(&specula_stamp_count, 1u) : 0u;
#endif
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
#ifdef SPECULA_STAMPS
    if (stamp) stamp_store(slot);
#endif
}

// Where every kernel starts, after loading what no kernel writes (weights,
// key lists): nothing else is read or written before the previous kernel
// has finished. Every kernel launched as a programmatic dependent must wait
// like this, or a kernel after it could overtake the one before it. Then
// the next kernel may launch (compiled with SPECULA_PDL_EARLY, the default;
// SPECULA_PDL=late leaves it out: the next launches as this one's blocks
// finish), so that its own early loads overlap this kernel
// (results/h200/moe-route-2026-12-04/call3: DeepSeek-V2-Lite batch 1
// 2396-2422 -> 2316-2337 us, Llama-3.1-8B batch 8 4755-4775 -> 4661-4697).
__device__ __forceinline__ void pdl_enter() {
    pdl_wait();
#ifdef SPECULA_PDL_EARLY
    pdl_launch_dependents();
#endif
}

// Asks L2 for the 128-byte line at p (no register written; weights only,
// which no kernel writes, so it may run before pdl_wait).
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// Thread i of n asks L2 for its share of the 128-byte lines of [p, p + bytes).
__device__ __forceinline__ void prefetch_l2_span(const void* p, size_t bytes, int i, int n) {
    for (size_t b = (size_t)i * 128; b < bytes; b += (size_t)n * 128) prefetch_l2((const char*)p + b);
}

// Asks L2 for [p, p + bytes) in one bulk prefetch (sm_90; p 16-byte aligned,
// bytes a multiple of 16); nothing waits for it. A no-op before sm_90.
__device__ __forceinline__ void prefetch_l2_bulk(const void* p, unsigned int bytes) {
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// The 32-bit shared-memory address of p (a shared-memory pointer).
__device__ __forceinline__ unsigned int smem_addr(const void* p) {
    unsigned int a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// A wgmma shared-memory matrix descriptor of a no-swizzle K-major operand
// at shared address `addr`: start address, leading (k) and stride (rows)
// byte offsets, each >> 4 (sm_90a's wgmma reads it; plain bits elsewhere).
__device__ __forceinline__ unsigned long long wg_desc_at(unsigned int addr, unsigned lbo, unsigned sbo) {
    return ((unsigned long long)(addr & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
           ((unsigned long long)(sbo >> 4) << 32);
}

// 16 bytes global -> shared by cp.async (not through registers), to a
// shared address (`cp_async16_at`) or pointer; committed
// as a group by cp_async_commit, waited for by cp_async_wait<N> (until at
// most N later groups are pending).
__device__ __forceinline__ void cp_async16_at(unsigned int dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) { cp_async16_at(smem_addr(dst), src); }
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// *counter += v at GPU scope, releasing what this thread's block wrote
// before a block barrier and acquiring what the earlier adders released;
// returns the old value.
__device__ __forceinline__ unsigned int atom_add_acq_rel(unsigned int* counter, unsigned int v) {
    unsigned int prev;
    asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], %2;" : "=r"(prev) : "l"(counter), "r"(v) : "memory");
    return prev;
}

// Whether this block is the last of n to arrive at *counter (zero between
// launches: the last block resets it once done), with every global write
// the arriving blocks made before the call visible to the last block's
// threads after it. One thread per block takes the ticket with an acq_rel
// atomic between two block barriers (the barrier orders the block's writes
// before that thread's release, as CUTLASS's barrier.h arrives), in place
// of a sequentially consistent fence by every thread before and after.
__device__ __forceinline__ bool last_to_arrive(unsigned int* counter, unsigned int n) {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) last = atom_add_acq_rel(counter, 1u) == n - 1;
    __syncthreads();
    return last;
}
__device__ __forceinline__ bool last_to_arrive(int* counter, int n) {
    return last_to_arrive((unsigned int*)counter, (unsigned int)n);
}

// silu(g) * u, the SiLU-and-mul of every gate|up kernel (a macro, so that
// each use compiles exactly as the expression written out; g is evaluated
// twice: pass a variable).
#define SILU_AND_MUL(g, u) ((g) / (1.f + expf(-(g))) * (u))

// Block-wide reductions; blockDim.x is a multiple of 32, at most 1024.
__device__ float block_sum(float v) {
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.f;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

__device__ float block_max(float v) {
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : -INFINITY;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

// The kernels NAME_f32 and NAME_bf16, parameters PARAMS(T), each declared
// with ATTR (empty, or __launch_bounds__(...)): each runs ENTER(T)
// (PDL_ENTER: pdl_enter; NO_ENTER for a kernel that enters as a programmatic
// dependent itself, after loading what no kernel writes), then calls FN
// TARGS(T) ARGS (TARGS(T) spells the template arguments: T_ONLY for FN<T>).
#define KERNELS_WITH(NAME, FN, TARGS, PARAMS, ARGS, ENTER, ATTR)                 \
    extern "C" __global__ void ATTR NAME##_f32 PARAMS(float) {                    \
        ENTER(float);                                                               \
        FN TARGS(float) ARGS;                                                       \
    }                                                                               \
    extern "C" __global__ void ATTR NAME##_bf16 PARAMS(bf16) {                    \
        ENTER(bf16);                                                                \
        FN TARGS(bf16) ARGS;                                                        \
    }
#define KERNELS_ENTERED(NAME, FN, TARGS, PARAMS, ARGS, ENTER) KERNELS_WITH(NAME, FN, TARGS, PARAMS, ARGS, ENTER, )
// KERNELS_ENTERED for kernels always launched with THREADS threads a block:
// __launch_bounds__ keeps a thread's registers within what such a block may
// hold (past it the launch would fail, not slow down).
#define KERNELS_BOUNDED(NAME, FN, TARGS, PARAMS, ARGS, ENTER, THREADS) \
    KERNELS_WITH(NAME, FN, TARGS, PARAMS, ARGS, ENTER, __launch_bounds__(THREADS))
#define PDL_ENTER(T) pdl_enter()
#define NO_ENTER(T) (void)0
// KERNELS_ENTERED with pdl_enter: what almost every kernel uses.
#define KERNELS(NAME, FN, TARGS, PARAMS, ARGS) KERNELS_ENTERED(NAME, FN, TARGS, PARAMS, ARGS, PDL_ENTER)
#define T_ONLY(T) <T>

// The kernels of the device template NAME<T>: NAME_f32 and NAME_bf16.
#define BOTH(NAME, PARAMS, ARGS) KERNELS(NAME, NAME, T_ONLY, PARAMS, ARGS)
