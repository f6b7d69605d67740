//! The target model (Llama 3.x, Qwen2, Qwen3, Qwen3-MoE, DeepSeek V2/V3 and
//! Kimi's language model) with aux hidden-state capture.

use super::batch::ForwardBatch;
use super::blocks::{embed, gather_rows, Linear, Norm};
use super::layer::{held_layers, DecoderLayer};
use crate::checkpoint::Checkpoint;
use crate::config::TargetConfig;
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCache;
use specula_kernels::cpu::{add_inplace, Rope};
use std::path::Path;
use std::sync::Arc;

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
    /// When the backend kept the captured states on the device instead
    /// (then `aux` is empty): the id of row 0's states there, row `r`'s
    /// being this plus `r` (see [`super::HiddenInput::AuxRows`]).
    pub aux_rows: Option<u32>,
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
        let pre = &c.weight_prefix;
        let held = held_layers(ck, pre);
        if c.num_hidden_layers > held {
            return Err(EngineError::config(
                &c.path,
                "num_hidden_layers",
                format!(
                    "{} decoder layers, but the checkpoint in {} holds {held} ({pre}model.layers.0 to {})",
                    c.num_hidden_layers,
                    ck.dir().display(),
                    held as i64 - 1
                ),
            ));
        }
        if let Some(w) = &c.wrapper {
            eprintln!(
                "note: {}: {w} wraps a {} language model (text_config, weights under {pre}); \
                 its vision parts are ignored",
                c.path.display(),
                c.family.architecture()
            );
        }
        let h = c.hidden_size;
        let why_h = "hidden_size, vocab_size";
        let embed = ck.f32(
            &format!("{pre}model.embed_tokens.weight"),
            &[c.vocab_size, h],
            why_h,
        )?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| DecoderLayer::load(ck, c, i))
            .collect::<Result<Vec<_>>>()?;
        let norm = Norm::load(
            ck,
            &format!("{pre}model.norm"),
            h,
            c.rms_norm_eps,
            "hidden_size",
        )?;
        let lm_head_name = format!("{pre}lm_head");
        let lm_head = if c.tie_word_embeddings && !ck.contains(&format!("{lm_head_name}.weight")) {
            Linear::from_weight(embed.clone(), c.vocab_size, h)
        } else {
            Linear::load(ck, &lm_head_name, c.vocab_size, h, false, why_h)?
        };
        // Latent attention rotates with its own tables; this one serves the rest.
        let rope_dim = if c.mla.is_some() { 2 } else { c.head_dim };
        let rope = Rope::new(rope_dim, c.rope_theta, c.rope_scaling);
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
    /// `capture` (0 = embedding output, L = the last layer's output after
    /// the final norm), and computing logits for
    /// `batch.logit_rows`.
    pub fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        capture: &[usize],
    ) -> TargetOutput {
        let (mut out, last) = self.forward_trunk(batch, caches, capture);
        out.logits = self.lm_head.forward(&last);
        out
    }

    /// [`TargetModel::forward`] without the language-model head: the output
    /// with no logits, and the final (normed) hidden states of
    /// `batch.logit_rows`, `[logit_rows, hidden]`, for [`TargetModel::head`].
    pub fn forward_trunk(
        &self,
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        capture: &[usize],
    ) -> (TargetOutput, Vec<f32>) {
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
            let a = layer.attend(&normed, batch, caches, li, &self.rope);
            add_inplace(&mut x, &a);
            let normed = layer.post_norm.apply(&x);
            let m = layer.feed_forward(&normed);
            add_inplace(&mut x, &m);
        }
        // Point L: the last layer's output after the final norm (what an
        // EAGLE-1/2 draft is fed), for every row.
        let layers = self.layers.len();
        if capture.contains(&layers) {
            self.norm.apply_inplace(&mut x);
            for (slot, _) in capture.iter().enumerate().filter(|(_, &p)| p == layers) {
                for r in 0..rows {
                    aux[r * width + slot * h..r * width + (slot + 1) * h]
                        .copy_from_slice(&x[r * h..(r + 1) * h]);
                }
            }
        }
        let mut last = gather_rows(&x, h, batch.logit_rows.iter().copied());
        if !capture.contains(&layers) {
            self.norm.apply_inplace(&mut last);
        }
        let out = TargetOutput {
            logits: Vec::new(),
            aux,
            aux_rows: None,
            argmax: Vec::new(),
        };
        (out, last)
    }

    /// The logits of final hidden states `rows` (`[n, hidden]`, from
    /// [`TargetModel::forward_trunk`]), `[n, vocab]`: each row the bits
    /// [`TargetModel::forward`] gives it, whatever the other rows.
    pub fn head(&self, rows: &[f32]) -> Vec<f32> {
        self.lm_head.forward(rows)
    }
}
