//! The latent attention over the compressed cache (`mla_split.cu` in FMA,
//! `mla_mma.cu` on tensor cores): which form a forward takes, the split-K
//! scratch, the launch.

use super::attention::KeyLists;
use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{launch, launch_cluster_z, name, need, RawArg};
use super::mla::{mla_head_linear, HeadProduct, HeadStrides, MlaShape};
use super::mla_forms::{
    merges_in_clusters, uv_fits_merge, MlaAttentionForms, MlaMerge, MlaUvPlace,
};
use super::mla_scratch::MlaScratch;
use crate::mla_layout::mla_launch_splits;
use crate::switch::Switch;
use cudarc::driver::{CudaSlice, LaunchConfig};

/// Heads one block of the latent attention covers (`MLA_HEADS` in `mla.cu`)
/// when its launch has more than [`MLA_FEW_BLOCKS`] blocks of one head.
pub(super) const MLA_HEADS: usize = 4;

/// Blocks of one head each up to which a latent attention launch gives
/// every block one head (`mla_attention_h1`): a decode or short verify
/// forward then spreads over more of the GPU, each block with a quarter of
/// the work. Past it, four heads share each block's copy of the keys. A
/// head's sums are the same either way, so the choice may follow the rows.
const MLA_FEW_BLOCKS: usize = 1024;

/// Query heads one block of the tensor-core latent attention covers (the
/// 16 rows of mma.m16n8k16; `mla_mma.cu`).
pub const MLA_MMA_HEADS: usize = 16;

/// Where the tensor-core latent attention runs (`SPECULA_MLA`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MlaMmaUse {
    /// Forwards of causal rows only (prefill chunks; the default): decode
    /// and verification rows keep the FMA kernel, whose split-K form is
    /// faster for the few blocks of a small batch, so that a sequence's
    /// decode and verify rows always share one kernel's bits.
    Prefill,
    /// Every forward it fits (`SPECULA_MLA=mma`).
    Always,
    /// None (`SPECULA_MLA=fma`).
    Never,
}

fn mla_mma_use() -> MlaMmaUse {
    static USE: Switch<MlaMmaUse> = Switch::new(
        "SPECULA_MLA",
        &[("mma", MlaMmaUse::Always), ("fma", MlaMmaUse::Never)],
        MlaMmaUse::Prefill,
        "tensor cores for a prefill",
    );
    USE.get()
}

/// Heads a block of the FMA latent attention covers, where set
/// (`SPECULA_MLA_HEADS`: 1 or 4; unset: one while the launch has at most
/// 1024 one-head blocks, else four); read once. A head's sums are the same
/// either way (check rows `mla_batch_invariant`: four heads a block against
/// one, 0 differing values), so every choice keeps the lossless invariant.
/// For measuring long rows, whose one-head blocks each read the whole cache
/// for their head alone.
pub fn mla_heads_per_block() -> Option<usize> {
    static HEADS: Switch<Option<usize>> = Switch::new(
        "SPECULA_MLA_HEADS",
        &[("1", Some(1)), ("4", Some(MLA_HEADS))],
        None,
        "one head a block up to 1024 such blocks, else four",
    );
    HEADS.get()
}

/// Whether a latent attention of `shape` in `T` over `keys` runs on tensor
/// cores (`mla_attention_mma_bf16`): where the shape fits
/// ([`mla_mma_fits`]) and, by default, only for a forward of causal rows
/// (see `MlaMmaUse`). Its bits differ from the FMA kernel's in the last
/// places (p is rounded to bf16 for the output product); each form is
/// batch-invariant on its own, and a forward's rows all take one form.
pub fn mla_uses_mma<T: GpuElement>(gpu: &Gpu, shape: MlaShape, keys: &KeyLists) -> bool {
    mla_mma_fits::<T>(gpu, shape)
        && match mla_mma_use() {
            MlaMmaUse::Always => true,
            MlaMmaUse::Never => false,
            MlaMmaUse::Prefill => !keys.has_tree,
        }
}

/// Whether `shape` in `T` can take the tensor-core latent attention: bf16
/// on sm_80+, heads a multiple of 16, an entry of at most 768 values in
/// 32-wide chunks, a latent of 64-column warp slices.
pub fn mla_mma_fits<T: GpuElement>(gpu: &Gpu, shape: MlaShape) -> bool {
    let d = shape.entry();
    T::SUFFIX == "bf16"
        && gpu.arch[3..].parse::<u32>().is_ok_and(|sm| sm >= 80)
        && shape.heads.is_multiple_of(MLA_MMA_HEADS)
        && d.is_multiple_of(32)
        && d <= 768
        && shape.lora.is_multiple_of(64)
}

