//! The target model (Llama 3.x, Qwen2, Qwen3) with aux hidden-state capture.

use super::batch::ForwardBatch;
use super::blocks::{embed, Attention, AttentionDims, Linear, Mlp, Norm};
use crate::checkpoint::Checkpoint;
use crate::config::{Family, TargetConfig};
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCache;
use specula_kernels::cpu::{add_inplace, AttentionShape, Rope};
use std::path::Path;
use std::sync::Arc;

/// One decoder layer's weights.
pub(crate) struct DecoderLayer {
    pub(crate) input_norm: Norm,
    pub(crate) attn: Attention,
    pub(crate) post_norm: Norm,
    pub(crate) mlp: Mlp,
}

/// A target model loaded on the CPU (weights in f32).
pub struct TargetModel {
    pub(crate) config: TargetConfig,
    pub(crate) embed: Arc<Vec<f32>>,
    pub(crate) layers: Vec<DecoderLayer>,
    pub(crate) norm: Norm,
    pub(crate) lm_head: Linear,
    pub(crate) rope: Rope,
}

/// What a target forward returns.
#[derive(Debug, Clone)]
pub struct TargetOutput {
    /// `[batch.logit_rows.len(), vocab]` logits.
    pub logits: Vec<f32>,
    /// `[batch.len(), points.len() * hidden]`: the captured residual streams of
    /// every row, concatenated in capture order (empty when nothing is captured).
    pub aux: Vec<f32>,
    /// Argmax of each logit row, when the backend computed it instead of
    /// returning `logits` (then `logits` is empty).
    pub argmax: Vec<u32>,
}

impl TargetModel {
    /// Loads `dir` (config.json + safetensors).
    pub fn load(dir: &Path) -> Result<TargetModel> {
        let config = TargetConfig::load(dir)?;
        let ck = Checkpoint::open(dir)?;
        Self::from_checkpoint(config, &ck)
    }

    /// Builds the model from an opened checkpoint and its config, refusing
    /// (before anything is allocated per layer) a config that declares more
    /// decoder layers than the checkpoint holds.
    pub fn from_checkpoint(config: TargetConfig, ck: &Checkpoint) -> Result<TargetModel> {
        let c = &config;
        let held = ck.decoder_layers();
        if c.num_hidden_layers > held {
            return Err(EngineError::config(
                &c.path,
                "num_hidden_layers",
                format!(
                    "{} decoder layers, but the checkpoint in {} holds {held} (model.layers.0 to {})",
                    c.num_hidden_layers,
                    ck.dir().display(),
                    held as i64 - 1
                ),
            ));
        }
        let h = c.hidden_size;
        let why_h = "hidden_size, vocab_size";
        let embed = ck.f32("model.embed_tokens.weight", &[c.vocab_size, h], why_h)?;
        let shape = AttentionShape {
            n_heads: c.num_attention_heads,
            n_kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        };
        let dims = AttentionDims {
            in_dim: h,
            out_dim: h,
            shape,
            qkv_bias: c.qkv_bias,
            qk_norm_eps: (c.family == Family::Qwen3).then_some(c.rms_norm_eps),
        };
        let why_attn = "hidden_size, num_attention_heads, num_key_value_heads, head_dim";
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let p = format!("model.layers.{i}");
            layers.push(DecoderLayer {
                input_norm: Norm::load(
                    ck,
                    &format!("{p}.input_layernorm"),
                    h,
                    c.rms_norm_eps,
                    "hidden_size",
                )?,
                attn: Attention::load(ck, &format!("{p}.self_attn"), &dims, why_attn)?,
                post_norm: Norm::load(
                    ck,
                    &format!("{p}.post_attention_layernorm"),
                    h,
                    c.rms_norm_eps,
                    "hidden_size",
                )?,
                mlp: Mlp::load(
                    ck,
                    &format!("{p}.mlp"),
                    h,
                    c.intermediate_size,
                    "hidden_size, intermediate_size",
                )?,
            });
        }
        let norm = Norm::load(ck, "model.norm", h, c.rms_norm_eps, "hidden_size")?;
        let lm_head = if c.tie_word_embeddings && !ck.contains("lm_head.weight") {
            Linear::from_weight(embed.clone(), c.vocab_size, h)
        } else {
            Linear::load(ck, "lm_head", c.vocab_size, h, false, why_h)?
        };
        let rope = Rope::new(c.head_dim, c.rope_theta, c.rope_scaling);
        Ok(TargetModel {
            config,
            embed: Arc::new(embed),
            layers,
            norm,
            lm_head,
            rope,
        })
    }

    /// The config it was loaded with.
    pub fn config(&self) -> &TargetConfig {
        &self.config
    }

    /// The token embedding table `[vocab, hidden]` (shared with drafts that have none).
    pub fn embedding(&self) -> Arc<Vec<f32>> {
        Arc::clone(&self.embed)
    }

    /// A fresh KV cache for one sequence.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(
            self.layers.len(),
            self.config.num_key_value_heads * self.config.head_dim,
        )
    }

    /// Runs `batch`, appending every row's keys and values to its cache as
    /// scratch, capturing the residual streams entering the layers in
    /// `capture` (0 = embedding output), and computing logits for
    /// `batch.logit_rows`.
    pub fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        capture: &[usize],
    ) -> TargetOutput {
        let h = self.config.hidden_size;
        let rows = batch.len();
        let mut x = embed(&self.embed, h, batch.rows.iter().map(|r| r.token));
        let mut aux = vec![
            0f32;
            if capture.is_empty() {
                0
            } else {
                rows * capture.len() * h
            }
        ];
        let width = capture.len() * h;
        for (li, layer) in self.layers.iter().enumerate() {
            for (slot, _) in capture.iter().enumerate().filter(|(_, &p)| p == li) {
                for r in 0..rows {
                    aux[r * width + slot * h..r * width + (slot + 1) * h]
                        .copy_from_slice(&x[r * h..(r + 1) * h]);
                }
            }
            let normed = layer.input_norm.apply(&x);
            let a = layer.attn.forward(&normed, batch, caches, li, &self.rope);
            add_inplace(&mut x, &a);
            let normed = layer.post_norm.apply(&x);
            let m = layer.mlp.forward(&normed);
            add_inplace(&mut x, &m);
        }
        let mut last: Vec<f32> = Vec::with_capacity(batch.logit_rows.len() * h);
        for &r in &batch.logit_rows {
            last.extend_from_slice(&x[r * h..(r + 1) * h]);
        }
        self.norm.apply_inplace(&mut last);
        TargetOutput {
            logits: self.lm_head.forward(&last),
            aux,
            argmax: Vec::new(),
        }
    }
}
