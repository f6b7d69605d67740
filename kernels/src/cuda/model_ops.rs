//! Launch wrappers of the kernels the GPU model forward adds: the
//! batch-invariant small-row linear, the fused q/k/v RoPE + KV append, the
//! fused gate|up SiLU, column copies, device-side random fills and a split
//! argmax.

use super::device::{Gpu, GpuElement, GpuError, SmallRowLinear};
use super::ops::{cfg, name, need, THREADS};
use super::pdl::{launch_raw, RawArg};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::{CudaSlice, PushKernelArg};

/// Rows up to which [`linear_auto`] uses the batch-invariant [`linear_rows`]
/// instead of cuBLAS (decode and tree verification stay bit-identical across
/// batch shapes; long prefills get cuBLAS).
pub const INVARIANT_MAX_ROWS: usize = 64;

/// Column tiles x k slices below which [`mma_k_parts`] splits k further.
const MMA_TARGET_WARPS: usize = 768;

/// Whether [`linear_rows`] runs a `[n, k]` weight on tensor cores (bf16,
/// k a multiple of 32, the GPU's [`SmallRowLinear`] is `Mma`) rather than
/// the FMA kernel.
pub fn uses_mma<T: GpuElement>(gpu: &Gpu, k: usize) -> bool {
    gpu.small_row_linear == SmallRowLinear::Mma && T::SUFFIX == "bf16" && k.is_multiple_of(32)
}

/// How many slices of k the tensor-core [`linear_rows`] sums separately for a
/// `[n, k]` weight: enough warps in flight for a narrow projection, each
/// slice at least 256 wide. A function of the shape alone, never of the
/// rows, so a row's reduction order is the same in every batch.
pub fn mma_k_parts(k: usize, n: usize) -> usize {
    let tiles = n.div_ceil(16);
    let mut parts = 1;
    while parts < 8
        && tiles * parts < MMA_TARGET_WARPS
        && k.is_multiple_of(64 * parts)
        && k / (2 * parts) >= 256
    {
        parts *= 2;
    }
    parts
}

/// How one tensor-core linear launch is laid out. Only `parts` changes the
/// arithmetic (it must come from the shape alone: [`mma_k_parts`]); the
/// rest trades occupancy against bytes in flight and may follow the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmaLaunch {
    /// Slices of k summed separately (1, 2, 4 or 8).
    pub parts: usize,
    /// 32-wide chunks of k whose weight loads are in flight together (4 or 8).
    pub chunks: usize,
    /// 16-column tiles per block (`groups x parts` warps, at most 8).
    pub groups: usize,
}

impl MmaLaunch {
    /// The layout [`linear_rows`] uses for `m` rows of a `[n, k]` weight.
    pub fn for_shape(m: usize, k: usize, n: usize) -> MmaLaunch {
        let parts = mma_k_parts(k, n);
        // Measured on an H200 for every Llama-3.1-8B projection and its
        // draft's (specula-gpu-check's linear_split.csv): one tile per block
        // with eight chunks in flight is best or within 3% of best up to 32
        // rows; beyond, the token tiles' accumulators crowd the registers and
        // four chunks in blocks of eight warps win.
        if m <= 32 {
            MmaLaunch {
                parts,
                chunks: 8,
                groups: 1,
            }
        } else {
            MmaLaunch {
                parts,
                chunks: 4,
                groups: 8 / parts,
            }
        }
    }
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
    } = launch;
    let width = if silu { n / 2 } else { n };
    need(
        T::SUFFIX == "bf16"
            && matches!(parts, 1 | 2 | 4 | 8)
            && matches!(chunks, 4 | 8)
            && groups >= 1
            && groups * parts <= 8
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
    let f = gpu.function(&format!("linear_mma_ku{chunks}_bf16"))?;
    let flags = i32::from(silu);
    let args = [
        RawArg::slice(gpu, y),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        bias.map_or(RawArg::Ptr(0), |b| RawArg::slice(gpu, b)),
        RawArg::I32(m as i32),
        RawArg::I32(k as i32),
        RawArg::I32(n as i32),
        RawArg::I32(parts as i32),
        RawArg::I32(groups as i32),
        RawArg::I32(flags),
    ];
    let token_tiles = m.div_ceil(8).min(8);
    let smem = if parts > 1 {
        groups * parts * token_tiles * 4 * 32 * 4
    } else {
        0
    };
    let blocks = n.div_ceil(16 * groups) as u32;
    let cfg = cfg((blocks, 1), (32 * groups * parts) as u32, smem as u32);
    // SAFETY: ten parameters in the kernel's order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg, &args) }
}

