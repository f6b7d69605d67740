//! What `specula gpu bench` reads off a GPU target besides its outputs:
//! the bytes a decode step reads (weights, one routed expert, a cached
//! token's keys and values), the experts its forwards touch, and the
//! kernel launches of a captured decode step.

use super::super::layers::{LayerFfn, TargetLayer};
use super::GpuTarget;
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

    /// Kernel launches of the captured greedy decode forward of `rows`
    /// sequences (one row and one logit row each, no tree): what one
    /// baseline step replays; none before that forward is captured.
    pub fn decode_graph_kernels(&self, rows: usize) -> Option<usize> {
        self.replays.kernels_where(|k| {
            k.rows == rows
                && k.n_logits == rows
                && k.wanted == LogitsWanted::Argmax
                && !k.attention_kinds.1
        })
    }

    /// Zeroes the expert counters.
    pub fn reset_expert_stats(&self) -> Result<()> {
        self.gpu
            .stream
            .memset_zeros(&mut *self.expert_stats.borrow_mut())?;
        Ok(())
    }
}
