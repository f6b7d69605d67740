//! One decoder layer of a target: grouped-query or latent attention, then a
//! dense MLP or experts, each behind an RMSNorm and added to the residual.

use super::batch::ForwardBatch;
use super::blocks::{Attention, AttentionDims, Mlp, Norm};
use super::mla::MlaAttention;
use super::moe::MoeBlock;
use crate::checkpoint::Checkpoint;
use crate::config::TargetConfig;
use crate::error::Result;
use crate::kv_cache::KvCache;
use specula_kernels::cpu::{AttentionShape, Rope};

/// The attention of a layer.
pub(crate) enum Mixer {
    /// Grouped-query attention (Llama, Qwen2/3, Qwen3-MoE).
    Gqa(Attention),
    /// Multi-head latent attention (DeepSeek V2/V3).
    Latent(MlaAttention),
}

/// The feed-forward of a layer.
pub(crate) enum FeedForward {
    /// The gated MLP.
    Dense(Box<Mlp>),
    /// Routed (and shared) experts.
    Experts(Box<MoeBlock>),
}

/// One decoder layer's weights.
pub(crate) struct DecoderLayer {
    pub(crate) input_norm: Norm,
    pub(crate) attn: Mixer,
    pub(crate) post_norm: Norm,
    pub(crate) mlp: FeedForward,
}

impl DecoderLayer {
    /// Loads layer `i` of `c` (tensor names under `c.weight_prefix`).
    pub(crate) fn load(ck: &Checkpoint, c: &TargetConfig, i: usize) -> Result<DecoderLayer> {
        let h = c.hidden_size;
        let p = format!("{}model.layers.{i}", c.weight_prefix);
        let attn = match &c.mla {
            Some(m) => Mixer::Latent(MlaAttention::load(
                ck,
                &format!("{p}.self_attn"),
                h,
                c.num_attention_heads,
                m,
            )?),
            None => {
                let dims = AttentionDims {
                    in_dim: h,
                    out_dim: h,
                    shape: AttentionShape {
                        n_heads: c.num_attention_heads,
                        n_kv_heads: c.num_key_value_heads,
                        head_dim: c.head_dim,
                    },
                    qkv_bias: c.qkv_bias,
                    qk_norm_eps: c.family.has_qk_norm().then_some(c.rms_norm_eps),
                };
                let why = "hidden_size, num_attention_heads, num_key_value_heads, head_dim";
                Mixer::Gqa(Attention::load(ck, &format!("{p}.self_attn"), &dims, why)?)
            }
        };
        let mlp = match &c.moe {
            Some(m) if m.sparse_layers[i] => {
                FeedForward::Experts(Box::new(MoeBlock::load(ck, &format!("{p}.mlp"), h, m)?))
            }
            _ => FeedForward::Dense(Box::new(Mlp::load(
                ck,
                &format!("{p}.mlp"),
                h,
                c.intermediate_size,
                "hidden_size, intermediate_size",
            )?)),
        };
        let norm = |n: &str| Norm::load(ck, &format!("{p}.{n}"), h, c.rms_norm_eps, "hidden_size");
        Ok(DecoderLayer {
            input_norm: norm("input_layernorm")?,
            attn,
            post_norm: norm("post_attention_layernorm")?,
            mlp,
        })
    }

    /// The attention output for the normalised `x` (appending to the caches' `layer`).
    pub(crate) fn attend(
        &self,
        x: &[f32],
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        layer: usize,
        rope: &Rope,
    ) -> Vec<f32> {
        match &self.attn {
            Mixer::Gqa(a) => a.forward(x, batch, caches, layer, rope),
            Mixer::Latent(a) => a.forward(x, batch, caches, layer),
        }
    }

    /// The feed-forward output for the normalised `x`.
    pub(crate) fn feed_forward(&self, x: &[f32]) -> Vec<f32> {
        match &self.mlp {
            FeedForward::Dense(m) => m.forward(x),
            FeedForward::Experts(m) => m.forward(x),
        }
    }
}

/// Decoder layers `checkpoint` holds under `prefix`: one past the highest
/// `N` of a `{prefix}model.layers.N.` tensor (0 when there is none).
pub(crate) fn held_layers(ck: &Checkpoint, prefix: &str) -> usize {
    let start = format!("{prefix}model.layers.");
    ck.names()
        .iter()
        .filter_map(|n| n.strip_prefix(&start)?.split('.').next()?.parse().ok())
        .map(|n: usize| n + 1)
        .max()
        .unwrap_or(0)
}
