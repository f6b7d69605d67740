//! The EAGLE-1/2 draft (the EAGLE authors' `cnets1.py` layout; SGLang
//! `LlamaForCausalLMEagle`, vLLM `EagleLlamaForCausalLM`): `fc` folds
//! `cat(embed(token), hidden)` into one vector at every step, where `hidden`
//! is the target's last hidden state (after its final norm) or the draft's
//! own previous output; one decoder layer without an input norm; the
//! output goes to the target's `lm_head` un-normed. EAGLE-2 changed only
//! the tree search, not the draft.

use super::batch::ForwardBatch;
use super::blocks::{concat_rows, embed, gather_rows, Attention, AttentionDims, Linear, Mlp, Norm};
use super::draft::{DraftOutput, HiddenInput};
use super::draft_layout::{check_vocab, draft_embedding, layer_prefix};
use super::target::TargetModel;
use crate::checkpoint::Checkpoint;
use crate::config::DraftConfig;
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCache;
use specula_kernels::cpu::{add_inplace, AttentionShape, Rope};
use std::sync::Arc;

/// An EAGLE-1/2 draft loaded on the CPU.
pub struct EagleDraft {
    pub(crate) config: DraftConfig,
    pub(crate) embed: Arc<Vec<f32>>,
    pub(crate) fc: Linear,
    pub(crate) attn: Attention,
    pub(crate) post_norm: Norm,
    pub(crate) mlp: Mlp,
    /// The target's `lm_head` (the draft has none of its own).
    pub(crate) lm_head: Linear,
    pub(crate) d2t: Vec<u32>,
    pub(crate) rope: Rope,
}

impl EagleDraft {
    /// Builds the draft from its settled config and opened checkpoint
    /// against `target` (its embedding when the draft has none, and its
    /// `lm_head`).
    pub(crate) fn from_checkpoint(
        config: DraftConfig,
        ck: &Checkpoint,
        target: &TargetModel,
    ) -> Result<EagleDraft> {
        let c = &config;
        let t = target.config();
        check_vocab(c, t)?;
        if c.hidden_size != t.hidden_size {
            return Err(EngineError::config(
                &c.path,
                "hidden_size",
                format!(
                    "{}, but an EAGLE-1/2 draft takes the target's hidden state and shares its lm_head: the target's hidden_size is {}",
                    c.hidden_size, t.hidden_size
                ),
            ));
        }
        let h = c.hidden_size;
        let layer = layer_prefix(ck);
        let l = |n: &str| format!("{layer}.{n}");
        let dims = AttentionDims {
            in_dim: h,
            out_dim: h,
            shape: AttentionShape {
                n_heads: c.num_attention_heads,
                n_kv_heads: c.num_key_value_heads,
                head_dim: c.head_dim,
            },
            qkv_bias: ck.contains(&l("self_attn.q_proj.bias")),
            qk_norm_eps: None,
        };
        let eps = c.rms_norm_eps;
        Ok(EagleDraft {
            embed: draft_embedding(ck, c, t, target.embedding())?,
            fc: Linear::load(
                ck,
                "fc",
                h,
                2 * h,
                ck.contains("fc.bias"),
                "fc input = 2 x hidden_size, output = hidden_size",
            )?,
            attn: Attention::load(
                ck,
                &l("self_attn"),
                &dims,
                "hidden_size, num_attention_heads, num_key_value_heads, head_dim",
            )?,
            post_norm: Norm::load(ck, &l("post_attention_layernorm"), h, eps, "hidden_size")?,
            mlp: Mlp::load(
                ck,
                &l("mlp"),
                h,
                c.intermediate_size,
                "hidden_size, intermediate_size",
            )?,
            lm_head: target.lm_head.clone(),
            d2t: (0..c.vocab_size as u32).collect(),
            rope: Rope::new(c.head_dim, c.rope_theta, c.rope_scaling),
            config,
        })
    }

    /// The config it was loaded with.
    pub fn config(&self) -> &DraftConfig {
        &self.config
    }

    /// Target token id of each draft token id (the identity: the draft
    /// scores the target's whole vocabulary).
    pub fn draft_to_target(&self) -> &[u32] {
        &self.d2t
    }

    /// A fresh KV cache for one sequence.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(1, self.config.num_key_value_heads * self.config.head_dim)
    }

    /// Runs `batch` (appending each row to its cache as scratch); `hidden`
    /// is the target's last hidden state or the draft's own output, either
    /// way `[rows, hidden]`.
    pub fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [KvCache],
    ) -> DraftOutput {
        let h = self.config.hidden_size;
        let rows = batch.len();
        let g = match hidden {
            HiddenInput::Aux(a) | HiddenInput::Own(a) => a,
            HiddenInput::AuxRows(_) => panic!("a CPU draft takes host aux states, not device rows"),
        };
        assert_eq!(
            g.len(),
            rows * h,
            "EAGLE draft forward: hidden input has the wrong number of rows"
        );
        let e = embed(&self.embed, h, batch.rows.iter().map(|r| r.token));
        let mut x = self.fc.forward(&concat_rows(&e, g, h));
        // Layer 0 of an EAGLE-1/2 draft has no input norm.
        let a = self.attn.forward(&x, batch, caches, 0, &self.rope);
        add_inplace(&mut x, &a);
        let m = self.mlp.forward(&self.post_norm.apply(&x));
        add_inplace(&mut x, &m);
        let hidden = gather_rows(&x, h, batch.logit_rows.iter().copied());
        DraftOutput {
            logits: self.lm_head.forward(&hidden),
            hidden,
            top: Vec::new(),
        }
    }
}
