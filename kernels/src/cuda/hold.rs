//! Kernels for timing (`hold.cu`): a wait on the GPU, which timers launch
//! before their first event so that the host enqueues what they time while
//! the GPU is still busy, and the events then measure the GPU's own time,
//! not the host's driver calls between launches; and one link of a chain of
//! dependent launches that do no work (the launch ceiling).

use super::device::{Gpu, GpuError};
use super::launch::{cfg, launch, RawArg};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

/// Launches `hold_stream` on the main stream: one thread that returns once
/// the GPU's global timer has advanced `ns` nanoseconds. A plain launch,
/// never a programmatic dependent, so nothing after it starts early.
pub fn hold_stream(gpu: &Gpu, ns: u64) -> Result<(), GpuError> {
    let f = gpu.function("hold_stream")?;
    let mut hold = gpu.stream.launch_builder(&f);
    hold.arg(&ns);
    let one = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: hold_stream takes one unsigned 64-bit value.
    unsafe { hold.launch(one) }?;
    Ok(())
}

/// Launches one `launch_link` (`hold.cu`) on `gpu.sms` blocks of 128
/// threads, as the engine launches its kernels (a programmatic dependent
/// where `gpu.pdl` is set): it waits on the kernel before it, then adds one
/// to `v[0]`. A chain of them times what a dependent launch costs with no
/// work in it ([`crate::cuda::check::measure_ceilings`]).
pub fn launch_link(gpu: &Gpu, v: &mut CudaSlice<u32>) -> Result<(), GpuError> {
    let args = [RawArg::slice(gpu, v)];
    let grid = cfg((gpu.sms.max(1) as u32, 1), 128, 0);
    // SAFETY: launch_link takes one pointer, to at least one u32 (v is a
    // slice the caller allocated).
    unsafe { launch(gpu, "launch_link", grid, &args) }
}
