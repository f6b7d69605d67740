//! What `specula gpu bench` reads off a GPU target besides its outputs:
//! the bytes a decode step reads (weights, one routed expert, a cached
//! token's keys and values), the experts its forwards touch, and the
//! kernel launches of a captured decode step.

use super::super::graph::GraphLaunches;
use super::super::layers::{LayerFfn, TargetLayer};
use super::{GpuTarget, StepKey};
use crate::backend::LogitsWanted;
use crate::error::Result;
use cudarc::cublas::{CudaBlas, Gemm};
use specula_kernels::cuda::GpuElement;

impl<T: GpuElement> GpuTarget<T>
where
    CudaBlas: Gemm<T>,
{
    /// Bytes of weights every decode step reads: every layer but the routed
    /// experts, and the LM head (one embedding row per token is negligible).
    pub fn weight_bytes(&self) -> usize {
        let w = &self.weights;
        w.layers.iter().map(TargetLayer::fixed_bytes).sum::<usize>()
            + w.lm_head.bytes()
            + w.norm.w.len() * T::BYTES
    }

    /// Bytes of one routed expert (0 without experts).
    pub fn expert_bytes(&self) -> usize {
        self.weights
            .layers
            .iter()
            .find_map(|l| match &l.ffn {
                LayerFfn::Experts(m) => Some(m.expert_bytes()),
                LayerFfn::Dense(_) => None,
            })
            .unwrap_or(0)
    }

    /// Bytes of keys and values one cached token holds over every layer.
    pub fn kv_bytes_per_token(&self) -> usize {
        let c = &self.config;
        let per_layer = match &c.mla {
            Some(m) => m.kv_lora_rank + m.qk_rope_head_dim,
            None => 2 * c.num_key_value_heads * c.head_dim,
        };
        per_layer * c.num_hidden_layers * T::BYTES
    }

    /// The experts touched and the expert-layer forwards counted since the
    /// last reset (decode and verify forwards; waits for the GPU).
    pub fn expert_stats(&self) -> Result<(u64, u64)> {
        let v = self.gpu.stream.clone_dtoh(&*self.expert_stats.borrow())?;
        Ok((v[0], v[1]))
    }

    /// The launches of the captured greedy decode forward of `rows`
    /// sequences (`StepKey::is_greedy_decode`): what one baseline step
    /// replays; none before that forward is captured.
    pub fn decode_graph(&self, rows: usize) -> Option<GraphLaunches> {
        self.replays.launches_where(|k| k.is_greedy_decode(rows))
    }

    /// Zeroes the expert counters.
    pub fn reset_expert_stats(&self) -> Result<()> {
        self.gpu
            .stream
            .memset_zeros(&mut *self.expert_stats.borrow_mut())?;
        Ok(())
    }
}

impl StepKey {
    /// Whether this is the shape of a greedy decode forward of `rows`
    /// sequences: one row and one logit row each, argmax wanted, nothing
    /// captured. A decode row is a tree row (its own entry is its one extra
    /// key, `push_tree_node`), so the attention kinds say nothing here.
    pub(super) fn is_greedy_decode(&self, rows: usize) -> bool {
        self.rows == rows
            && self.n_logits == rows
            && self.wanted == LogitsWanted::Argmax
            && self.capture.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rows: usize, n_logits: usize, capture: Vec<usize>, tree: bool) -> StepKey {
        StepKey {
            rows,
            n_logits,
            capture,
            wanted: LogitsWanted::Argmax,
            attention_kinds: (!tree, tree),
            long_rows: false,
        }
    }

    #[test]
    fn a_baseline_decode_step_is_found_though_its_rows_are_tree_rows() {
        // gpu bench's kernels_per_step was empty on the H200 (2026-12-05):
        // the decode forward's rows are tree rows and the shape was skipped.
        assert!(key(8, 8, vec![], true).is_greedy_decode(8));
        assert!(key(1, 1, vec![], false).is_greedy_decode(1));
    }

    #[test]
    fn verify_and_capturing_forwards_are_not_decode_steps() {
        assert!(!key(48, 48, vec![], true).is_greedy_decode(8));
        assert!(!key(8, 8, vec![1, 15, 29], true).is_greedy_decode(8));
        assert!(!key(8, 1, vec![], false).is_greedy_decode(8));
        let mut logits = key(8, 8, vec![], true);
        logits.wanted = LogitsWanted::Logits;
        assert!(!logits.is_greedy_decode(8));
    }
}
