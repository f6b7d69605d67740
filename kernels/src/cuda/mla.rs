//! Launches of the latent attention (`mla.cu`) in the absorbed form: the
//! cache-entry and query preparation and the per-head absorbed products
//! (`W_UK^T`, `W_UV`); the attention itself is in `mla_attention.rs`.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, name, need, RawArg, THREADS};
use crate::switch::Switch;
use cudarc::driver::CudaSlice;

/// Widths of one latent-attention layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlaShape {
    /// Query heads.
    pub heads: usize,
    /// Compressed key/value width (`kv_lora_rank`).
    pub lora: usize,
    /// Decoupled RoPE width (`qk_rope_head_dim`).
    pub rope: usize,
    /// Per-head query/key width without position (`qk_nope_head_dim`).
    pub nope: usize,
    /// Per-head value width (`v_head_dim`).
    pub v_dim: usize,
}

impl MlaShape {
    /// Width of one cache entry and of one absorbed query head: `lora + rope`.
    pub fn entry(&self) -> usize {
        self.lora + self.rope
    }
}

/// The decoupled RoPE of a latent-attention layer.
#[derive(Clone, Copy)]
pub struct MlaRope<'a> {
    /// Inverse frequencies, `rope / 2`.
    pub inv_freq: &'a CudaSlice<f32>,
    /// The stored RoPE part is pair-interleaved.
    pub interleave: bool,
    /// YaRN's factor on cos and sin (1 without YaRN).
    pub factor: f32,
}

/// Where a forward's queries and compressed rows come from, and where the
/// cache rows go.
pub struct MlaPrepInputs<'a, T> {
    /// Queries: row `r` at `r * q_stride`, heads of `nope + rope` each.
    pub q: &'a CudaSlice<T>,
    /// Elements between query rows.
    pub q_stride: usize,
    /// Compressed rows `[latent | rope key]`: row `r` at `ckv_offset + r * ckv_stride`.
    pub ckv: &'a CudaSlice<T>,
    /// Element of `ckv` where row 0 starts.
    pub ckv_offset: usize,
    /// Elements between compressed rows.
    pub ckv_stride: usize,
    /// `kv_a_layernorm` weight (`lora`) and its epsilon.
    pub kv_norm: (&'a CudaSlice<T>, f32),
    /// Position of every row.
    pub positions: &'a CudaSlice<i32>,
    /// Pool row of every row's cache entry.
    pub entries: &'a CudaSlice<i32>,
}