/// Whether a forward of `shape` in `T` may take the tensor-core form (it
/// fits and `SPECULA_MLA` is not `fma`): a scratch makes room for its splits.
pub(super) fn mla_mma_may_run<T: GpuElement>(gpu: &Gpu, shape: MlaShape) -> bool {
    mla_mma_fits::<T>(gpu, shape) && mla_mma_use() != MlaMmaUse::Never
}

/// Dynamic shared memory of the tensor-core latent attention for `splits`
/// splits: the chunk's keys and the 16 query rows (8 values of padding
/// each), two parities of scores, p in bf16; the merge's per-split weights.
fn mla_mma_smem(shape: MlaShape, splits: usize) -> usize {
    let (keys, dp) = (32, shape.entry() + 8);
    let stage = (keys + MLA_MMA_HEADS) * dp * 2
        + 2 * MLA_MMA_HEADS * keys * 4
        + MLA_MMA_HEADS * (keys + 8) * 2;
    stage.max(MLA_MMA_HEADS * (splits + 1) * 4)
}

/// Keys one block of the latent attention covers: 16-byte-per-key slices
/// of shared memory, so 32 for bf16 and 16 for f32 (a function of the
/// element type alone: a row's splits never depend on the batch).
pub fn mla_chunk<T: GpuElement>() -> usize {
    64 / T::BYTES
}

/// The latent attention's inputs: the rows' `[q_lat | q_pe]` (`qcat: [rows,
/// heads, lora + rope]`), the layer's pool (`[entries, lora + rope]`,
/// starting `pool_offset` elements in) and each row's key list.
struct MlaAttentionInput<'a, T> {
    qcat: &'a CudaSlice<T>,
    pool: &'a CudaSlice<T>,
    pool_offset: usize,
    keys: &'a KeyLists,
    shape: MlaShape,
    scale: f32,
}

/// Latent attention, `olat[r, h] = sum_e softmax_e(qcat[r, h] . entry_e *
/// scale) * latent_e` (`olat: [rows, heads, lora]`) over each row's key
/// list in the layer's pool (`[entries, lora + rope]`, starting
/// `pool_offset` elements in), then `W_UV` (`w_uv: [heads, v_dim, lora]`) of
/// it into `heads_out: [rows, heads, v_dim]`: in the attention's merging
/// blocks when `forms.uv` says so and the launch takes one head a block,
/// else as [`mla_head_linear`] after it with `forms.dots` outputs a warp; the
/// splits merged as `forms.merge` says where the launch allows (the same
/// bits every way). Whether the merge ran `W_UV`.
#[allow(clippy::too_many_arguments)]
pub fn mla_attention_uv<T: GpuElement>(
    gpu: &Gpu,
    olat: &mut CudaSlice<T>,
    heads_out: &mut CudaSlice<T>,
    w_uv: &CudaSlice<T>,
    qcat: &CudaSlice<T>,
    pool: &CudaSlice<T>,
    pool_offset: usize,
    keys: &KeyLists,
    scratch: &mut MlaScratch,
    shape: MlaShape,
    scale: f32,
    forms: MlaAttentionForms,
) -> Result<bool, GpuError> {
    let (rows, nh, lora, v) = (keys.base.len(), shape.heads, shape.lora, shape.v_dim);
    let input = MlaAttentionInput {
        qcat,
        pool,
        pool_offset,
        keys,
        shape,
        scale,
    };
    let uv = (forms.uv == MlaUvPlace::InMerge).then_some(MlaUvOut {
        w: w_uv,
        y: &mut *heads_out,
    });
    let merged = attention_launches(gpu, olat, &input, scratch, uv, forms.merge)?;
    if !merged {
        let product = HeadProduct {
            rows,
            heads: nh,
            n: v,
            k: lora,
        };
        let (ys, xs) = (
            HeadStrides {
                row: nh * v,
                head: v,
            },
            HeadStrides {
                row: nh * lora,
                head: lora,
            },
        );
        mla_head_linear(gpu, heads_out, ys, olat, xs, w_uv, product, forms.dots)?;
    }
    Ok(merged)
}

/// `W_UV` for the merging blocks: its weights and output rows.
struct MlaUvOut<'a, T> {
    w: &'a CudaSlice<T>,
    y: &'a mut CudaSlice<T>,
}

