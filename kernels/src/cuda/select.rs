//! Launches of the selections over rows of logits (`select.cu`): argmax
//! (one block per row, or split over chunks of a row), top-k, and top-k
//! log-probabilities. Ties go to the lower index throughout.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, name, need, RawArg, THREADS};
use crate::switch::Switch;
use cudarc::driver::CudaSlice;

/// `out[r] = argmax(x[r, :n])` (the lowest index on ties).
pub fn argmax_rows<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<i32>,
    x: &CudaSlice<T>,
    n: usize,
) -> Result<(), GpuError> {
    let rows = x.len() / n;
    need(out.len() >= rows, || "argmax_rows: out is too small".into())?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
    ];
    let kernel = name::<T>("argmax_rows");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg((rows as u32, 1), 512, 0), &args) }
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
    top_k(gpu, "top_k_rows", idx, val, x, (x.len() / n, n, k))
}

/// Elements of a row each block of the split argmax scans
/// (`SPECULA_ARGMAX_CHUNK`: `1024`, the default, or `4096`; the same
/// result either way; read once).
pub fn argmax_chunk() -> usize {
    static CHUNK: Switch<usize> = Switch::new(
        "SPECULA_ARGMAX_CHUNK",
        &[("1024", 1024), ("4096", 4096)],
        1024,
        "1024",
    );
    CHUNK.get()
}

/// Scratch of [`argmax_split`] for `rows` rows of `n`.
pub struct ArgmaxScratch {
    vals: CudaSlice<f32>,
    idxs: CudaSlice<i32>,
    splits: usize,
    chunk: usize,
}

impl ArgmaxScratch {
    /// Scratch for up to `rows` rows of `n` values.
    pub fn new(gpu: &Gpu, rows: usize, n: usize) -> Result<ArgmaxScratch, GpuError> {
        let chunk = argmax_chunk();
        let splits = n.div_ceil(chunk).max(1);
        Ok(ArgmaxScratch {
            chunk,
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
            && scratch.splits == n.div_ceil(scratch.chunk).max(1),
        || "argmax_split: sizes disagree".into(),
    )?;
    let args = [
        RawArg::slice(gpu, &scratch.vals),
        RawArg::slice(gpu, &scratch.idxs),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
        RawArg::I32(scratch.chunk as i32),
    ];
    let grid = cfg((rows as u32, scratch.splits as u32), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &name::<T>("argmax_partial"), grid, &args) }?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, &scratch.vals),
        RawArg::slice(gpu, &scratch.idxs),
        RawArg::I32(scratch.splits as i32),
    ];
    // SAFETY: as above.
    unsafe { launch(gpu, "argmax_final", cfg((rows as u32, 1), 32, 0), &args) }
}

/// How [`top_k_logprobs`] runs (`SPECULA_TOPK`: `split`, the default, blocks
/// over chunks of a row and a warp a row merging them; `block`, one block
/// of 512 threads a row, the form before: ~80 us after each draft forward's
/// last kernel in results/h200/state-2026-12-07 call 1). The same ids; the
/// log-probabilities' sums in another order.
pub fn top_k_split() -> bool {
    static SPLIT: Switch<bool> = Switch::new(
        "SPECULA_TOPK",
        &[("split", true), ("block", false)],
        true,
        "split",
    );
    SPLIT.get()
}

/// Elements of a row each block of the split top-k scans.
const TOP_K_CHUNK: usize = 1024;

/// Scratch of [`top_k_logprobs`]'s split form for up to `rows` rows of `n`
/// and `k <= 32`: each chunk's max and sum, and its `k` candidates.
pub struct TopKScratch {
    cand_val: CudaSlice<f32>,
    cand_idx: CudaSlice<i32>,
    stats: CudaSlice<f32>,
    rows: usize,
    n: usize,
    k: usize,
}

impl TopKScratch {
    /// Scratch for up to `rows` rows of `n` logits and `k` picks a row.
    pub fn new(gpu: &Gpu, rows: usize, n: usize, k: usize) -> Result<TopKScratch, GpuError> {
        let slots = rows.max(1) * n.div_ceil(TOP_K_CHUNK).max(1);
        Ok(TopKScratch {
            cand_val: gpu.stream.alloc_zeros(slots * k.max(1))?,
            cand_idx: gpu.stream.alloc_zeros(slots * k.max(1))?,
            stats: gpu.stream.alloc_zeros(2 * slots)?,
            rows: rows.max(1),
            n,
            k: k.max(1),
        })
    }
}

