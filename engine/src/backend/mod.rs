//! The interface between the decode loop and where the models run: the CPU
//! backend (the project's batch-invariant kernels, f32) and, with the `cuda`
//! feature, the GPU backend (the project's CUDA kernels and cuBLAS, bf16 or
//! f32). The decode loop, drafting trees and verification are shared.

mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod null;

use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::{DraftOutput, ForwardBatch, HiddenInput, TargetOutput};

/// Refuses, in one line, a target the CUDA kernels cannot run: latent
/// attention whose cache entry (`kv_lora_rank + qk_rope_head_dim`) is wider
/// than 600 values, or experts beyond the routing kernel's limits (512
/// routed experts, 16 per token, 64 groups). Needs no GPU, so a caller can
/// refuse before opening one; the CUDA target calls it too.
pub fn cuda_supports(c: &TargetConfig) -> Result<()> {
    let refuse = |field: &str, what: String| {
        Err(EngineError::config(
            &c.path,
            field,
            format!("{what}: beyond what the CUDA backend runs (use the CPU backend)"),
        ))
    };
    if let Some(m) = &c.mla {
        let entry = m.kv_lora_rank + m.qk_rope_head_dim;
        if entry > 600 {
            return refuse(
                "kv_lora_rank",
                format!("a latent cache entry of {entry} values (at most 600)"),
            );
        }
    }
    if let Some(m) = &c.moe {
        if m.n_routed_experts > 512 {
            return refuse(
                "n_routed_experts",
                format!("{} routed experts (at most 512)", m.n_routed_experts),
            );
        }
        if m.top_k > 16 {
            return refuse(
                "num_experts_per_tok",
                format!("{} experts per token (at most 16)", m.top_k),
            );
        }
        if m.grouping.is_some_and(|g| g.n_group > 64) {
            return refuse("n_group", "more than 64 expert groups".into());
        }
    }
    Ok(())
}

/// A sequence's KV cache as the decode loop sees it: entries held (committed
/// and scratch) and entries kept for good.
pub trait SequenceCache {
    /// Entries held, committed and scratch.
    fn len(&self) -> usize;
    /// Entries kept for good.
    fn committed(&self) -> usize;
    /// Whether it holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the decode loop needs from a target forward's logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogitsWanted {
    /// The argmax of every logit row (greedy); a backend may skip the logits.
    Argmax,
    /// The logits themselves (sampling, audits).
    Logits,
}

/// Runs a target model: forwards over ragged batches with KV caches and aux capture.
pub trait TargetBackend {
    /// Per-sequence KV cache handle.
    type Cache: SequenceCache;

    /// The model's config.
    fn config(&self) -> &TargetConfig;

    /// A fresh, empty cache for one sequence.
    fn new_cache(&self) -> Result<Self::Cache>;

    /// Runs `batch`, appending every row's keys and values to its cache as
    /// scratch, capturing the residual streams entering the layers in
    /// `capture`, and giving `batch.logit_rows`' logits or their argmax.
    fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [Self::Cache],
        capture: &[usize],
        wanted: LogitsWanted,
    ) -> Result<TargetOutput>;

    /// [`TargetBackend::forward`] leaving the language-model head for
    /// [`TargetBackend::head_argmax`]: the output without logits or argmax,
    /// and the final hidden states of `batch.logit_rows`, so that greedy
    /// verification runs the head over the tree positions its walk reaches
    /// only. `None` (the default): this backend runs its head in `forward`.
    fn forward_trunk(
        &self,
        batch: &ForwardBatch,
        caches: &mut [Self::Cache],
        capture: &[usize],
    ) -> Result<Option<(TargetOutput, Vec<f32>)>> {
        let _ = (batch, caches, capture);
        Ok(None)
    }

    /// The argmax of the logits of the final hidden states `finals[rows[i]]`
    /// (rows of [`TargetBackend::forward_trunk`]'s states): the ids
    /// `forward` would give those rows. Logits holding a NaN or infinity
    /// are an error.
    fn head_argmax(&self, finals: &[f32], rows: &[usize]) -> Result<Vec<u32>> {
        let _ = (finals, rows);
        Err(EngineError::setting(
            "head_argmax",
            "this backend runs its head in forward",
        ))
    }

    /// Keeps scratch entries `keep` (ascending) as the next committed entries
    /// of each cache and drops the rest of its scratch; `keeps[i]` is for `caches[i]`.
    fn commit(&self, caches: &mut [&mut Self::Cache], keeps: &[Vec<usize>]) -> Result<()>;

    /// Commits every scratch entry of `cache`.
    fn commit_all(&self, cache: &mut Self::Cache) -> Result<()>;

    /// The sequence is finished: its cache's memory may be reused.
    fn release(&self, cache: Self::Cache) {
        drop(cache);
    }
}

/// Runs an EAGLE-3 draft model.
pub trait DraftBackend {
    /// Per-sequence KV cache handle.
    type Cache: SequenceCache;

    /// The draft's config.
    fn config(&self) -> &DraftConfig;

    /// Target token id of each draft token id.
    fn draft_to_target(&self) -> &[u32];

    /// A fresh, empty cache for one sequence.
    fn new_cache(&self) -> Result<Self::Cache>;

    /// Runs `batch` (appending each row to its cache as scratch) with the
    /// given hidden inputs; logits for `batch.logit_rows`, or with
    /// `top_k = Some(k)` only each row's best `k` log-probabilities where the
    /// backend can compute them itself (`DraftOutput::top`).
    fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [Self::Cache],
        top_k: Option<usize>,
    ) -> Result<DraftOutput>;

    /// Commits every scratch entry.
    fn commit_all(&self, cache: &mut Self::Cache);

    /// Drops every scratch entry.
    fn rollback(&self, cache: &mut Self::Cache);

    /// Drops the scratch entries past the first `len` (never the committed
    /// prefix).
    fn truncate(&self, cache: &mut Self::Cache, len: usize);

    /// Up to how many rows a decode step's extend should run as `steps + 1`
    /// rows a sequence, each sequence's pending pairs followed by dummy rows
    /// whose cache entries are dropped after it (see `EagleDrafter`); `None`
    /// (the default): never. A backend that replays a graph per row count
    /// then keeps one a batch size, not one per count of accepted drafts;
    /// the real rows' outputs are the same on a batch-invariant backend.
    fn extend_pad_rows(&self) -> Option<usize> {
        None
    }

    /// The sequence is finished: its cache's memory may be reused.
    fn release(&self, cache: Self::Cache) {
        drop(cache);
    }
}