/// The latent attention's launches (rows in groups the scratch holds), with
/// `W_UV` in the merge when `uv` is given and the rows fit one launch of
/// one head a block with whole 16-byte slices of latent (as
/// `mla_head_linear` reads them); whether it ran there. Each launch's
/// splits merge as `merge` says where it allows ([`merges_in_clusters`]).
fn attention_launches<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    input: &MlaAttentionInput<'_, T>,
    scratch: &mut MlaScratch,
    uv: Option<MlaUvOut<'_, T>>,
    merge: MlaMerge,
) -> Result<bool, GpuError> {
    let MlaAttentionInput {
        qcat,
        pool,
        pool_offset,
        keys,
        shape,
        scale,
    } = *input;
    let rows = keys.base.len();
    let d = shape.entry();
    let chunk = mla_chunk::<T>();
    need(
        qcat.len() >= rows * shape.heads * d && out.len() >= rows * shape.heads * shape.lora,
        || "mla_attention: q/out sizes disagree".into(),
    )?;
    let lr = scratch.launch_rows;
    need(
        scratch.part_ml.len() >= 2 * lr * shape.heads * scratch.splits
            && scratch.part_out.len() >= lr * shape.heads * scratch.splits * shape.lora
            && scratch.counters.len() >= lr * shape.heads,
        || "mla_attention: scratch made for other key lists".into(),
    )?;
    let fma_splits = mla_launch_splits(keys.max_keys, chunk, false);
    let per_block_for = |n: usize| {
        scratch
            .heads_per_block
            .unwrap_or(if mla_uses_mma::<T>(gpu, shape, keys) {
                MLA_MMA_HEADS
            } else if let Some(heads) = mla_heads_per_block() {
                heads
            } else if n * shape.heads * fma_splits <= MLA_FEW_BLOCKS {
                1
            } else {
                MLA_HEADS
            })
    };
    let uv = uv.filter(|_| uv_fits_merge(rows, lr, per_block_for(rows), shape.lora, T::BYTES));
    if let Some(uv) = &uv {
        let (nh, v) = (shape.heads, shape.v_dim);
        need(
            uv.w.len() == nh * v * shape.lora && uv.y.len() >= rows * nh * v,
            || {
                format!(
                    "mla_attention: W_UV of {} values or its output of {} for {rows} rows \
                     of {nh} heads x {v}",
                    uv.w.len(),
                    uv.y.len()
                )
            },
        )?;
    }
    for row0 in (0..rows).step_by(lr.max(1)) {
        let n = lr.min(rows - row0);
        let per_block = per_block_for(n);
        let mma = per_block == MLA_MMA_HEADS;
        let splits = mla_launch_splits(keys.max_keys, chunk, mma);
        need(splits <= scratch.splits, || {
            format!(
                "mla_attention: scratch of {} splits for {splits} (key lists of {} keys)",
                scratch.splits, keys.max_keys
            )
        })?;
        need(!mma || mla_mma_fits::<T>(gpu, shape), || {
            format!(
                "mla_attention: no tensor-core form for {shape:?} in {}",
                T::SUFFIX
            )
        })?;
        let groups = shape.heads.div_ceil(per_block);
        // Query heads, scores and the chunk's entries; the merge reuses it for
        // its per-split weights.
        let smem = if mma {
            mla_mma_smem(shape, splits)
        } else {
            (per_block * (d + chunk + shape.lora) * 4 + chunk * d * T::BYTES)
                .max(MLA_HEADS * (splits + 1) * 4)
        };
        need(smem <= 227 * 1024 && pool_offset < pool.len(), || {
            format!("mla_attention: an entry of {d} values ({splits} splits) does not fit the kernel's shared memory")
        })?;
        let mut args = vec![
            RawArg::slice(gpu, out),
            RawArg::slice(gpu, &scratch.part_out),
            RawArg::slice(gpu, &scratch.part_ml),
            RawArg::slice(gpu, &scratch.counters),
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
            RawArg::I32(chunk as i32),
            RawArg::I64(pool_offset as i64),
            RawArg::I32(row0 as i32),
        ];
        let grid = LaunchConfig {
            grid_dim: (n as u32, groups as u32, splits as u32),
            block_dim: (256, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        if let Some(uv) = &uv {
            args.extend([
                RawArg::slice(gpu, uv.w),
                RawArg::slice(gpu, &*uv.y),
                RawArg::I32(shape.v_dim as i32),
                RawArg::I32((shape.heads * shape.v_dim) as i32),
            ]);
        }
        let cluster = merges_in_clusters(merge, n, per_block, splits);
        let kernel = match per_block {
            1 if cluster && uv.is_some() => name::<T>("mla_attention_h1c_uv"),
            1 if cluster => name::<T>("mla_attention_h1c"),
            1 if uv.is_some() => name::<T>("mla_attention_h1_uv"),
            1 => name::<T>("mla_attention_h1"),
            MLA_MMA_HEADS => "mla_attention_mma_bf16".to_string(),
            _ => name::<T>("mla_attention"),
        };
        // SAFETY: the kernel's parameters in order; sizes checked above
        // (the tensor-core form's shape by mla_mma_fits); a cluster is one
        // (row, head)'s splits, the whole of the grid's z.
        unsafe {
            if cluster {
                launch_cluster_z(gpu, &kernel, grid, splits as u32, &args)
            } else {
                launch(gpu, &kernel, grid, &args)
            }
        }?;
    }
    Ok(uv.is_some())
}