fn grid_for(n: usize) -> u32 {
    n.div_ceil(THREADS as usize).clamp(1, 65_535) as u32
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
    let f = gpu.function(&name::<T>(&format!("linear_rows_c{c}")))?;
    let args = [
        RawArg::slice(gpu, y),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        bias.map_or(RawArg::Ptr(0), |b| RawArg::slice(gpu, b)),
        RawArg::I32(m as i32),
        RawArg::I32(k as i32),
        RawArg::I32(n as i32),
    ];
    let cols_per_block = c * THREADS as usize / 32;
    let cfg = cfg((n.div_ceil(cols_per_block) as u32, 1), THREADS, 0);
    // SAFETY: seven parameters in the kernel's order; sizes checked above.
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
    let (off, h, kvh, d) = (
        pool_offset as i64,
        l.heads as i32,
        l.kv_heads as i32,
        l.head_dim as i32,
    );
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(q_out).arg(k_pool).arg(v_pool).arg(qkv);
    b.arg(positions).arg(inv_freq).arg(entry).arg(&off);
    b.arg(&h).arg(&kvh).arg(&d);
    let null: u64 = 0;
    let eps = head_norm.map_or(0.0f32, |n| n.eps);
    match head_norm {
        Some(n) => b.arg(n.q).arg(n.k),
        None => b.arg(&null).arg(&null),
    };
    b.arg(&eps);
    let blocks = (rows as u32, (l.heads + l.kv_heads + 1) as u32);
    unsafe { b.launch(cfg(blocks, 64, 0)) }?;
    Ok(())
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
    let (r, i) = (rows as i64, inner as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(out).arg(gu).arg(&r).arg(&i);
    unsafe { b.launch(cfg((grid_for(rows * inner), 1), THREADS, 0)) }?;
    Ok(())
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
    let (ww, dw, off) = (w as i32, dst_w as i32, offset as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(dst).arg(src).arg(&ww).arg(&dw).arg(&off);
    unsafe { b.launch(cfg((rows as u32, 1), THREADS, 0)) }?;
    Ok(())
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
    let (nn, chunk) = (n as i32, ARGMAX_CHUNK as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&mut scratch.vals)
        .arg(&mut scratch.idxs)
        .arg(x)
        .arg(&nn)
        .arg(&chunk);
    unsafe { b.launch(cfg((rows as u32, scratch.splits as u32), THREADS, 0)) }?;
    let f = gpu.function("argmax_final")?;
    let splits = scratch.splits as i32;
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(out)
        .arg(&scratch.vals)
        .arg(&scratch.idxs)
        .arg(&splits);
    unsafe { b.launch(cfg((rows as u32, 1), 32, 0)) }?;
    Ok(())
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
    let (nn, kk) = (n as i32, k as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(idx).arg(logp).arg(x).arg(&nn).arg(&kk);
    unsafe { b.launch(cfg((rows as u32, 1), 512, 0)) }?;
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
    let f = gpu.function(&name::<T>(&format!("linear_rows_silu_c{c}")))?;
    let args = [
        RawArg::slice(gpu, act),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        RawArg::Ptr(0),
        RawArg::I32(m as i32),
        RawArg::I32(k as i32),
        RawArg::I32(n as i32),
    ];
    let cols_per_block = c * THREADS as usize / 32;
    let cfg = cfg((n.div_ceil(cols_per_block) as u32, 1), THREADS, 0);
    // SAFETY: seven parameters in the kernel's order; sizes checked above.
    unsafe { launch_raw(gpu, &f, cfg, &args) }
}
