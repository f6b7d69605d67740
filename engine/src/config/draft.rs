//! EAGLE-3 draft config (SGLang / SpecForge `LlamaForCausalLMEagle3` layout).

use super::bounds::{above_zero, width};
use super::read_json;
use super::target::{attention_geometry, required};
use crate::error::{EngineError, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The architecture name of an EAGLE-3 draft.
pub const EAGLE3_ARCHITECTURE: &str = "LlamaForCausalLMEagle3";

/// The resolved EAGLE-3 draft config.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DraftConfig {
    /// Where it was read from.
    pub path: PathBuf,
    /// Draft residual width.
    pub hidden_size: usize,
    /// Width of the target's hidden states that `fc` consumes (3 of them).
    pub target_hidden_size: usize,
    /// MLP inner width of the midlayer.
    pub intermediate_size: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads.
    pub num_key_value_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// RMSNorm epsilon.
    pub rms_norm_eps: f32,
    /// RoPE base.
    pub rope_theta: f32,
    /// Target vocabulary size.
    pub vocab_size: usize,
    /// Rows of the draft `lm_head`.
    pub draft_vocab_size: usize,
    /// `eagle_config.eagle_aux_hidden_state_layer_ids`, if the draft names them.
    pub aux_layer_ids: Option<Vec<i64>>,
}

#[derive(Deserialize)]
struct RawEagleConfig {
    eagle_aux_hidden_state_layer_ids: Option<Vec<i64>>,
}

#[derive(Deserialize)]
struct RawDraftConfig {
    architectures: Option<Vec<String>>,
    hidden_size: Option<usize>,
    target_hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    rms_norm_eps: Option<f32>,
    rope_theta: Option<f32>,
    rope_parameters: Option<Value>,
    vocab_size: Option<usize>,
    draft_vocab_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    eagle_config: Option<RawEagleConfig>,
}

impl DraftConfig {
    /// Reads `dir/config.json` of an EAGLE-3 draft.
    pub fn load(dir: &Path) -> Result<DraftConfig> {
        let path = dir.join("config.json");
        let raw: RawDraftConfig = read_json(&path, "config.json (the EAGLE-3 draft config)")?;
        let archs = required(&path, "architectures", raw.architectures)?;
        if !archs.iter().any(|a| a == EAGLE3_ARCHITECTURE) {
            return Err(EngineError::UnknownArchitecture {
                path,
                found: archs,
                supported: EAGLE3_ARCHITECTURE.to_string(),
            });
        }
        if let Some(n) = raw.num_hidden_layers {
            if n != 1 {
                return Err(EngineError::config(
                    &path,
                    "num_hidden_layers",
                    format!("{n}: an EAGLE-3 draft has exactly one midlayer"),
                ));
            }
        }
        let (hidden_size, num_attention_heads, num_key_value_heads, head_dim) = attention_geometry(
            &path,
            raw.hidden_size,
            raw.num_attention_heads,
            raw.num_key_value_heads,
            raw.head_dim,
        )?;
        let vocab_size = width(&path, "vocab_size", raw.vocab_size)?;
        let draft_vocab_size = match raw.draft_vocab_size {
            None => vocab_size,
            d => width(&path, "draft_vocab_size", d)?,
        };
        if draft_vocab_size > vocab_size {
            return Err(EngineError::config(
                &path,
                "draft_vocab_size",
                format!("{draft_vocab_size} is larger than vocab_size = {vocab_size}"),
            ));
        }
        let rope_theta = raw
            .rope_theta
            .or_else(|| {
                raw.rope_parameters
                    .as_ref()
                    .and_then(|p| p.get("rope_theta"))
                    .and_then(Value::as_f64)
                    .map(|v| v as f32)
            })
            .unwrap_or(10000.0);
        Ok(DraftConfig {
            hidden_size,
            target_hidden_size: match raw.target_hidden_size {
                None => hidden_size,
                t => width(&path, "target_hidden_size", t)?,
            },
            intermediate_size: width(&path, "intermediate_size", raw.intermediate_size)?,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps: above_zero(&path, "rms_norm_eps", raw.rms_norm_eps.unwrap_or(1e-6))?,
            rope_theta: above_zero(&path, "rope_theta", rope_theta)?,
            vocab_size,
            draft_vocab_size,
            aux_layer_ids: raw
                .eagle_config
                .and_then(|e| e.eagle_aux_hidden_state_layer_ids),
            path,
        })
    }
}

/// The EAGLE-3 draft shape SpecForge trains for `target`: one decoder layer
/// of the target's width, heads and MLP, a draft vocabulary of at most
/// 32000 tokens (for runs without a draft checkpoint: random weights, timing studies).
pub fn default_draft_config(target: &super::TargetConfig) -> DraftConfig {
    DraftConfig {
        path: PathBuf::from(format!("{} (random EAGLE-3 draft)", target.path.display())),
        hidden_size: target.hidden_size,
        target_hidden_size: target.hidden_size,
        intermediate_size: target.intermediate_size,
        num_attention_heads: target.num_attention_heads,
        num_key_value_heads: target.num_key_value_heads,
        head_dim: target.head_dim,
        rms_norm_eps: target.rms_norm_eps,
        rope_theta: target.rope_theta,
        vocab_size: target.vocab_size,
        draft_vocab_size: target.vocab_size.min(32_000),
        aux_layer_ids: None,
    }
}
