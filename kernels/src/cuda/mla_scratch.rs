//! The split-K latent attention's scratch: partial outputs, (max, sum) and
//! merge counters for a batch's key lists.

use super::attention::KeyLists;
use super::device::{Gpu, GpuElement, GpuError};
use super::launch::need;
use super::mla::MlaShape;
use super::mla_attention::{
    mla_chunk, mla_mma_fits, mla_mma_rule, mla_mma_splits, MLA_HEADS, MLA_MMA_HEADS,
};
use crate::mla_layout::{MlaSplits, MLA_MMA_MAX_SPLITS};
use cudarc::driver::CudaSlice;

/// Bytes of split partials (outputs and (max, sum)) one latent attention
/// scratch holds at most: a forward whose rows need more (a prefill chunk
/// over thousands of keys: rows x heads x splits x lora floats) runs its
/// rows in launches of as many rows as fit. A row's partials are its own, so
/// the launches give the bits one launch would.
pub const MLA_SCRATCH_BYTES: usize = 1 << 30;

/// Scratch of the split-K latent attention for a batch's key lists:
/// partial outputs and (max, sum) `[launch rows, heads, splits]` for either
/// form's launches (each strides its slots by its own split count), and a
/// counter of finished splits per (row, head group), zero between launches.
pub struct MlaScratch {
    pub(super) part_out: CudaSlice<f32>,
    pub(super) part_ml: CudaSlice<f32>,
    pub(super) counters: CudaSlice<i32>,
    /// Partial slots, (row, head, split) triples.
    slots: usize,
    /// Rows of the key lists it was made for.
    rows: usize,
    /// Bytes of partials a launch may use (at least one row's).
    bytes: usize,
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
    /// by `rule` where given (else by [`mla_mma_rule`]); for checks that
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
        // Slots for the FMA launches and, where the shape fits, the
        // tensor-core ones of either kind of forward (the key lists'
        // buffers take causal and tree rows alike).
        let chunk = mla_chunk::<T>();
        let mut splits = vec![MlaSplits::FMA.launch(keys.max_keys, chunk)];
        if mla_mma_fits::<T>(gpu, shape) {
            let tree = rule.unwrap_or_else(mla_mma_splits);
            splits.push(tree.launch(keys.max_keys, chunk));
        }
        let (rows, heads, lora) = (keys.base.len(), shape.heads, shape.lora);
        let (slots, most_rows) = splits.iter().fold((0, 0), |(slots, most), &s| {
            let lr = rows_within(rows, bytes, heads, lora, s);
            (slots.max(lr * heads * s), most.max(lr))
        });
        let st = &gpu.stream;
        Ok(MlaScratch {
            part_out: st.alloc_zeros(slots * lora)?,
            part_ml: st.alloc_zeros(2 * slots)?,
            counters: st.alloc_zeros(most_rows * heads)?,
            slots,
            rows,
            bytes,
            heads_per_block: None,
            mma_from: None,
            mma_splits: rule,
        })
    }

    /// Rows one launch of `splits` splits a row takes on this scratch: as
    /// many as the byte budget holds (at least one), at most the key lists'.
    pub(super) fn launch_rows(&self, heads: usize, lora: usize, splits: usize) -> usize {
        rows_within(self.rows, self.bytes, heads, lora, splits)
    }

    /// Whether a launch of `rows` rows, `heads` heads and `splits` splits a
    /// row fits the scratch's slots and counters.
    pub(super) fn holds(&self, rows: usize, heads: usize, splits: usize) -> bool {
        rows * heads * splits <= self.slots && rows * heads <= self.counters.len()
    }

    /// The tensor-core form's split rule on this scratch for `keys` (those
    /// it was made for).
    pub(super) fn mma_rule(&self, keys: &KeyLists) -> MlaSplits {
        self.mma_splits.unwrap_or_else(|| mla_mma_rule(keys))
    }

    /// Heads per block of the launches on this scratch: 1 or `MLA_HEADS`
    /// (4) forced in FMA, [`MLA_MMA_HEADS`] (16) on tensor cores (where
    /// [`mla_mma_fits`]), or `None` for the launch's own choice
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

/// Rows of `rows` whose partials (`heads x splits` slots of `lora + 2`
/// floats a row) fit `bytes`: at least one.
fn rows_within(rows: usize, bytes: usize, heads: usize, lora: usize, splits: usize) -> usize {
    let row_bytes = heads * splits * (lora + 2) * 4;
    rows.min(bytes / row_bytes).max(1)
}
