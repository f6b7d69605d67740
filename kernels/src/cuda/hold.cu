
// ---------------------------------------------------------------------------
// Kernels for timing. hold_stream only waits: GpuTimer launches it before its start event so
// that the host's launch work for what is timed happens while the GPU is
// still busy, and the events measure the GPU's own time (without it, a
// single timed launch also counted the host's few microseconds of driver
// calls between the two events).

// Spins one thread until the global timer has advanced `ns` nanoseconds.
extern "C" __global__ void hold_stream(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// One link of a chain of dependent launches (the launch ceiling of
// check/ceilings.rs, Ceilings::launch_us): waits on the kernel before it as
// every engine kernel does (pdl_enter), then one thread adds one to v,
// which the next link reads after its own wait.
extern "C" __global__ void launch_link(unsigned int* v) {
    pdl_enter();
    if (blockIdx.x == 0 && threadIdx.x == 0) *v += 1u;
}

// A mark of the host's progress in the stamps (SPECULA_STAMPS=1): it does
// nothing but wait on the kernel before, so its stamp is when the host
// launched it where the GPU was idle, or when the work queued before it
// finished. Its block count names the mark (stamps.rs, host_mark).
extern "C" __global__ void host_mark() { pdl_enter(); }
