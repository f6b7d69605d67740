//! The batch-invariant small-row linear: a row's result does not depend on
//! the other rows or how many there are, so a verify forward reproduces the
//! baseline's decode rows bit for bit. Tensor cores in bf16 (`linear_mma`,
//! `linear_mma.cu`), one warp per output column in FMA otherwise; cuBLAS
//! above [`INVARIANT_MAX_ROWS`].

use super::device::{Gpu, GpuElement, GpuError, SmallRowLinear};
use super::ops::{cfg, grid_for, name, need, THREADS};
use super::pdl::{launch_raw, RawArg};
pub use crate::mma_layout::{mma_k_parts, MmaLaunch, MMA_PIPELINED_MAX_ROWS};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::{CudaSlice, PushKernelArg};

/// Rows up to which [`linear_auto`] uses the batch-invariant [`linear_rows`]
/// instead of cuBLAS (decode and tree verification stay bit-identical across
/// batch shapes; long prefills get cuBLAS).
pub const INVARIANT_MAX_ROWS: usize = 64;

/// Whether [`linear_rows`] runs a `[n, k]` weight on tensor cores (bf16,
/// k a multiple of 32, the GPU's [`SmallRowLinear`] is `Mma`) rather than
/// the FMA kernel.
pub fn uses_mma<T: GpuElement>(gpu: &Gpu, k: usize) -> bool {
    gpu.small_row_linear == SmallRowLinear::Mma && T::SUFFIX == "bf16" && k.is_multiple_of(32)
}

/// The tensor-core linear with an explicit layout (k a multiple of 32
/// `parts`); `silu` takes interleaved gate|up columns to `silu(gate) * up`,
/// `y` then being `[m, n / 2]`.
#[allow(clippy::too_many_arguments)]
pub fn linear_mma<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    (m, k, n): (usize, usize, usize),
    launch: MmaLaunch,
    silu: bool,
) -> Result<(), GpuError> {
    let MmaLaunch {
        parts,
        chunks,
        groups,
        pipelined,
    } = launch;
    let width = if silu { n / 2 } else { n };
    need(
        T::SUFFIX == "bf16"
            && matches!(parts, 1 | 2 | 4 | 8)
            && matches!(chunks, 4 | 8)
            && groups >= 1
            && groups * parts <= 8
            && (!pipelined || (m <= MMA_PIPELINED_MAX_ROWS && chunks == 8 && groups == 1))
            && k.is_multiple_of(32 * parts)
            && (!silu || n.is_multiple_of(2))
            && x.len() >= m * k
            && w.len() == n * k
            && y.len() >= m * width
            && bias.is_none_or(|b| b.len() == n),
        || {
            format!(
                "linear_mma: unsupported shape or layout (m {m}, k {k}, n {n}, {launch:?}, {})",
                T::SUFFIX
            )
        },
    )?;
    let flags = i32::from(silu);
    let mut args = vec![
        RawArg::slice(gpu, y),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        RawArg::opt(gpu, bias),
        RawArg::I32(m as i32),
        RawArg::I32(k as i32),
        RawArg::I32(n as i32),
        RawArg::I32(parts as i32),
    ];
    let (f, token_tiles) = if pipelined {
        (gpu.function("linear_mma_tile1_bf16")?, 1)
    } else {
        args.push(RawArg::I32(groups as i32));
        (
            gpu.function(&format!("linear_mma_ku{chunks}_bf16"))?,
            m.div_ceil(8).min(8),
        )
    };
    args.push(RawArg::I32(flags));
    let smem = if parts > 1 {
        groups * parts * token_tiles * 4 * 32 * 4
    } else {
        0
    };
    let blocks = n.div_ceil(16 * groups) as u32;
    let cfg = cfg((blocks, 1), (32 * groups * parts) as u32, smem as u32);
    // SAFETY: the kernel's parameters in its order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg, &args) }
}

