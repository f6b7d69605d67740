//! Launches of SiLU-and-multiply (`activation.cu`): gate and up as two
//! tensors, or as one fused gate|up projection.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, grid_for, launch, name, need, RawArg, THREADS};
use cudarc::driver::CudaSlice;

/// `out = silu(gate) * up`.
pub fn silu_mul<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    gate: &CudaSlice<T>,
    up: &CudaSlice<T>,
) -> Result<(), GpuError> {
    let n = gate.len();
    need(up.len() == n && out.len() >= n, || {
        "silu_mul: sizes disagree".into()
    })?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, gate),
        RawArg::slice(gpu, up),
        RawArg::I64(n as i64),
    ];
    let kernel = name::<T>("silu_mul");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg((grid_for(n), 1), THREADS, 0), &args) }
}

/// Where gate and up sit in a fused gate|up row of `2 * inner` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateUpLayout {
    /// `[gate (inner) | up (inner)]`.
    Halves,
    /// `[gate_0, up_0, gate_1, up_1, ...]` (the GPU model's layout: see
    /// [`LinearLayer::swiglu`](super::LinearLayer::swiglu)).
    Interleaved,
}

/// `out[r, i] = silu(gate_i) * up_i` over `rows` fused gate|up rows.
pub fn silu_mul_rows<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    gu: &CudaSlice<T>,
    rows: usize,
    inner: usize,
    layout: GateUpLayout,
) -> Result<(), GpuError> {
    need(
        gu.len() >= rows * 2 * inner && out.len() >= rows * inner,
        || "silu_mul_rows: sizes disagree".into(),
    )?;
    let kernel = match layout {
        GateUpLayout::Halves => "silu_mul_fused",
        GateUpLayout::Interleaved => "silu_mul_interleaved",
    };
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, gu),
        RawArg::I64(rows as i64),
        RawArg::I32(inner as i32),
    ];
    let grid = cfg((grid_for(rows * inner), 1), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &name::<T>(kernel), grid, &args) }
}
