//! The linear layers. Up to [`INVARIANT_MAX_ROWS`] rows, the batch-invariant
//! small-row linear: a row's result does not depend on the other rows or
//! how many there are, so a verify forward reproduces the baseline's decode
//! rows bit for bit. Tensor cores in bf16 ([`linear_mma`], `linear_mma.cu`),
//! one warp per output column in FMA otherwise (`linear_fma.cu`). Above,
//! cuBLAS ([`linear`]) and its bias pass (`linear_bias.cu`).

use super::device::{Gpu, GpuElement, GpuError, SmallRowLinear};
use super::launch::{cfg, grid_for, launch, name, need, RawArg, THREADS};
pub use crate::mma_layout::{mma_k_parts, MmaLaunch, MMA_PIPELINED_MAX_ROWS};
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;

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
    layout: MmaLaunch,
    silu: bool,
) -> Result<(), GpuError> {
    let MmaLaunch {
        parts,
        chunks,
        groups,
        pipelined,
    } = layout;
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
                "linear_mma: unsupported shape or layout (m {m}, k {k}, n {n}, {layout:?}, {})",
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
    let (kernel, token_tiles) = if pipelined {
        ("linear_mma_tile1_bf16".to_string(), 1)
    } else {
        args.push(RawArg::I32(groups as i32));
        (format!("linear_mma_ku{chunks}_bf16"), m.div_ceil(8).min(8))
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
    unsafe { launch(gpu, &kernel, cfg, &args) }
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
    small_rows(gpu, y, x, w, bias, (m, k, n), false)
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
    fma_rows(gpu, y, x, w, bias, (m, k, n), false)
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
    small_rows(gpu, act, x, w, None, (m, k, n), true)
}

/// [`linear_rows`], or with `silu` [`linear_rows_silu`]: on tensor cores
/// where [`uses_mma`], else in FMA.
fn small_rows<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    (m, k, n): (usize, usize, usize),
    silu: bool,
) -> Result<(), GpuError> {
    if uses_mma::<T>(gpu, k) {
        let layout = MmaLaunch::for_shape(m, k, n);
        return linear_mma(gpu, y, x, w, bias, (m, k, n), layout, silu);
    }
    fma_rows(gpu, y, x, w, bias, (m, k, n), silu)
}

/// The FMA kernel `linear_rows_c{C}` (or with `silu`
/// `linear_rows_silu_c{C}`: `y` then `[m, n / 2]`), C columns per warp.
fn fma_rows<T: GpuElement>(
    gpu: &Gpu,
    y: &CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    bias: Option<&CudaSlice<T>>,
    (m, k, n): (usize, usize, usize),
    silu: bool,
) -> Result<(), GpuError> {
    let kernel = if silu {
        "linear_rows_silu"
    } else {
        "linear_rows"
    };
    let width = if silu { n / 2 } else { n };
    need(
        (!silu || n.is_multiple_of(2))
            && x.len() >= m * k
            && w.len() == n * k
            && y.len() >= m * width
            && bias.is_none_or(|b| b.len() == n),
        || format!("{kernel}: sizes disagree (m {m}, k {k}, n {n})"),
    )?;
    // Columns per warp: one for a single row (most warps in flight), more
    // as rows grow (each x load then serves several columns); the SiLU
    // epilogue pairs gate and up columns, so at least two.
    let c = match m {
        0..=3 if silu => 2,
        1 => 1,
        2..=3 => 2,
        _ => 4,
    };
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
    let kernel = name::<T>(&format!("{kernel}_c{c}"));
    // SAFETY: seven parameters in the kernel's order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg, &args) }
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
    need(
        x.len() == m * k && bias.is_none_or(|b| b.len() == n),
        || "linear_auto: x or bias has the wrong size".into(),
    )?;
    linear(gpu, y, x, w, m, k, n)?;
    if let Some(bias) = bias {
        let args = [
            RawArg::slice(gpu, y),
            RawArg::slice(gpu, bias),
            RawArg::I64((m * n) as i64),
            RawArg::I32(n as i32),
        ];
        let grid = cfg((grid_for(m * n), 1), THREADS, 0);
        // SAFETY: the kernel's parameters in order; y holds m * n (linear checked it), bias n.
        unsafe { launch(gpu, &name::<T>("add_bias"), grid, &args) }?;
    }
    Ok(())
}

/// `y[m, n] = x[m, k] W[n, k]^T` through cuBLAS (bf16 inputs accumulate in f32).
pub fn linear<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), GpuError>
where
    CudaBlas: Gemm<T>,
{
    need(
        x.len() == m * k && w.len() == n * k && y.len() >= m * n,
        || "linear: sizes disagree".into(),
    )?;
    // Row-major y = x W^T is column-major y^T = W^T' x^T: cuBLAS sees W as [k, n] transposed.
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: T::from_f32(1.0),
        lda: k as i32,
        ldb: k as i32,
        beta: T::from_f32(0.0),
        ldc: n as i32,
    };
    unsafe { gpu.blas.gemm(cfg, w, x, y) }?;
    Ok(())
}
