//! The EAGLE-3 draft (SGLang / SpecForge `LlamaForCausalLMEagle3` and the
//! other published layouts): `fc` folds the target's aux states into one
//! hidden vector, one midlayer attends over
//! `cat(input_layernorm(embed), hidden_norm(hidden))`, and `lm_head` scores
//! a reduced vocabulary mapped back through `d2t`.

use super::batch::ForwardBatch;
use super::blocks::{concat_rows, embed, gather_rows, Attention, AttentionDims, Linear, Mlp, Norm};
use super::draft_layout::{
    check_eagle3_fits, draft_embedding, draft_to_target, layer_prefix, settle_kind,
};
use crate::checkpoint::Checkpoint;
use crate::config::{DraftConfig, DraftKind, TargetConfig};
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCache;
use specula_kernels::cpu::{add_inplace, AttentionShape, Rope};
use std::path::Path;
use std::sync::Arc;

use crate::capture::AUX_STATES;

/// The hidden input of a draft forward.
pub enum HiddenInput<'a> {
    /// Captured target streams: `[rows, 3 * target_hidden]` aux states
    /// for an EAGLE-3 draft (folded by `fc`; a `[rows, hidden]` input skips
    /// `fc`, as SGLang does for an EAGLE-3 draft served as EAGLE), the
    /// target's last hidden state `[rows, hidden]` for an EAGLE-1/2 draft.
    Aux(&'a [f32]),
    /// The draft's own previous outputs, `[rows, hidden]`.
    Own(&'a [f32]),
    /// Aux states a GPU target kept on the device ([`super::TargetOutput::aux_rows`]):
    /// the ids of the rows to read, one per batch row. CPU drafts refuse it.
    AuxRows(&'a [u32]),
}

/// An EAGLE-3 draft loaded on the CPU.
pub struct Eagle3Draft {
    pub(crate) config: DraftConfig,
    pub(crate) embed: Arc<Vec<f32>>,
    pub(crate) fc: Linear,
    /// SpecForge `fc_norm`: one RMSNorm per aux stream, before `fc`.
    pub(crate) fc_norm: Option<Vec<Norm>>,
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
    /// `[logit_rows, hidden]`: each logit row's midlayer output before the
    /// final norm (fed back as the next hidden input; rows without logits
    /// are not returned).
    pub hidden: Vec<f32>,
    /// `[logit_rows, draft_vocab]` logits (empty when `top` holds the rows instead).
    pub logits: Vec<f32>,
    /// Per logit row, the best draft ids with their log-probabilities, best
    /// first, when the caller asked for top-k only and the backend computed it.
    pub top: Vec<Vec<(usize, f32)>>,
}

impl Eagle3Draft {
    /// Loads the EAGLE-3 draft in `dir` against `target` (whose embedding
    /// it uses when it has none of its own); an EAGLE-1/2 draft is refused
    /// here (load it with [`super::DraftModel::load`]).
    pub fn load(
        dir: &Path,
        target: &TargetConfig,
        target_embed: Arc<Vec<f32>>,
    ) -> Result<Eagle3Draft> {
        let mut config = DraftConfig::load(dir)?;
        let ck = Checkpoint::open(dir)?;
        match settle_kind(&mut config, &ck)? {
            DraftKind::Eagle3 => Self::from_checkpoint(config, &ck, target, target_embed),
            DraftKind::Eagle => Err(EngineError::config(
                &config.path,
                "architectures",
                "an EAGLE-1/2 draft (fed the target's last hidden state, no aux layers), where an EAGLE-3 draft is needed: capture mappings and aux states apply to EAGLE-3 drafts only",
            )),
        }
    }

    /// Builds the draft from its settled config and opened checkpoint, in
    /// any published EAGLE-3 layout (see the README's table of layouts).
    pub(crate) fn from_checkpoint(
        config: DraftConfig,
        ck: &Checkpoint,
        target: &TargetConfig,
        target_embed: Arc<Vec<f32>>,
    ) -> Result<Eagle3Draft> {
        let c = &config;
        check_eagle3_fits(c, target)?;
        let h = c.hidden_size;
        let fc_in = AUX_STATES * c.target_hidden_size;
        let fc = Linear::load(
            ck,
            "fc",
            h,
            fc_in,
            ck.contains("fc.bias"),
            "fc input = 3 x target hidden_size, output = hidden_size",
        )?;
        let eps = c.rms_norm_eps;
        let fc_norm = if c.fc_norm {
            let mut norms = Vec::with_capacity(AUX_STATES);
            for i in 0..AUX_STATES {
                let n = format!("fc_norm.{i}");
                norms.push(Norm::load(
                    ck,
                    &n,
                    c.target_hidden_size,
                    eps,
                    "fc_norm: target_hidden_size",
                )?);
            }
            Some(norms)
        } else {
            None
        };
        let embed = draft_embedding(ck, c, target, target_embed)?;
        let layer = layer_prefix(ck);
        let shape = AttentionShape {
            n_heads: c.num_attention_heads,
            n_kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        };
        let dims = AttentionDims {
            in_dim: 2 * h,
            out_dim: h,
            shape,
            qkv_bias: ck.contains(&format!("{layer}.self_attn.q_proj.bias")),
            qk_norm_eps: None,
        };
        let l = |n: &str| format!("{layer}.{n}");
        Ok(Eagle3Draft {
            fc,
            fc_norm,
            input_norm: Norm::load(ck, &l("input_layernorm"), h, eps, "hidden_size")?,
            hidden_norm: Norm::load(ck, &l("hidden_norm"), h, eps, "hidden_size")?,
            attn: Attention::load(ck, &l("self_attn"), &dims, "attention input = 2 x hidden_size, num_attention_heads, num_key_value_heads, head_dim")?,
            post_norm: Norm::load(ck, &l("post_attention_layernorm"), h, eps, "hidden_size")?,
            mlp: Mlp::load(ck, &l("mlp"), h, c.intermediate_size, "hidden_size, intermediate_size")?,
            norm: Norm::load(ck, "norm", h, eps, "hidden_size")?,
            lm_head: Linear::load(ck, "lm_head", c.draft_vocab_size, h, false, "draft_vocab_size, hidden_size")?,
            rope: Rope::new(c.head_dim, c.rope_theta, c.rope_scaling),
            d2t: draft_to_target(ck, c)?,
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
        let x = match hidden {
            HiddenInput::Aux(a) if self.fc.in_dim != h && a.len() == rows * h => a.to_vec(),
            HiddenInput::Aux(a) => match &self.fc_norm {
                None => self.fc.forward(a),
                Some(norms) => self.fc.forward(&normed_streams(a, norms)),
            },
            HiddenInput::Own(g) => g.to_vec(),
            HiddenInput::AuxRows(_) => panic!("a CPU draft takes host aux states, not device rows"),
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
        // vLLM's norm_before_residual: the residual is the normed input.
        let mut x = if self.config.norm_before_residual {
            hn.clone()
        } else {
            x
        };
        let cat = concat_rows(&e, &hn, h);
        let a = self.attn.forward(&cat, batch, caches, 0, &self.rope);
        add_inplace(&mut x, &a);
        let m = self.mlp.forward(&self.post_norm.apply(&x));
        add_inplace(&mut x, &m);
        let hidden = gather_rows(&x, h, batch.logit_rows.iter().copied());
        let mut sel = hidden.clone();
        if self.config.norm_output {
            self.norm.apply_inplace(&mut sel);
        }
        DraftOutput {
            logits: self.lm_head.forward(&sel),
            hidden,
            top: Vec::new(),
        }
    }
}

/// `a: [rows, 3 * width]` with each of the three streams of every row
/// RMS-normed by its own weight (SpecForge `fc_norm`).
fn normed_streams(a: &[f32], norms: &[Norm]) -> Vec<f32> {
    let width = norms[0].w.len();
    let mut out = a.to_vec();
    for row in out.chunks_mut(norms.len() * width) {
        for (stream, norm) in row.chunks_mut(width).zip(norms) {
            norm.apply_inplace(stream);
        }
    }
    out
}
