//! Launch wrappers of the kernels the GPU model forward adds besides the
//! linear layers: the fused q/k/v RoPE + KV append, the fused gate|up SiLU,
//! column copies, device-side random fills, a split argmax and top-k
//! log-probabilities.

use super::device::{Gpu, GpuElement, GpuError};
use super::ops::{cfg, grid_for, name, need, THREADS};
use super::pdl::{launch_raw, RawArg};
use cudarc::driver::{CudaSlice, PushKernelArg};

/// Head layout of a fused q|k|v projection.
#[derive(Debug, Clone, Copy)]
pub struct QkvLayout {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
}

/// Per-head RMSNorm weights applied to q and k before RoPE (Qwen3).
#[derive(Clone, Copy)]
pub struct HeadNorm<'a, T> {
    /// `[head_dim]` weight of every q head.
    pub q: &'a CudaSlice<T>,
    /// `[head_dim]` weight of every k head.
    pub k: &'a CudaSlice<T>,
    /// Epsilon under the square root.
    pub eps: f32,
}

/// From `qkv: [rows, (heads + 2 kv_heads) head_dim]`: `q_out = rope(q)`, and
/// pool entry `entry[r]` (of the layer starting `pool_offset` elements into
/// the pools) gets `rope(k)` and `v`; with `head_norm`, each q and k head is
/// RMS-normalised first.
#[allow(clippy::too_many_arguments)]
pub fn qkv_rope_append<T: GpuElement>(
    gpu: &Gpu,
    q_out: &mut CudaSlice<T>,
    k_pool: &mut CudaSlice<T>,
    v_pool: &mut CudaSlice<T>,
    qkv: &CudaSlice<T>,
    positions: &CudaSlice<i32>,
    inv_freq: &CudaSlice<f32>,
    entry: &CudaSlice<i32>,
    pool_offset: usize,
    l: QkvLayout,
    head_norm: Option<HeadNorm<'_, T>>,
) -> Result<(), GpuError> {
    let rows = positions.len();
    let width = (l.heads + 2 * l.kv_heads) * l.head_dim;
    need(
        qkv.len() >= rows * width
            && q_out.len() >= rows * l.heads * l.head_dim
            && entry.len() == rows
            && inv_freq.len() == l.head_dim / 2
            && k_pool.len() == v_pool.len()
            && head_norm.is_none_or(|n| n.q.len() == l.head_dim && n.k.len() == l.head_dim),
        || "qkv_rope_append: sizes disagree".into(),
    )?;
    let f = gpu.function(&name::<T>("qkv_rope_append"))?;
    let args = [
        RawArg::slice(gpu, q_out),
        RawArg::slice(gpu, k_pool),
        RawArg::slice(gpu, v_pool),
        RawArg::slice(gpu, qkv),
        RawArg::slice(gpu, positions),
        RawArg::slice(gpu, inv_freq),
        RawArg::slice(gpu, entry),
        RawArg::I64(pool_offset as i64),
        RawArg::I32(l.heads as i32),
        RawArg::I32(l.kv_heads as i32),
        RawArg::I32(l.head_dim as i32),
        RawArg::opt(gpu, head_norm.map(|n| n.q)),
        RawArg::opt(gpu, head_norm.map(|n| n.k)),
        RawArg::F32(head_norm.map_or(0.0, |n| n.eps)),
    ];
    let blocks = (rows as u32, (l.heads + l.kv_heads + 1) as u32);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg(blocks, 64, 0), &args) }
}

/// Where gate and up sit in a fused gate|up row of `2 * inner` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateUpLayout {
    /// `[gate (inner) | up (inner)]`.
    Halves,
    /// `[gate_0, up_0, gate_1, up_1, ...]` (the GPU model's layout: see [`linear_rows_silu`]).
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
    let f = gpu.function(&name::<T>(kernel))?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, gu),
        RawArg::I64(rows as i64),
        RawArg::I32(inner as i32),
    ];
    let grid = cfg((grid_for(rows * inner), 1), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, grid, &args) }
}

