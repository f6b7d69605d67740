//! The EAGLE-3 draft (SGLang / SpecForge `LlamaForCausalLMEagle3` layout):
//! `fc` folds the target's aux states into one hidden vector, one midlayer
//! attends over `cat(input_layernorm(embed), hidden_norm(hidden))`, and
//! `lm_head` scores a reduced vocabulary mapped back through `d2t`.

use super::batch::ForwardBatch;
use super::blocks::{embed, Attention, AttentionDims, Linear, Mlp, Norm};
use crate::checkpoint::Checkpoint;
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCache;
use specula_kernels::cpu::{add_inplace, AttentionShape, Rope};
use std::path::Path;
use std::sync::Arc;

use crate::capture::AUX_STATES;

/// The hidden input of a draft forward.
pub enum HiddenInput<'a> {
    /// Captured target aux states, `[rows, 3 * target_hidden]`, folded by `fc`.
    Aux(&'a [f32]),
    /// The draft's own previous outputs, `[rows, hidden]`.
    Own(&'a [f32]),
}

/// An EAGLE-3 draft loaded on the CPU.
pub struct Eagle3Draft {
    pub(crate) config: DraftConfig,
    pub(crate) embed: Arc<Vec<f32>>,
    pub(crate) fc: Linear,
    pub(crate) input_norm: Norm,
    pub(crate) hidden_norm: Norm,
    pub(crate) attn: Attention,
    pub(crate) post_norm: Norm,
    pub(crate) mlp: Mlp,
    pub(crate) norm: Norm,
    pub(crate) lm_head: Linear,
    pub(crate) d2t: Vec<u32>,
    pub(crate) rope: Rope,
}

/// What a draft forward returns.
pub struct DraftOutput {
    /// `[rows, hidden]`: the midlayer output before the final norm (fed back as the next hidden input).
    pub hidden: Vec<f32>,
    /// `[logit_rows, draft_vocab]` logits (empty when `top` holds the rows instead).
    pub logits: Vec<f32>,
    /// Per logit row, the best draft ids with their log-probabilities, best
    /// first, when the caller asked for top-k only and the backend computed it.
    pub top: Vec<Vec<(usize, f32)>>,
}

impl Eagle3Draft {
    /// Loads the draft in `dir` against `target` (whose embedding it uses
    /// when it has none of its own).
    pub fn load(
        dir: &Path,
        target: &TargetConfig,
        target_embed: Arc<Vec<f32>>,
    ) -> Result<Eagle3Draft> {
        let config = DraftConfig::load(dir)?;
        let ck = Checkpoint::open(dir)?;
        let c = &config;
        let path = &c.path;
        if c.target_hidden_size != target.hidden_size {
            return Err(EngineError::config(
                path,
                "target_hidden_size",
                format!(
                    "{} (or hidden_size when absent), but the target's hidden_size is {}",
                    c.target_hidden_size, target.hidden_size
                ),
            ));
        }
        if c.vocab_size != target.vocab_size {
            return Err(EngineError::config(
                path,
                "vocab_size",
                format!(
                    "{}, but the target's vocab_size is {}",
                    c.vocab_size, target.vocab_size
                ),
            ));
        }
        let h = c.hidden_size;
        let fc_in = AUX_STATES * c.target_hidden_size;
        let fc = Linear::load(
            &ck,
            "fc",
            h,
            fc_in,
            false,
            "fc input = 3 x target hidden_size, output = hidden_size",
        )?;
        let embed = if ck.contains("embed_tokens.weight") {
            Arc::new(ck.f32(
                "embed_tokens.weight",
                &[c.vocab_size, h],
                "vocab_size, hidden_size",
            )?)
        } else if h == target.hidden_size {
            target_embed
        } else {
            return Err(EngineError::MissingTensor {
                path: ck.dir().to_path_buf(),
                name:
                    "embed_tokens.weight (needed: the draft hidden_size differs from the target's)"
                        .into(),
            });
        };
        let shape = AttentionShape {
            n_heads: c.num_attention_heads,
            n_kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        };
        let dims = AttentionDims {
            in_dim: 2 * h,
            out_dim: h,
            shape,
            qkv_bias: false,
            qk_norm_eps: None,
        };
        let eps = c.rms_norm_eps;
        let d2t_raw = ck.i64("d2t", &[c.draft_vocab_size], "draft_vocab_size")?;
        let d2t = d2t_raw
            .iter()
            .enumerate()
            .map(|(d, &off)| {
                let t = d as i64 + off;
                if t < 0 || t as usize >= c.vocab_size {
                    Err(EngineError::WeightFile {
                        path: ck.file_of("d2t"),
                        message: format!(
                            "tensor `d2t`: draft id {d} maps to target id {t}, outside 0..{}",
                            c.vocab_size
                        ),
                    })
                } else {
                    Ok(t as u32)
                }
            })
            .collect::<Result<Vec<u32>>>()?;
        Ok(Eagle3Draft {
            fc,
            input_norm: Norm::load(&ck, "midlayer.input_layernorm", h, eps, "hidden_size")?,
            hidden_norm: Norm::load(&ck, "midlayer.hidden_norm", h, eps, "hidden_size")?,
            attn: Attention::load(&ck, "midlayer.self_attn", &dims, "attention input = 2 x hidden_size, num_attention_heads, num_key_value_heads, head_dim")?,
            post_norm: Norm::load(&ck, "midlayer.post_attention_layernorm", h, eps, "hidden_size")?,
            mlp: Mlp::load(&ck, "midlayer.mlp", h, c.intermediate_size, "hidden_size, intermediate_size")?,
            norm: Norm::load(&ck, "norm", h, eps, "hidden_size")?,
            lm_head: Linear::load(&ck, "lm_head", c.draft_vocab_size, h, false, "draft_vocab_size, hidden_size")?,
            rope: Rope::new(c.head_dim, c.rope_theta, target.rope_scaling),
            d2t,
            embed,
            config,
        })
    }

    /// The config it was loaded with.
    pub fn config(&self) -> &DraftConfig {
        &self.config
    }

    /// Target token id of each draft token id.
    pub fn draft_to_target(&self) -> &[u32] {
        &self.d2t
    }

    /// A fresh KV cache for one sequence.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(1, self.config.num_key_value_heads * self.config.head_dim)
    }

    /// Runs `batch` (appending each row to its cache as scratch) with the given hidden inputs.
    pub fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [KvCache],
    ) -> DraftOutput {
        let h = self.config.hidden_size;
        let rows = batch.len();
        let mut x = match hidden {
            HiddenInput::Aux(a) => self.fc.forward(a),
            HiddenInput::Own(g) => g.to_vec(),
        };
        assert_eq!(
            x.len(),
            rows * h,
            "draft forward: hidden input has the wrong number of rows"
        );
        let e = self
            .input_norm
            .apply(&embed(&self.embed, h, batch.rows.iter().map(|r| r.token)));
        let hn = self.hidden_norm.apply(&x);
        let mut cat = Vec::with_capacity(rows * 2 * h);
        for r in 0..rows {
            cat.extend_from_slice(&e[r * h..(r + 1) * h]);
            cat.extend_from_slice(&hn[r * h..(r + 1) * h]);
        }
        let a = self.attn.forward(&cat, batch, caches, 0, &self.rope);
        add_inplace(&mut x, &a);
        let m = self.mlp.forward(&self.post_norm.apply(&x));
        add_inplace(&mut x, &m);
        let mut sel = Vec::with_capacity(batch.logit_rows.len() * h);
        for &r in &batch.logit_rows {
            sel.extend_from_slice(&x[r * h..(r + 1) * h]);
        }
        self.norm.apply_inplace(&mut sel);
        DraftOutput {
            logits: self.lm_head.forward(&sel),
            hidden: x,
            top: Vec::new(),
        }
    }
}