/// For every row: the rotated query RoPE parts into `qcat[r, h, lora..]`,
/// and the cache entry `[RMSNorm(latent) * kv_norm | rotated RoPE key]` at
/// pool row `entries[r]` of the layer starting `pool_offset` elements into `pool`.
pub fn mla_prep<T: GpuElement>(
    gpu: &Gpu,
    qcat: &mut CudaSlice<T>,
    pool: &mut CudaSlice<T>,
    pool_offset: usize,
    inputs: &MlaPrepInputs<'_, T>,
    rope: MlaRope<'_>,
    shape: MlaShape,
) -> Result<(), GpuError> {
    let args = prep_args(gpu, qcat, pool, pool_offset, inputs, rope, shape)?;
    let rows = inputs.positions.len();
    let grid = cfg((rows as u32, shape.heads as u32 + 1), PREP_THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked by prep_args.
    unsafe { launch(gpu, &name::<T>("mla_prep"), grid, &args) }
}

/// Threads of an `mla_prep` block (its RMSNorm's reduction is over them).
const PREP_THREADS: u32 = 128;

/// `mla_prep`'s parameters, the sizes checked.
fn prep_args<T: GpuElement>(
    gpu: &Gpu,
    qcat: &CudaSlice<T>,
    pool: &CudaSlice<T>,
    pool_offset: usize,
    inputs: &MlaPrepInputs<'_, T>,
    rope: MlaRope<'_>,
    shape: MlaShape,
) -> Result<Vec<RawArg>, GpuError> {
    let rows = inputs.positions.len();
    let d = shape.entry();
    let qw = shape.heads * (shape.nope + shape.rope);
    need(
        rows == inputs.entries.len()
            && qcat.len() >= rows * shape.heads * d
            && (rows == 0 || inputs.q.len() >= (rows - 1) * inputs.q_stride + qw)
            && (rows == 0
                || inputs.ckv.len() >= inputs.ckv_offset + (rows - 1) * inputs.ckv_stride + d)
            && inputs.kv_norm.0.len() == shape.lora
            && rope.inv_freq.len() == shape.rope / 2
            && shape.rope.is_multiple_of(2)
            && pool_offset < pool.len(),
        || format!("mla_prep: sizes disagree ({shape:?}, {rows} rows)"),
    )?;
    Ok(vec![
        RawArg::slice(gpu, qcat),
        RawArg::slice(gpu, pool),
        RawArg::slice(gpu, inputs.q),
        RawArg::slice(gpu, inputs.ckv),
        RawArg::I64(inputs.ckv_offset as i64),
        RawArg::slice(gpu, inputs.kv_norm.0),
        RawArg::slice(gpu, inputs.positions),
        RawArg::slice(gpu, rope.inv_freq),
        RawArg::slice(gpu, inputs.entries),
        RawArg::I64(pool_offset as i64),
        RawArg::I32(shape.heads as i32),
        RawArg::I32(inputs.q_stride as i32),
        RawArg::I32(inputs.ckv_stride as i32),
        RawArg::I32(shape.nope as i32),
        RawArg::I32(shape.rope as i32),
        RawArg::I32(shape.lora as i32),
        RawArg::I32(i32::from(rope.interleave)),
        RawArg::F32(rope.factor),
        RawArg::F32(inputs.kv_norm.1),
    ])
}

/// `q_lat = W_UK^T q_nope` into `qcat[r, h, ..lora]`: the
/// [`mla_head_linear`] of `w_ukt: [heads, lora, nope]` over each query head's
/// first `nope` values (the queries of `inputs`), `dots` outputs a warp.
pub fn mla_uk<T: GpuElement>(
    gpu: &Gpu,
    qcat: &mut CudaSlice<T>,
    inputs: &MlaPrepInputs<'_, T>,
    shape: MlaShape,
    w_ukt: &CudaSlice<T>,
    dots: usize,
) -> Result<(), GpuError> {
    let (cs, qs) = uk_strides(inputs, shape);
    let product = HeadProduct {
        rows: inputs.positions.len(),
        heads: shape.heads,
        n: shape.lora,
        k: shape.nope,
    };
    mla_head_linear(gpu, qcat, cs, inputs.q, qs, w_ukt, product, dots)
}

/// The strides of [`mla_uk`]'s output (`qcat`: heads of `lora + rope`) and
/// input (the queries: heads of `nope + rope`).
fn uk_strides<T>(inputs: &MlaPrepInputs<'_, T>, shape: MlaShape) -> (HeadStrides, HeadStrides) {
    let d = shape.entry();
    let cs = HeadStrides {
        row: shape.heads * d,
        head: d,
    };
    let qs = HeadStrides {
        row: inputs.q_stride,
        head: shape.nope + shape.rope,
    };
    (cs, qs)
}

/// [`mla_prep`] and [`mla_uk`] in one launch: the same arithmetic as the
/// two launches, which both read only the queries and the compressed rows;
/// `dots` outputs a warp in its product (1 or [`MLA_HEAD_DOTS`], the
/// engine's [`mla_head_dots`]; the same bits).
#[allow(clippy::too_many_arguments)]
pub fn mla_prep_uk<T: GpuElement>(
    gpu: &Gpu,
    qcat: &mut CudaSlice<T>,
    pool: &mut CudaSlice<T>,
    pool_offset: usize,
    inputs: &MlaPrepInputs<'_, T>,
    rope: MlaRope<'_>,
    shape: MlaShape,
    w_ukt: &CudaSlice<T>,
    dots: usize,
) -> Result<(), GpuError> {
    let (rows, nh) = (inputs.positions.len(), shape.heads);
    let (cs, qs) = uk_strides(inputs, shape);
    let mut args = prep_args(gpu, qcat, pool, pool_offset, inputs, rope, shape)?;
    let product = HeadProduct {
        rows,
        heads: nh,
        n: shape.lora,
        k: shape.nope,
    };
    let (product_args, dots) = head_linear_args(gpu, qcat, cs, inputs.q, qs, w_ukt, product, dots)?;
    args.extend(product_args);
    let uk_blocks = (nh * shape.lora.div_ceil(dots)).div_ceil(PREP_THREADS as usize / 32);
    let uk_groups = head_linear_row_groups(rows);
    args.push(RawArg::I32(uk_blocks as i32));
    args.push(RawArg::I32(uk_groups as i32));
    let blocks = uk_blocks * uk_groups + rows * (nh + 1);
    let grid = cfg((blocks as u32, 1), PREP_THREADS, 0);
    // SAFETY: the kernel's parameters in order (mla_prep's, the product's,
    // its grid); sizes checked by the two builders.
    unsafe { launch(gpu, &dots_kernel::<T>("mla_prep_uk", dots), grid, &args) }
}

/// Row and head strides (in elements) of a per-head product's input or output.
#[derive(Debug, Clone, Copy)]
pub struct HeadStrides {
    /// Between rows.
    pub row: usize,
    /// Between heads of a row.
    pub head: usize,
}

/// Outputs of a head one warp of the per-head products sums side by side
/// by default (`MLA_HEAD_DOTS` in `mla.cu`; `SPECULA_MLA_DOTS=1` one): a
/// quarter of the warps, each output summed as alone (the same bits).
pub const MLA_HEAD_DOTS: usize = 4;

/// Outputs a warp of the per-head products sums in this process:
/// [`MLA_HEAD_DOTS`] (the default) or 1 (`SPECULA_MLA_DOTS`, read once).
pub fn mla_head_dots() -> usize {
    static DOTS: Switch<usize> = Switch::new(
        "SPECULA_MLA_DOTS",
        &[("1", 1), ("4", MLA_HEAD_DOTS)],
        MLA_HEAD_DOTS,
        "four outputs a warp",
    );
    DOTS.get()
}

/// The sizes of a per-head product: `rows` rows of `heads` heads, `n`
/// outputs of `k` values each.
#[derive(Debug, Clone, Copy)]
pub struct HeadProduct {
    /// Rows (tokens).
    pub rows: usize,
    /// Heads of a row.
    pub heads: usize,
    /// Outputs of a head.
    pub n: usize,
    /// Values each output sums.
    pub k: usize,
}

/// Per-head products `y[r, h, c] = sum_j w[h, c, j] x[r, h, j]` (`w:
/// [heads, n, k]`), one warp per `(h, c)`, or per `dots` outputs of a head
/// ([`MLA_HEAD_DOTS`]; the engine's choice is [`mla_head_dots`]; one where
/// the rows are not whole 16-byte slices), over every row, each sum in an
/// order fixed by `k` (batch-invariant; the same bits for either `dots`).
#[allow(clippy::too_many_arguments)]
pub fn mla_head_linear<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    ys: HeadStrides,
    x: &CudaSlice<T>,
    xs: HeadStrides,
    w: &CudaSlice<T>,
    p: HeadProduct,
    dots: usize,
) -> Result<(), GpuError> {
    let (args, dots) = head_linear_args(gpu, y, ys, x, xs, w, p, dots)?;
    let warps_per_block = THREADS as usize / 32;
    let blocks = (p.heads * p.n.div_ceil(dots)).div_ceil(warps_per_block) as u32;
    let grid = cfg((blocks, head_linear_row_groups(p.rows) as u32), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked by head_linear_args.
    unsafe { launch(gpu, &dots_kernel::<T>("mla_head_linear", dots), grid, &args) }
}

/// The kernel of a per-head product in `T` with `dots` outputs a warp:
/// `base`, or its `_d4` form.
fn dots_kernel<T: GpuElement>(base: &str, dots: usize) -> String {
    let form = if dots == MLA_HEAD_DOTS { "_d4" } else { "" };
    name::<T>(&format!("{base}{form}"))
}

/// Row groups (grid y) of a per-head product: long forwards split their
/// rows (each block re-reads its weights through L2).
fn head_linear_row_groups(rows: usize) -> usize {
    rows.div_ceil(8).clamp(1, 64)
}

/// `mla_head_linear`'s parameters, the sizes checked, and the outputs a
/// warp sums (`dots`, or one where the rows are not whole 16-byte slices).
#[allow(clippy::too_many_arguments)]
fn head_linear_args<T: GpuElement>(
    gpu: &Gpu,
    y: &CudaSlice<T>,
    ys: HeadStrides,
    x: &CudaSlice<T>,
    xs: HeadStrides,
    w: &CudaSlice<T>,
    p: HeadProduct,
    dots: usize,
) -> Result<(Vec<RawArg>, usize), GpuError> {
    let HeadProduct { rows, heads, n, k } = p;
    let last = |s: HeadStrides, w: usize| (rows.max(1) - 1) * s.row + (heads - 1) * s.head + w;
    need(
        heads > 0
            && w.len() == heads * n * k
            && (rows == 0 || (x.len() >= last(xs, k) && y.len() >= last(ys, n))),
        || format!("mla_head_linear: sizes disagree (rows {rows}, heads {heads}, n {n}, k {k})"),
    )?;
    need(dots == 1 || dots == MLA_HEAD_DOTS, || {
        format!("mla_head_linear: {dots} outputs a warp (1 or {MLA_HEAD_DOTS})")
    })?;
    let vec_elems = 16 / T::BYTES;
    let vec = [k, xs.row, xs.head]
        .iter()
        .all(|v| v.is_multiple_of(vec_elems));
    let dots = if vec { dots } else { 1 };
    let args = vec![
        RawArg::slice(gpu, y),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        RawArg::I32(rows as i32),
        RawArg::I32(heads as i32),
        RawArg::I32(n as i32),
        RawArg::I32(k as i32),
        RawArg::I32(xs.row as i32),
        RawArg::I32(xs.head as i32),
        RawArg::I32(ys.row as i32),
        RawArg::I32(ys.head as i32),
        RawArg::I32(i32::from(vec)),
    ];
    Ok((args, dots))
}
