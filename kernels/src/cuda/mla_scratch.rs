//! The split-K latent attention's scratch: partial outputs, (max, sum) and
//! merge counters for a batch's key lists.

use super::attention::KeyLists;
use super::device::{Gpu, GpuElement, GpuError};
use super::launch::need;
use super::mla::MlaShape;
use super::mla_attention::{mla_chunk, mla_mma_fits, mla_mma_splits, MLA_HEADS, MLA_MMA_HEADS};
use crate::mla_layout::{MlaSplits, MLA_MMA_MAX_SPLITS};
use cudarc::driver::CudaSlice;

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
    pub(super) part_out: CudaSlice<f32>,
    pub(super) part_ml: CudaSlice<f32>,
    pub(super) counters: CudaSlice<i32>,
    pub(super) splits: usize,
    /// Rows one launch covers (the scratch's rows).
    pub(super) launch_rows: usize,
    pub(super) heads_per_block: Option<usize>,
    pub(super) mma_from: Option<usize>,
    /// The tensor-core form's split rule, where a check sets it.
    mma_splits: Option<MlaSplits>,
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
        Self::with_rule::<T>(gpu, keys, shape, bytes, None)
    }

    /// [`MlaScratch::with_budget`] whose tensor-core launches split rows
    /// by `rule` where given (else by [`mla_mma_splits`]); for checks that
    /// each rule is batch-invariant and close to the CPU's form.
    pub fn with_rule<T: GpuElement>(
        gpu: &Gpu,
        keys: &KeyLists,
        shape: MlaShape,
        bytes: usize,
        rule: Option<MlaSplits>,
    ) -> Result<MlaScratch, GpuError> {
        if let Some(rule) = rule {
            need(
                (1..=MLA_MMA_MAX_SPLITS).contains(&rule.cap) && rule.min_chunks >= 1,
                || {
                    format!("mla_attention: split rule {rule:?} (1 to {MLA_MMA_MAX_SPLITS} splits of at least one chunk)")
                },
            )?;
        }
        let rows = keys.base.len();
        // Slots for either form's launch (the tensor-core one's where the
        // shape fits: its rule may give more splits).
        let chunk = mla_chunk::<T>();
        let mut splits = MlaSplits::FMA.launch(keys.max_keys, chunk);
        if mla_mma_fits::<T>(gpu, shape) {
            let mma = rule.unwrap_or_else(mla_mma_splits);
            splits = splits.max(mma.launch(keys.max_keys, chunk));
        }
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
            mma_from: None,
            mma_splits: rule,
        })
    }

    /// The tensor-core form's split rule on this scratch.
    pub(super) fn mma_rule(&self) -> MlaSplits {
        self.mma_splits.unwrap_or_else(mla_mma_splits)
    }

    /// Heads per block of the launches on this scratch: 1 or `MLA_HEADS`
    /// (4) forced in FMA, [`MLA_MMA_HEADS`] (16) on tensor cores (where
    /// [`mla_mma_fits`](super::mla_mma_fits)), or `None` for the launch's own choice
    /// ([`mla_mma_from`](super::mla_mma_from), `MLA_FEW_BLOCKS`).
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

    /// The key count from which the rows of the launches on this scratch
    /// take tensor cores, the shorter rows the FMA form (as
    /// [`MlaScratch::set_heads_per_block`] says, else the launch's choice),
    /// or `None` for the forward's own rule
    /// ([`mla_mma_from`](super::mla_mma_from)). For checks that a row's
    /// form and bits follow its own key count.
    pub fn set_mma_from(&mut self, from: Option<usize>) {
        self.mma_from = from;
    }
}
