//! Launch wrappers: one function per kernel, checking sizes before launching.

use super::device::{Gpu, GpuElement, GpuError};
use super::pdl::{launch_raw, RawArg};
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

/// Threads per block of the simple kernels.
pub(crate) const THREADS: u32 = 256;

pub(crate) fn cfg(grid: (u32, u32), block: u32, smem: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: smem,
    }
}

/// Blocks of [`THREADS`] covering `n` elements (grid-stride kernels; capped).
pub(crate) fn grid_for(n: usize) -> u32 {
    n.div_ceil(THREADS as usize).clamp(1, 65_535) as u32
}

pub(crate) fn need(ok: bool, what: impl FnOnce() -> String) -> Result<(), GpuError> {
    if ok {
        Ok(())
    } else {
        Err(GpuError::Shape(what()))
    }
}

pub(crate) fn name<T: GpuElement>(kernel: &str) -> String {
    format!("{kernel}_{}", T::SUFFIX)
}

/// `out[r] = table[ids[r]]` for `ids.len()` rows of `hidden`.
pub fn embedding_gather<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    table: &CudaSlice<T>,
    ids: &CudaSlice<u32>,
    hidden: usize,
) -> Result<(), GpuError> {
    let rows = ids.len();
    need(out.len() >= rows * hidden, || {
        "embedding_gather: out is too small".into()
    })?;
    let f = gpu.function(&name::<T>("embedding_gather"))?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, table),
        RawArg::slice(gpu, ids),
        RawArg::I32(hidden as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), THREADS, 0), &args) }
}

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
    let f = gpu.function(&name::<T>("rms_norm_residual"))?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, residual),
        RawArg::opt(gpu, delta),
        RawArg::slice(gpu, w),
        RawArg::F32(eps),
        RawArg::I32(hidden as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), 512, 0), &args) }
}

/// Rotates `x: [rows, heads, head_dim]` to `positions[r]` with the given inverse frequencies.
pub fn rope<T: GpuElement>(
    gpu: &Gpu,
    x: &mut CudaSlice<T>,
    positions: &CudaSlice<i32>,
    inv_freq: &CudaSlice<f32>,
    heads: usize,
    head_dim: usize,
) -> Result<(), GpuError> {
    let rows = positions.len();
    need(
        x.len() == rows * heads * head_dim && inv_freq.len() == head_dim / 2,
        || "rope: sizes disagree".into(),
    )?;
    let f = gpu.function(&name::<T>("rope"))?;
    let (h, d) = (heads as i32, head_dim as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(x).arg(positions).arg(inv_freq).arg(&h).arg(&d);
    unsafe { b.launch(cfg((rows as u32, 1), THREADS, 0)) }?;
    Ok(())
}

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
    let f = gpu.function(&name::<T>("silu_mul"))?;
    let nl = n as i64;
    let blocks = n.div_ceil(THREADS as usize).min(65_535) as u32;
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(out).arg(gate).arg(up).arg(&nl);
    unsafe { b.launch(cfg((blocks, 1), THREADS, 0)) }?;
    Ok(())
}

/// `out[r] = argmax(x[r, :n])` (the lowest index on ties).
pub fn argmax_rows<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<i32>,
    x: &CudaSlice<T>,
    n: usize,
) -> Result<(), GpuError> {
    let rows = x.len() / n;
    need(out.len() >= rows, || "argmax_rows: out is too small".into())?;
    let f = gpu.function(&name::<T>("argmax_rows"))?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), 512, 0), &args) }
}

/// The `k <= 32` largest of each row of `x: [rows, n]`, largest first.
pub fn top_k_rows<T: GpuElement>(
    gpu: &Gpu,
    idx: &mut CudaSlice<i32>,
    val: &mut CudaSlice<f32>,
    x: &CudaSlice<T>,
    n: usize,
    k: usize,
) -> Result<(), GpuError> {
    let rows = x.len() / n;
    need(
        (1..=32).contains(&k) && k <= n && idx.len() >= rows * k && val.len() >= rows * k,
        || format!("top_k_rows: k = {k} must be in 1..=32 and fit the outputs"),
    )?;
    let f = gpu.function(&name::<T>("top_k_rows"))?;
    let args = [
        RawArg::slice(gpu, idx),
        RawArg::slice(gpu, val),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
        RawArg::I32(k as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), 512, 0), &args) }
}

/// Compacts accepted KV rows of every layer: for sequence `s`, rows
/// `src[i] -> dst[i]` for `i` in `off[s]..off[s + 1]`, in order. Pools hold
/// `layers` layers of `layer_stride` elements, rows of `width`.
#[allow(clippy::too_many_arguments)]
pub fn kv_commit<T: GpuElement>(
    gpu: &Gpu,
    k_pool: &mut CudaSlice<T>,
    v_pool: &mut CudaSlice<T>,
    src: &CudaSlice<i32>,
    dst: &CudaSlice<i32>,
    off: &CudaSlice<i32>,
    layers: usize,
    width: usize,
    layer_stride: usize,
) -> Result<(), GpuError> {
    let n_seq = off.len() - 1;
    need(
        k_pool.len() >= layers * layer_stride
            && v_pool.len() == k_pool.len()
            && src.len() == dst.len(),
        || "kv_commit: sizes disagree".into(),
    )?;
    let f = gpu.function(&name::<T>("kv_commit"))?;
    let args = [
        RawArg::slice(gpu, k_pool),
        RawArg::slice(gpu, v_pool),
        RawArg::slice(gpu, src),
        RawArg::slice(gpu, dst),
        RawArg::slice(gpu, off),
        RawArg::I32(width as i32),
        RawArg::I64(layer_stride as i64),
    ];
    let grid = cfg((n_seq as u32, layers as u32), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, grid, &args) }
}

/// Outputs of [`verify_greedy_tree`].
pub struct GreedyVerdicts {
    /// Accepted local node indices, at each sequence's node offset.
    pub accepted: CudaSlice<i32>,
    /// Accepted count per sequence.
    pub accept_len: CudaSlice<i32>,
    /// Bonus token per sequence.
    pub bonus: CudaSlice<i32>,
}

/// Greedy verification of many trees at once (see `cpu::greedy_tree_accept`).
pub fn verify_greedy_tree(
    gpu: &Gpu,
    choice: &CudaSlice<i32>,
    tokens: &CudaSlice<i32>,
    parents: &CudaSlice<i32>,
    node_off: &CudaSlice<i32>,
) -> Result<GreedyVerdicts, GpuError> {
    let n_seq = node_off.len() - 1;
    need(
        choice.len() == tokens.len() + n_seq && parents.len() == tokens.len(),
        || "verify_greedy_tree: sizes disagree".into(),
    )?;
    let s = &gpu.stream;
    let v = GreedyVerdicts {
        accepted: s.alloc_zeros(tokens.len().max(1))?,
        accept_len: s.alloc_zeros(n_seq)?,
        bonus: s.alloc_zeros(n_seq)?,
    };
    let f = gpu.function("verify_greedy_tree")?;
    let args = [
        RawArg::slice(gpu, choice),
        RawArg::slice(gpu, tokens),
        RawArg::slice(gpu, parents),
        RawArg::slice(gpu, node_off),
        RawArg::I32(n_seq as i32),
        RawArg::slice(gpu, &v.accepted),
        RawArg::slice(gpu, &v.accept_len),
        RawArg::slice(gpu, &v.bonus),
    ];
    let grid = cfg((n_seq.div_ceil(128) as u32, 1), 128, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, grid, &args) }?;
    Ok(v)
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
