//! The latent attention over the compressed cache (`mla_split.cu` in FMA,
//! `mla_mma.cu` on tensor cores): which form a forward takes, the split-K
//! scratch, the launch.

use super::attention::KeyLists;
use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{launch, name, need, RawArg};
use super::mla::MlaShape;
use crate::mla_layout::mla_launch_splits;
use cudarc::driver::{CudaSlice, LaunchConfig};

/// Heads one block of the latent attention covers (`MLA_HEADS` in `mla.cu`)
/// when its launch has more than [`MLA_FEW_BLOCKS`] blocks of one head.
const MLA_HEADS: usize = 4;

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
    static USE: std::sync::OnceLock<MlaMmaUse> = std::sync::OnceLock::new();
    *USE.get_or_init(|| {
        crate::switch::switch(
            "SPECULA_MLA",
            &[("mma", MlaMmaUse::Always), ("fma", MlaMmaUse::Never)],
            MlaMmaUse::Prefill,
            "tensor cores for a prefill",
        )
    })
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

/// Bytes of split partials (outputs and (max, sum)) one latent attention
/// scratch holds at most: a forward whose rows need more (a prefill chunk
/// over thousands of keys: rows x heads x splits x lora floats) runs its
/// rows in launches of as many rows as fit. A row's partials are its own, so
/// the launches give the bits one launch would.
pub const MLA_SCRATCH_BYTES: usize = 1 << 30;

/// Scratch of the split-K latent attention for a batch's key lists:
/// partial outputs and (max, sum) `[launch rows, heads, splits]`, and a
/// counter of finished splits per (row, head group), zero between launches.
pub struct MlaScratch {
    part_out: CudaSlice<f32>,
    part_ml: CudaSlice<f32>,
    counters: CudaSlice<i32>,
    splits: usize,
    /// Rows one launch covers (the scratch's rows).
    launch_rows: usize,
    heads_per_block: Option<usize>,
}

impl MlaScratch {
    /// Scratch for `keys` (rows and the longest key list) and `shape`, at
    /// most [`MLA_SCRATCH_BYTES`] of partials.
    pub fn new<T: GpuElement>(
        gpu: &Gpu,
        keys: &KeyLists,
        shape: MlaShape,
    ) -> Result<MlaScratch, GpuError> {
        Self::with_budget::<T>(gpu, keys, shape, MLA_SCRATCH_BYTES)
    }

    /// [`MlaScratch::new`] with `bytes` of partials at most (at least one
    /// row's); checks use small budgets to run a batch in several launches.
    pub fn with_budget<T: GpuElement>(
        gpu: &Gpu,
        keys: &KeyLists,
        shape: MlaShape,
        bytes: usize,
    ) -> Result<MlaScratch, GpuError> {
        let rows = keys.base.len();
        // Room for either form's splits (the tensor-core form's are more).
        let mma = mla_mma_fits::<T>(gpu, shape) && mla_mma_use() != MlaMmaUse::Never;
        let splits = mla_launch_splits(keys.max_keys, mla_chunk::<T>(), mma);
        let row_bytes = shape.heads * splits * (shape.lora + 2) * 4;
        let launch_rows = rows.min((bytes / row_bytes).max(1)).max(1);
        let slots = launch_rows * shape.heads * splits;
        let s = &gpu.stream;
        Ok(MlaScratch {
            part_out: s.alloc_zeros(slots * shape.lora)?,
            part_ml: s.alloc_zeros(2 * slots)?,
            counters: s.alloc_zeros(launch_rows * shape.heads)?,
            splits,
            launch_rows,
            heads_per_block: None,
        })
    }

    /// Heads per block of the launches on this scratch: 1 or `MLA_HEADS`
    /// (4) forced in FMA, [`MLA_MMA_HEADS`] (16) on tensor cores (where
    /// [`mla_mma_fits`]), or `None` for the launch's own choice
    /// ([`mla_uses_mma`], `MLA_FEW_BLOCKS`).
    /// For checks: 1 and 4 give the same bits; the tensor-core form its own.
    pub fn set_heads_per_block(&mut self, heads: Option<usize>) -> Result<(), GpuError> {
        need(
            heads.is_none_or(|h| h == 1 || h == MLA_HEADS || h == MLA_MMA_HEADS),
            || {
                format!(
                    "mla_attention: {heads:?} heads per block (1, {MLA_HEADS} or {MLA_MMA_HEADS})"
                )
            },
        )?;
        self.heads_per_block = heads;
        Ok(())
    }
}

/// Latent attention: `out[r, h] = sum_e softmax_e(qcat[r, h] . entry_e *
/// scale) * latent_e` (`out: [rows, heads, lora]`) over each row's key list
/// in the layer's pool (`[entries, lora + rope]`, starting `pool_offset`
/// elements in).
#[allow(clippy::too_many_arguments)]
pub fn mla_attention<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    qcat: &CudaSlice<T>,
    pool: &CudaSlice<T>,
    pool_offset: usize,
    keys: &KeyLists,
    scratch: &mut MlaScratch,
    shape: MlaShape,
    scale: f32,
) -> Result<(), GpuError> {
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
    for row0 in (0..rows).step_by(lr.max(1)) {
        let n = lr.min(rows - row0);
        let per_block = scratch
            .heads_per_block
            .unwrap_or(if mla_uses_mma::<T>(gpu, shape, keys) {
                MLA_MMA_HEADS
            } else if n * shape.heads * fma_splits <= MLA_FEW_BLOCKS {
                1
            } else {
                MLA_HEADS
            });
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
        let args = [
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
        let kernel = match per_block {
            1 => name::<T>("mla_attention_h1"),
            MLA_MMA_HEADS => "mla_attention_mma_bf16".to_string(),
            _ => name::<T>("mla_attention"),
        };
        // SAFETY: the kernel's parameters in order; sizes checked above
        // (the tensor-core form's shape by mla_mma_fits).
        unsafe { launch(gpu, &kernel, grid, &args) }?;
    }
    Ok(())
}
