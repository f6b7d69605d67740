//! The RMSNorm launch (`norm.cu`), with the residual add fused.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, name, need, RawArg};
use cudarc::driver::CudaSlice;

/// Threads of an RMSNorm block (one block a row; `norm.cu`'s register
/// path holds up to 4 x 16 bytes of a row per thread; `NORM_THREADS` in
/// `norm.cu`, the kernels' launch bounds).
pub(crate) const NORM_THREADS: u32 = 512;

/// `residual += delta` (when given), then `out = rmsnorm(residual) * w`, row by row.
pub fn rms_norm_residual<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    residual: &mut CudaSlice<T>,
    delta: Option<&CudaSlice<T>>,
    w: &CudaSlice<T>,
    eps: f32,
    hidden: usize,
) -> Result<(), GpuError> {
    let rows = residual.len() / hidden;
    need(
        w.len() == hidden
            && out.len() >= rows * hidden
            && delta.is_none_or(|d| d.len() >= rows * hidden),
        || "rms_norm_residual: sizes disagree".into(),
    )?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, residual),
        RawArg::opt(gpu, delta),
        RawArg::slice(gpu, w),
        RawArg::F32(eps),
        RawArg::I32(hidden as i32),
    ];
    let kernel = name::<T>("rms_norm_residual");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg((rows as u32, 1), NORM_THREADS, 0), &args) }
}
