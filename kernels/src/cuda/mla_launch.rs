//! One launch of the latent attention: a group of rows in one form (FMA
//! with one or four heads a block, or tensor cores with sixteen), the rows
//! of the other form leaving at once (`mla_attention.rs` picks the forms);
//! the tensor-core form's splits merge in a launch of their own, a block a
//! (row, head, 64 latent columns).

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{launch, launch_cluster_z, name, need, RawArg};
use super::mla::MlaShape;
use super::mla_attention::{
    mla_chunk, mla_mma_pairs, MlaAttentionInput, MlaUvOut, MLA_HEADS, MLA_MMA_HEADS,
};
use super::mla_forms::{merges_in_clusters, MlaMerge};
use super::mla_scratch::MlaScratch;
use crate::mla_layout::MlaSplits;
use cudarc::driver::{CudaSlice, LaunchConfig};

/// The rows one launch covers and its form.
pub(super) struct RowsLaunch {
    /// First row of the batch (its partials at the scratch's row 0).
    pub(super) row0: usize,
    /// Rows from `row0`.
    pub(super) rows: usize,
    /// Heads a block: 1 or [`MLA_HEADS`] in FMA, [`MLA_MMA_HEADS`] on
    /// tensor cores.
    pub(super) per_block: usize,
    /// How the form splits a row's keys (the tensor-core kernel takes it
    /// as arguments; the FMA kernels' is their own, [`MlaSplits::FMA`]).
    pub(super) rule: MlaSplits,
    /// Splits of the launch (the grid's z): the most its rule gives a row.
    pub(super) splits: usize,
    /// Keys from which a row is the tensor-core launch's (`i32::MAX`: none).
    pub(super) cut: i32,
}

/// Latent columns one block of the tensor-core form's merge takes
/// (`MLA_MERGE_COLS` in `mla_mma.cu`).
const MLA_MERGE_COLS: usize = 64;

/// Dynamic shared memory of the tensor-core latent attention with
/// `rows_a_block` rows a block: the chunk's keys and each row's 16 query
/// rows (8 values of padding each), two parities of scores, p in bf16.
fn mla_mma_smem(shape: MlaShape, rows_a_block: usize) -> usize {
    let (keys, dp) = (32, shape.entry() + 8);
    (keys + rows_a_block * MLA_MMA_HEADS) * dp * 2
        + 2 * MLA_MMA_HEADS * keys * 4
        + MLA_MMA_HEADS * (keys + 8) * 2
}

