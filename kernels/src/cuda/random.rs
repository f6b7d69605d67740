//! The launch of the device-side random fill (`random.cu`).

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, grid_for, launch, name, RawArg, THREADS};
use cudarc::driver::CudaSlice;

/// Fills `x` with `offset + scale * u`, `u` uniform in [-1, 1) from a hash of
/// `(seed, index)`: random weights made on the device.
pub fn fill_uniform<T: GpuElement>(
    gpu: &Gpu,
    x: &mut CudaSlice<T>,
    seed: u64,
    scale: f32,
    offset: f32,
) -> Result<(), GpuError> {
    let n = x.len();
    let args = [
        RawArg::slice(gpu, x),
        RawArg::I64(n as i64),
        RawArg::U64(seed),
        RawArg::F32(scale),
        RawArg::F32(offset),
    ];
    let grid = cfg((grid_for(n).min(4096), 1), THREADS, 0);
    // SAFETY: the kernel's parameters in order; it writes x's n elements.
    unsafe { launch(gpu, &name::<T>("fill_uniform"), grid, &args) }
}
