//! EAGLE draft configs, in every published layout: SGLang / SpecForge
//! `LlamaForCausalLMEagle3`, vLLM `Eagle3LlamaForCausalLM`, the EAGLE
//! authors' `LlamaForCausalLM` (EAGLE-3 or EAGLE-1/2, told apart by the
//! weights), SGLang `LlamaForCausalLMEagle` and vLLM
//! `EagleLlamaForCausalLM` (EAGLE-1/2).

use super::bounds::{above_zero, width};
use super::read_json;
use super::target::{attention_geometry, required, rope_scaling, RopeScaling};
use crate::error::{EngineError, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The architecture name of an EAGLE-3 draft in the SGLang / SpecForge layout.
pub const EAGLE3_ARCHITECTURE: &str = "LlamaForCausalLMEagle3";

/// Architecture names that declare an EAGLE-3 draft.
const EAGLE3_NAMES: [&str; 2] = [EAGLE3_ARCHITECTURE, "Eagle3LlamaForCausalLM"];
/// Architecture names that declare an EAGLE-1/2 draft.
const EAGLE_NAMES: [&str; 2] = ["LlamaForCausalLMEagle", "EagleLlamaForCausalLM"];
/// The plain name the EAGLE authors' drafts (either generation) carry.
const PLAIN_NAME: &str = "LlamaForCausalLM";

/// Which EAGLE generation a draft belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DraftKind {
    /// EAGLE-3: `fc` folds three target streams; one midlayer over
    /// `cat(embed, hidden)`; its own final norm and (reduced-vocabulary) head.
    Eagle3,
    /// EAGLE-1/2: `fc` folds `cat(embed, the target's last hidden state)`;
    /// one decoder layer; logits from the target's own `lm_head`.
    Eagle,
}

impl DraftKind {
    /// The name users know it by.
    pub fn name(self) -> &'static str {
        match self {
            DraftKind::Eagle3 => "EAGLE-3",
            DraftKind::Eagle => "EAGLE-1/2",
        }
    }
}

/// The resolved draft config.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DraftConfig {
    /// Where it was read from.
    pub path: PathBuf,
    /// The architecture name the config declares.
    pub architecture: String,
    /// The generation: from the architecture name, or (for the EAGLE
    /// authors' plain `LlamaForCausalLM`) from the shape of `fc` once the
    /// weights are open ([`DraftConfig::settle_kind`]).
    pub kind: Option<DraftKind>,
    /// Draft residual width.
    pub hidden_size: usize,
    /// Width of the target's hidden states that `fc` consumes.
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
    /// The draft's own RoPE scaling (`rope_scaling` / `rope_parameters`):
    /// serving engines build the draft's rotary embedding from the draft
    /// config, not the target's.
    #[serde(skip)]
    pub rope_scaling: Option<RopeScaling>,
    /// Target vocabulary size.
    pub vocab_size: usize,
    /// Rows of the draft `lm_head` (`vocab_size` when the config names none).
    pub draft_vocab_size: usize,
    /// The aux layer ids the draft names, from `eagle_config` (SGLang's
    /// field) or else the top level (vLLM's).
    pub aux_layer_ids: Option<Vec<i64>>,
    /// The config field `aux_layer_ids` were read from.
    pub aux_ids_field: Option<String>,
    /// SpecForge `fc_norm`: an RMSNorm on each aux stream before `fc`.
    pub fc_norm: bool,
    /// SpecForge `norm_output` (default true): `lm_head` reads the normed
    /// hidden state; false reads it un-normed.
    pub norm_output: bool,
    /// vLLM `norm_before_residual`: the residual is `hidden_norm(hidden)`,
    /// not the raw hidden input.
    pub norm_before_residual: bool,
}

#[derive(Deserialize)]
struct RawEagleConfig {
    eagle_aux_hidden_state_layer_ids: Option<Vec<i64>>,
    use_aux_hidden_state: Option<bool>,
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
    rope_scaling: Option<Value>,
    rope_parameters: Option<Value>,
    vocab_size: Option<usize>,
    draft_vocab_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    eagle_config: Option<RawEagleConfig>,
    eagle_aux_hidden_state_layer_ids: Option<Vec<i64>>,
    fc_norm: Option<bool>,
    norm_output: Option<bool>,
    norm_before_residual: Option<bool>,
}