/// The `k <= 32` largest log-probabilities (log-softmax) of each row of
/// logits `x: [rows, n]`, largest first, ties to the lower index: split
/// over chunks of 1024 with `scratch` (one launch a row's chunks, one
/// merging them; a row's bits never depend on the batch), or as one block
/// a row ([`top_k_split`]).
pub fn top_k_logprobs<T: GpuElement>(
    gpu: &Gpu,
    idx: &mut CudaSlice<i32>,
    logp: &mut CudaSlice<f32>,
    x: &CudaSlice<T>,
    (rows, n, k): (usize, usize, usize),
    scratch: &mut TopKScratch,
) -> Result<(), GpuError> {
    if !top_k_split() {
        return top_k(gpu, "top_k_logprobs", idx, logp, x, (rows, n, k));
    }
    need(
        top_k_fits(idx, logp, x, (rows, n, k))
            && rows <= scratch.rows
            && n == scratch.n
            && k <= scratch.k,
        || format!("top_k_logprobs: k = {k} must be in 1..=32 and fit the outputs and the scratch"),
    )?;
    let splits = n.div_ceil(TOP_K_CHUNK);
    let args = [
        RawArg::slice(gpu, &scratch.cand_val),
        RawArg::slice(gpu, &scratch.cand_idx),
        RawArg::slice(gpu, &scratch.stats),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
        RawArg::I32(TOP_K_CHUNK as i32),
        RawArg::I32(k as i32),
    ];
    let grid = cfg((rows as u32, splits as u32), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above (the
    // scratch holds rows x splits slots of k candidates).
    unsafe { launch(gpu, &name::<T>("top_k_logprobs_partial"), grid, &args) }?;
    let args = [
        RawArg::slice(gpu, idx),
        RawArg::slice(gpu, logp),
        RawArg::slice(gpu, &scratch.cand_val),
        RawArg::slice(gpu, &scratch.cand_idx),
        RawArg::slice(gpu, &scratch.stats),
        RawArg::I32(splits as i32),
        RawArg::I32(k as i32),
    ];
    // SAFETY: as above.
    unsafe {
        launch(
            gpu,
            "top_k_logprobs_final",
            cfg((rows as u32, 1), 32, 0),
            &args,
        )
    }
}

/// The top-k kernel `kernel` (`top_k_rows` or `top_k_logprobs`: the same
/// parameters, the same selection) over `rows` rows of `n`: indices into
/// `idx`, values (or log-probabilities) into `val`.
fn top_k<T: GpuElement>(
    gpu: &Gpu,
    kernel: &str,
    idx: &CudaSlice<i32>,
    val: &CudaSlice<f32>,
    x: &CudaSlice<T>,
    (rows, n, k): (usize, usize, usize),
) -> Result<(), GpuError> {
    need(top_k_fits(idx, val, x, (rows, n, k)), || {
        format!("{kernel}: k = {k} must be in 1..=32 and fit the outputs")
    })?;
    let args = [
        RawArg::slice(gpu, idx),
        RawArg::slice(gpu, val),
        RawArg::slice(gpu, x),
        RawArg::I32(n as i32),
        RawArg::I32(k as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe {
        launch(
            gpu,
            &name::<T>(kernel),
            cfg((rows as u32, 1), 512, 0),
            &args,
        )
    }
}

/// Whether `k` picks of each of `rows` rows of `n` in `x` are a top-k the
/// kernels make (`1..=32`, at most `n`) and fit `idx` and `val`.
fn top_k_fits<T>(
    idx: &CudaSlice<i32>,
    val: &CudaSlice<f32>,
    x: &CudaSlice<T>,
    (rows, n, k): (usize, usize, usize),
) -> bool {
    (1..=32).contains(&k)
        && k <= n
        && x.len() >= rows * n
        && idx.len() >= rows * k
        && val.len() >= rows * k
}
