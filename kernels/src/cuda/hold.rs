//! A wait on the GPU (`hold.cu`): timers launch it before their first
//! event so that the host enqueues what they time while the GPU is still
//! busy, and the events then measure the GPU's own time, not the host's
//! driver calls between launches.

use super::device::{Gpu, GpuError};
use cudarc::driver::{LaunchConfig, PushKernelArg};

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