/// The generation an architecture name declares (`None` for the EAGLE
/// authors' plain name, which both generations carry), or why it is not a draft.
fn kind_of(path: &Path, archs: &[String]) -> Result<Option<DraftKind>> {
    for a in archs {
        if EAGLE3_NAMES.contains(&a.as_str()) {
            return Ok(Some(DraftKind::Eagle3));
        }
        if EAGLE_NAMES.contains(&a.as_str()) {
            return Ok(Some(DraftKind::Eagle));
        }
        if a == PLAIN_NAME {
            return Ok(None);
        }
    }
    Err(EngineError::UnknownArchitecture {
        path: path.to_path_buf(),
        found: archs.to_vec(),
        supported: [
            EAGLE3_NAMES.as_slice(),
            EAGLE_NAMES.as_slice(),
            &[PLAIN_NAME],
        ]
        .concat()
        .join(", "),
    })
}

impl DraftConfig {
    /// Reads `dir/config.json` of an EAGLE draft.
    pub fn load(dir: &Path) -> Result<DraftConfig> {
        Self::load_file(&dir.join("config.json"))
    }

    /// Reads an EAGLE draft's config.json at `path` (a shape for random
    /// weights: `specula gpu bench --draft-config`).
    pub fn load_file(path: &Path) -> Result<DraftConfig> {
        let path = path.to_path_buf();
        let raw: RawDraftConfig = read_json(&path, "config.json (the draft config)")?;
        let archs = required(&path, "architectures", raw.architectures)?;
        let kind = kind_of(&path, &archs)?;
        let architecture = archs[0].clone();
        if let Some(n) = raw.num_hidden_layers {
            if n != 1 {
                return Err(EngineError::config(
                    &path,
                    "num_hidden_layers",
                    format!("{n}: specula runs EAGLE drafts of exactly one decoder layer"),
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
        let params = raw.rope_parameters.unwrap_or(Value::Null);
        let rope_theta = raw
            .rope_theta
            .or_else(|| {
                params
                    .get("rope_theta")
                    .and_then(Value::as_f64)
                    .map(|v| v as f32)
            })
            .unwrap_or(10000.0);
        let rope_scaling = match (&raw.rope_scaling, params.is_null()) {
            (Some(v), _) if !v.is_null() => rope_scaling(&path, "rope_scaling", v)?,
            (_, false) => rope_scaling(&path, "rope_parameters", &params)?,
            _ => None,
        };
        let eagle = raw.eagle_config;
        if eagle.as_ref().and_then(|e| e.use_aux_hidden_state) == Some(false) {
            return Err(EngineError::config(
                &path,
                "eagle_config.use_aux_hidden_state",
                "false (an EAGLE-3 draft fed the target's last hidden state without fc) is not supported",
            ));
        }
        let (aux_layer_ids, aux_ids_field) = match (
            eagle.and_then(|e| e.eagle_aux_hidden_state_layer_ids),
            raw.eagle_aux_hidden_state_layer_ids,
        ) {
            (Some(ids), _) => (
                Some(ids),
                Some("eagle_config.eagle_aux_hidden_state_layer_ids"),
            ),
            (None, Some(ids)) => (Some(ids), Some("eagle_aux_hidden_state_layer_ids")),
            (None, None) => (None, None),
        };
        Ok(DraftConfig {
            architecture,
            kind,
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
            rope_scaling,
            vocab_size,
            draft_vocab_size,
            aux_layer_ids,
            aux_ids_field: aux_ids_field.map(str::to_string),
            fc_norm: raw.fc_norm.unwrap_or(false),
            norm_output: raw.norm_output.unwrap_or(true),
            norm_before_residual: raw.norm_before_residual.unwrap_or(false),
            path,
        })
    }

    /// The generation, once settled: an EAGLE-3 draft unless the
    /// architecture or the weights said otherwise.
    pub fn kind(&self) -> DraftKind {
        self.kind.unwrap_or(DraftKind::Eagle3)
    }

    /// Settles the generation of a plain `LlamaForCausalLM` draft from the
    /// input width of its `fc` (`fc_shape`, `[out, in]`: 3 x target hidden
    /// for EAGLE-3, 2 x hidden for EAGLE-1/2); refuses a width that fits
    /// neither the declared nor any generation.
    pub fn settle_kind(&mut self, fc_shape: &[usize], file: &Path) -> Result<DraftKind> {
        let fc_in = fc_shape[1];
        let eagle3_in = 3 * self.target_hidden_size;
        let eagle_in = 2 * self.hidden_size;
        let found = if fc_in == eagle3_in {
            DraftKind::Eagle3
        } else if fc_in == eagle_in {
            DraftKind::Eagle
        } else {
            return Err(EngineError::WeightFile {
                path: file.to_path_buf(),
                message: format!(
                    "tensor `fc.weight` is {fc_shape:?}: its {fc_in} inputs are neither 3 x target_hidden_size = {eagle3_in} (EAGLE-3: expected [{}, {eagle3_in}]) nor 2 x hidden_size = {eagle_in} (EAGLE-1/2)",
                    self.hidden_size
                ),
            });
        };
        match self.kind {
            Some(declared) if declared != found => Err(EngineError::WeightFile {
                path: file.to_path_buf(),
                message: format!(
                    "tensor `fc.weight` takes {fc_in} inputs, the width of an {} draft, but config.json declares {} ({})",
                    found.name(),
                    self.architecture,
                    declared.name()
                ),
            }),
            _ => {
                self.kind = Some(found);
                Ok(found)
            }
        }
    }

    /// One line on how the draft's capture is chosen when it names no ids
    /// (`None` when it names them): said at load time and in the audit.
    pub fn capture_note(&self) -> Option<String> {
        match (self.kind(), &self.aux_layer_ids) {
            (DraftKind::Eagle, _) => Some(format!(
                "{}: an EAGLE-1/2 draft, fed the target's last hidden state (after its final norm)",
                self.path.display()
            )),
            (DraftKind::Eagle3, None) => Some(format!(
                "{}: names no eagle_aux_hidden_state_layer_ids (in eagle_config or at the top level): the engine default capture [2, L/2, L-3] applies, as in SGLang, vLLM and the EAGLE repository",
                self.path.display()
            )),
            (DraftKind::Eagle3, Some(_)) => None,
        }
    }
}

/// The EAGLE-3 draft shape SpecForge trains for `target`: one decoder layer
/// of the target's width, heads and MLP, a draft vocabulary of at most
/// 32000 tokens (for runs without a draft checkpoint: random weights, timing studies).
pub fn default_draft_config(target: &super::TargetConfig) -> DraftConfig {
    // Latent attention has no head width of its own: the draft's layer is a
    // Llama layer of 128-wide heads, hidden / 128 of them with as many kv
    // heads (SpecForge's DeepSeek-V3 and Kimi-K2.5 drafts: 56 or 64 heads of
    // 128 at hidden 7168; DeepSeek-V2-Lite and Moonlight: 16 of 128, their
    // own head count). A target's own heads would give V3's draft 128 heads
    // of 56, a width no attention kernel is built for.
    let (heads, kv_heads, head_dim) = match &target.mla {
        Some(_) => {
            let heads = (target.hidden_size / 128).max(1);
            (heads, heads, target.hidden_size / heads)
        }
        None => (
            target.num_attention_heads,
            target.num_key_value_heads,
            target.head_dim,
        ),
    };
    DraftConfig {
        path: PathBuf::from(format!("{} (random EAGLE-3 draft)", target.path.display())),
        architecture: EAGLE3_ARCHITECTURE.to_string(),
        kind: Some(DraftKind::Eagle3),
        hidden_size: target.hidden_size,
        target_hidden_size: target.hidden_size,
        intermediate_size: target.intermediate_size,
        num_attention_heads: heads,
        num_key_value_heads: kv_heads,
        head_dim,
        rms_norm_eps: target.rms_norm_eps,
        rope_theta: target.rope_theta,
        rope_scaling: target.rope_scaling,
        vocab_size: target.vocab_size,
        draft_vocab_size: target.vocab_size.min(32_000),
        aux_layer_ids: None,
        aux_ids_field: None,
        fc_norm: false,
        norm_output: true,
        norm_before_residual: false,
    }
}

#[cfg(test)]
#[path = "draft_tests.rs"]
mod tests;