/// `dst[r, offset..offset + w] = src[r, ..w]` for `rows` rows; `dst` rows are `dst_w` wide.
pub fn copy_cols<T: GpuElement>(
    gpu: &Gpu,
    dst: &mut CudaSlice<T>,
    src: &CudaSlice<T>,
    rows: usize,
    w: usize,
    dst_w: usize,
    offset: usize,
) -> Result<(), GpuError> {
    need(
        src.len() >= rows * w && dst.len() >= rows * dst_w && offset + w <= dst_w,
        || "copy_cols: sizes disagree".into(),
    )?;
    let f = gpu.function(&name::<T>("copy_cols"))?;
    let args = [
        RawArg::slice(gpu, dst),
        RawArg::slice(gpu, src),
        RawArg::I32(w as i32),
        RawArg::I32(dst_w as i32),
        RawArg::I32(offset as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), THREADS, 0), &args) }
}

/// Fills `x` with `offset + scale * u`, `u` uniform in [-1, 1) from a hash of
/// `(seed, index)`: random weights made on the device.
pub fn fill_uniform<T: GpuElement>(
    gpu: &Gpu,
    x: &mut CudaSlice<T>,
    seed: u64,
    scale: f32,
    offset: f32,
) -> Result<(), GpuError> {
    let n = x.len() as i64;
    let f = gpu.function(&name::<T>("fill_uniform"))?;
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(x).arg(&n).arg(&seed).arg(&scale).arg(&offset);
    unsafe { b.launch(cfg((grid_for(n as usize).min(4096), 1), THREADS, 0)) }?;
    Ok(())
}

/// Elements of a row each block of the split argmax scans.
pub const ARGMAX_CHUNK: usize = 4096;

/// Scratch of [`argmax_split`] for `rows` rows of `n`.
pub struct ArgmaxScratch {
    vals: CudaSlice<f32>,
    idxs: CudaSlice<i32>,
    splits: usize,
}

impl ArgmaxScratch {
    /// Scratch for up to `rows` rows of `n` values.
    pub fn new(gpu: &Gpu, rows: usize, n: usize) -> Result<ArgmaxScratch, GpuError> {
        let splits = n.div_ceil(ARGMAX_CHUNK).max(1);
        Ok(ArgmaxScratch {
            vals: gpu.stream.alloc_zeros(rows.max(1) * splits)?,
            idxs: gpu.stream.alloc_zeros(rows.max(1) * splits)?,
            splits,
        })
    }
}

/// `out[r] = argmax(x[r, :n])` (lowest index on ties) in two passes: blocks
/// over chunks of a row, then one warp per row.
pub fn argmax_split<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<i32>,
    x: &CudaSlice<T>,
    rows: usize,
    n: usize,
    scratch: &mut ArgmaxScratch,
) -> Result<(), GpuError> {
    need(
        x.len() >= rows * n
            && out.len() >= rows
            && scratch.vals.len() >= rows * scratch.splits
            && scratch.splits == n.div_ceil(ARGMAX_CHUNK).max(1),
        || "argmax_split: sizes disagree".into(),
    )?;
    let f = gpu.function(&name::<T>("argmax_partial"))?;
    let args = [
        RawArg::slice(gpu, &scratch.vals),
        RawArg::slice(gpu, &scratch.idxs),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
        RawArg::I32(ARGMAX_CHUNK as i32),
    ];
    let grid = cfg((rows as u32, scratch.splits as u32), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, grid, &args) }?;
    let f = gpu.function("argmax_final")?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, &scratch.vals),
        RawArg::slice(gpu, &scratch.idxs),
        RawArg::I32(scratch.splits as i32),
    ];
    // SAFETY: as above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), 32, 0), &args) }
}

/// The `k <= 32` largest log-probabilities (log-softmax) of each row of
/// logits `x: [rows, n]`, largest first, ties to the lower index.
pub fn top_k_logprobs<T: GpuElement>(
    gpu: &Gpu,
    idx: &mut CudaSlice<i32>,
    logp: &mut CudaSlice<f32>,
    x: &CudaSlice<T>,
    rows: usize,
    n: usize,
    k: usize,
) -> Result<(), GpuError> {
    need(
        (1..=32).contains(&k)
            && k <= n
            && x.len() >= rows * n
            && idx.len() >= rows * k
            && logp.len() >= rows * k,
        || format!("top_k_logprobs: k = {k} must be in 1..=32 and fit the outputs"),
    )?;
    let f = gpu.function(&name::<T>("top_k_logprobs"))?;
    let args = [
        RawArg::slice(gpu, idx),
        RawArg::slice(gpu, logp),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
        RawArg::I32(k as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg((rows as u32, 1), 512, 0), &args) }
}