/// Launches `l` over `input` into `out` (the latent outputs), `W_UV` in the
/// merging blocks when `uv` is given (one head a block only), the splits
/// merged in clusters where `merge` allows it.
pub(super) fn launch_rows<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    input: &MlaAttentionInput<'_, T>,
    scratch: &MlaScratch,
    l: &RowsLaunch,
    uv: Option<&MlaUvOut<'_, T>>,
    merge: MlaMerge,
) -> Result<(), GpuError> {
    let MlaAttentionInput {
        pool,
        pool_offset,
        shape,
        ..
    } = *input;
    let (d, chunk, splits, per_block) = (shape.entry(), mla_chunk::<T>(), l.splits, l.per_block);
    if per_block == MLA_MMA_HEADS {
        return launch_mma(gpu, out, input, scratch, l);
    }
    let groups = shape.heads.div_ceil(per_block);
    // Query heads, scores and the chunk's entries; the merge reuses it for
    // its per-split weights.
    let smem = (per_block * (d + chunk + shape.lora) * 4 + chunk * d * T::BYTES)
        .max(MLA_HEADS * (splits + 1) * 4);
    need(smem <= 227 * 1024 && pool_offset < pool.len(), || {
        format!("mla_attention: an entry of {d} values ({splits} splits) does not fit the kernel's shared memory")
    })?;
    let mut args = vec![
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, &scratch.part_out),
        RawArg::slice(gpu, &scratch.part_ml),
        RawArg::slice(gpu, &scratch.counters),
    ];
    args.extend(input_args(gpu, input, l));
    let grid = LaunchConfig {
        grid_dim: (l.rows as u32, groups as u32, splits as u32),
        block_dim: (256, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    if let Some(uv) = uv {
        args.extend([
            RawArg::slice(gpu, uv.w),
            RawArg::slice(gpu, &*uv.y),
            RawArg::I32(shape.v_dim as i32),
            RawArg::I32((shape.heads * shape.v_dim) as i32),
        ]);
    }
    let cluster = merges_in_clusters(merge, l.rows, per_block, splits);
    let kernel = match per_block {
        1 if cluster && uv.is_some() => name::<T>("mla_attention_h1c_uv"),
        1 if cluster => name::<T>("mla_attention_h1c"),
        1 if uv.is_some() => name::<T>("mla_attention_h1_uv"),
        1 => name::<T>("mla_attention_h1"),
        _ => name::<T>("mla_attention"),
    };
    // SAFETY: the kernel's parameters in order; sizes checked by the caller
    // and above; a cluster is one (row, head)'s splits, the whole of the
    // grid's z.
    unsafe {
        if cluster {
            launch_cluster_z(gpu, &kernel, grid, splits as u32, &args)
        } else {
            launch(gpu, &kernel, grid, &args)
        }
    }
}

/// The tensor-core launch of `l` (its blocks write every split's partials),
/// then the merge of each (row, head) of its rows in blocks of
/// [`MLA_MERGE_COLS`] columns (`mla_merge_heads_bf16`).
fn launch_mma<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    input: &MlaAttentionInput<'_, T>,
    scratch: &MlaScratch,
    l: &RowsLaunch,
) -> Result<(), GpuError> {
    let MlaAttentionInput {
        pool,
        pool_offset,
        keys,
        shape,
        ..
    } = *input;
    // Rows in pairs where the launch has two or more (a verify's rows of one
    // sequence then read their cached prefix once; the same bits a row).
    let pair = mla_mma_pairs() && l.rows >= 2;
    let rows_a_block = if pair { 2 } else { 1 };
    let smem = mla_mma_smem(shape, rows_a_block);
    need(smem <= 227 * 1024 && pool_offset < pool.len(), || {
        format!(
            "mla_attention: an entry of {} values does not fit the tensor-core kernel's shared memory",
            shape.entry()
        )
    })?;
    let (row0, heads) = (l.row0 as i32, shape.heads as i32);
    let mut args = vec![
        RawArg::slice(gpu, &scratch.part_out),
        RawArg::slice(gpu, &scratch.part_ml),
    ];
    args.extend(input_args(gpu, input, l));
    args.extend([
        RawArg::I32(l.rows as i32),
        RawArg::I32(l.rule.cap as i32),
        RawArg::I32(l.rule.min_chunks as i32),
    ]);
    let grid = LaunchConfig {
        grid_dim: (
            l.rows.div_ceil(rows_a_block) as u32,
            (shape.heads / MLA_MMA_HEADS) as u32,
            l.splits as u32,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let kernel = if pair {
        "mla_attention_mma2_bf16"
    } else {
        "mla_attention_mma_bf16"
    };
    // SAFETY: the kernel's parameters in order; the shape checked by the
    // caller (mla_mma_fits), the scratch's sizes and the smem above.
    unsafe { launch(gpu, kernel, grid, &args) }?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, &scratch.part_out),
        RawArg::slice(gpu, &scratch.part_ml),
        RawArg::slice(gpu, &keys.base),
        RawArg::slice(gpu, &keys.prefix),
        RawArg::slice(gpu, &keys.extra_off),
        RawArg::I32(heads),
        RawArg::I32(shape.lora as i32),
        RawArg::I32(l.splits as i32),
        RawArg::I32(row0),
        RawArg::I32(l.cut),
    ];
    let grid = LaunchConfig {
        grid_dim: (
            l.rows as u32,
            shape.heads as u32,
            shape.lora.div_ceil(MLA_MERGE_COLS) as u32,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the merge's parameters in order; the partials are the
    // launch's just written, `out` holds every row's heads (checked by the
    // caller).
    unsafe { launch(gpu, "mla_merge_heads_bf16", grid, &args) }
}

/// The attention kernels' parameters after their outputs: the queries, the
/// pool and the key lists, the shape, the scale, the chunk, and `l`'s first
/// row and cut.
fn input_args<T: GpuElement>(
    gpu: &Gpu,
    input: &MlaAttentionInput<'_, T>,
    l: &RowsLaunch,
) -> Vec<RawArg> {
    let MlaAttentionInput {
        qcat,
        pool,
        pool_offset,
        keys,
        shape,
        scale,
    } = *input;
    vec![
        RawArg::slice(gpu, qcat),
        RawArg::slice(gpu, pool),
        RawArg::slice(gpu, &keys.base),
        RawArg::slice(gpu, &keys.prefix),
        RawArg::slice(gpu, &keys.extra_off),
        RawArg::slice(gpu, &keys.extra),
        RawArg::I32(shape.heads as i32),
        RawArg::I32(shape.lora as i32),
        RawArg::I32(shape.rope as i32),
        RawArg::F32(scale),
        RawArg::I32(mla_chunk::<T>() as i32),
        RawArg::I64(pool_offset as i64),
        RawArg::I32(l.row0 as i32),
        RawArg::I32(l.cut),
    ]
}