/// `y[m, n] = x[m, k] W[n, k]^T (+ bias)` for few rows, the same reduction
/// order for a row whatever `m` is: on tensor cores where [`uses_mma`],
/// else one warp per output column in FMA.
#[allow(clippy::too_many_arguments)]
pub fn linear_rows<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), GpuError> {
    if uses_mma::<T>(gpu, k) {
        return linear_mma(
            gpu,
            y,
            x,
            w,
            bias,
            (m, k, n),
            MmaLaunch::for_shape(m, k, n),
            false,
        );
    }
    linear_rows_fma(gpu, y, x, w, bias, m, k, n)
}

/// The FMA form of [`linear_rows`] (f32, or k not a multiple of 32): each
/// warp sums C adjacent columns for tiles of up to 8 rows.
#[allow(clippy::too_many_arguments)]
pub fn linear_rows_fma<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), GpuError> {
    need(
        x.len() >= m * k
            && w.len() == n * k
            && y.len() >= m * n
            && bias.is_none_or(|b| b.len() == n),
        || format!("linear_rows: sizes disagree (m {m}, k {k}, n {n})"),
    )?;
    // Columns per warp: one for a single row (most warps in flight), more
    // as rows grow (each x load then serves several columns).
    let c = match m {
        1 => 1,
        2..=3 => 2,
        _ => 4,
    };
    launch_fma(gpu, "linear_rows", c, y, x, w, bias, (m, k, n))
}

/// Launches the FMA kernel `{kernel}_c{c}` (C columns per warp) for `m`
/// rows of a `[n, k]` weight; sizes already checked.
#[allow(clippy::too_many_arguments)]
fn launch_fma<T: GpuElement>(
    gpu: &Gpu,
    kernel: &str,
    c: usize,
    y: &CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    (m, k, n): (usize, usize, usize),
) -> Result<(), GpuError> {
    let f = gpu.function(&name::<T>(&format!("{kernel}_c{c}")))?;
    let args = [
        RawArg::slice(gpu, y),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        RawArg::opt(gpu, bias),
        RawArg::I32(m as i32),
        RawArg::I32(k as i32),
        RawArg::I32(n as i32),
    ];
    let cols_per_block = c * THREADS as usize / 32;
    let cfg = cfg((n.div_ceil(cols_per_block) as u32, 1), THREADS, 0);
    // SAFETY: seven parameters in the kernel's order; the callers checked the sizes.
    unsafe { launch_raw(gpu, &f, cfg, &args) }
}

/// A linear layer: [`linear_rows`] up to [`INVARIANT_MAX_ROWS`] rows, cuBLAS
/// (plus a bias pass) above.
#[allow(clippy::too_many_arguments)]
pub fn linear_auto<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), GpuError>
where
    CudaBlas: Gemm<T>,
{
    if m <= INVARIANT_MAX_ROWS {
        return linear_rows(gpu, y, x, w, bias, m, k, n);
    }
    need(x.len() == m * k, || {
        "linear_auto: x has the wrong size".into()
    })?;
    super::ops::linear(gpu, y, x, w, m, k, n)?;
    if let Some(bias) = bias {
        let f = gpu.function(&name::<T>("add_bias"))?;
        let (total, nn) = ((m * n) as i64, n as i32);
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(y).arg(bias).arg(&total).arg(&nn);
        unsafe { b.launch(cfg((grid_for(m * n), 1), THREADS, 0)) }?;
    }
    Ok(())
}

/// `act[m, n/2] = silu(gate) * up` straight from the fused projection
/// `W[n, k]` whose rows interleave gate and up (`2i` = gate_i, `2i + 1` =
/// up_i); gate and up are rounded to `T` first, as if stored. Batch-invariant
/// like [`linear_rows`].
pub fn linear_rows_silu<T: GpuElement>(
    gpu: &Gpu,
    act: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), GpuError> {
    need(
        n.is_multiple_of(2) && x.len() >= m * k && w.len() == n * k && act.len() >= m * n / 2,
        || format!("linear_rows_silu: sizes disagree (m {m}, k {k}, n {n})"),
    )?;
    if uses_mma::<T>(gpu, k) {
        return linear_mma(
            gpu,
            act,
            x,
            w,
            None,
            (m, k, n),
            MmaLaunch::for_shape(m, k, n),
            true,
        );
    }
    let c = if m <= 3 { 2 } else { 4 };
    launch_fma(gpu, "linear_rows_silu", c, act, x, w, None, (m, k, n))
}
