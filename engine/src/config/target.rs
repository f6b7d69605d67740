//! Target model config (Llama 3.x, Qwen2, Qwen3, Qwen3-MoE, DeepSeek V2/V3
//! and wrappers of them such as Kimi-K2.5) from `config.json`.

use super::bounds::{above_zero, bounded, in_vocab, llama3_scaling, width, MAX_LAYERS};
pub use super::family::Family;
use super::mla::MlaConfig;
use super::moe::MoeConfig;
use super::read_json;
use super::wrapper::unwrap_language_model;
use crate::error::{EngineError, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Llama 3 RoPE frequency scaling, as in `rope_scaling` with `rope_type: "llama3"`.
pub type RopeScaling = specula_kernels::cpu::Llama3RopeScaling;

/// The resolved target config the engine runs with.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TargetConfig {
    /// Where it was read from.
    pub path: PathBuf,
    /// Model family.
    pub family: Family,
    /// Residual stream width.
    pub hidden_size: usize,
    /// MLP inner width.
    pub intermediate_size: usize,
    /// Decoder layers (L).
    pub num_hidden_layers: usize,
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
    /// Llama 3 RoPE scaling, if any.
    #[serde(skip)]
    pub rope_scaling: Option<RopeScaling>,
    /// Vocabulary size (rows of the embedding).
    pub vocab_size: usize,
    /// The longest sequence (prompt + generated tokens) the model was made
    /// for (`max_position_embeddings`), when the config names it.
    pub max_position_embeddings: Option<usize>,
    /// Whether `lm_head` reuses the embedding.
    pub tie_word_embeddings: bool,
    /// Biases on q/k/v projections (Qwen2, or Llama with `attention_bias`).
    pub qkv_bias: bool,
    /// End-of-sequence token ids.
    pub eos_token_ids: Vec<u32>,
    /// Storage dtype named by the config (`torch_dtype` or `dtype`), e.g. `bfloat16`.
    pub dtype: String,
    /// Latent attention (DeepSeek), replacing the q/k/v projections. Then
    /// `num_key_value_heads` = `num_attention_heads` and `head_dim` is the
    /// width of one head in the KV cache ([`MlaConfig::cache_head_dim`]).
    pub mla: Option<MlaConfig>,
    /// Routed experts (DeepSeek, Qwen3-MoE).
    pub moe: Option<MoeConfig>,
    /// Prefix of every tensor name: `language_model.` for a wrapper whose
    /// language model sits under `text_config` (Kimi-K2.5), else empty.
    pub weight_prefix: String,
    /// The wrapper's architecture when the model is a wrapper's language model.
    pub wrapper: Option<String>,
}

#[derive(Deserialize)]
struct RawTargetConfig {
    architectures: Option<Vec<String>>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    rms_norm_eps: Option<f32>,
    rope_theta: Option<f32>,
    rope_scaling: Option<Value>,
    rope_parameters: Option<Value>,
    vocab_size: Option<usize>,
    max_position_embeddings: Option<usize>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    eos_token_id: Option<Value>,
    torch_dtype: Option<String>,
    dtype: Option<String>,
}

pub(super) fn required<T>(path: &Path, field: &str, v: Option<T>) -> Result<T> {
    v.ok_or_else(|| EngineError::config(path, field, "required field is missing"))
}

pub(super) fn positive(path: &Path, field: &str, v: Option<usize>) -> Result<usize> {
    match required(path, field, v)? {
        0 => Err(EngineError::config(path, field, "must be greater than 0")),
        n => Ok(n),
    }
}

fn f32_field(path: &Path, field: &str, obj: &Value, key: &str) -> Result<f32> {
    obj.get(key)
        .and_then(Value::as_f64)
        .map(|v| v as f32)
        .ok_or_else(|| {
            EngineError::config(path, format!("{field}.{key}"), "required number is missing")
        })
}

/// Hidden size, query heads, kv heads and head size, checked against each
/// other (`num_key_value_heads` defaults to the query heads, `head_dim` to
/// `hidden_size / num_attention_heads`).
pub(super) fn attention_geometry(
    path: &Path,
    hidden: Option<usize>,
    heads: Option<usize>,
    raw_kv: Option<usize>,
    raw_hd: Option<usize>,
) -> Result<(usize, usize, usize, usize)> {
    let hidden_size = width(path, "hidden_size", hidden)?;
    let num_attention_heads = width(path, "num_attention_heads", heads)?;
    let num_key_value_heads = match raw_kv {
        None => num_attention_heads,
        n => width(path, "num_key_value_heads", n)?,
    };
    if num_attention_heads % num_key_value_heads != 0 {
        return Err(EngineError::config(
            path,
            "num_key_value_heads",
            format!(
                "{num_key_value_heads} does not divide num_attention_heads = {num_attention_heads}"
            ),
        ));
    }
    let head_dim = match raw_hd {
        Some(d) => width(path, "head_dim", Some(d))?,
        None if hidden_size % num_attention_heads == 0 => hidden_size / num_attention_heads,
        None => {
            return Err(EngineError::config(
                path,
                "head_dim",
                "missing, and hidden_size is not a multiple of num_attention_heads",
            ))
        }
    };
    Ok((
        hidden_size,
        num_attention_heads,
        num_key_value_heads,
        head_dim,
    ))
}

/// Reads the llama3 scaling from `rope_scaling` (transformers 4) or
/// `rope_parameters` (transformers 5), checked ([`llama3_scaling`]); other
/// scaling types are refused.
pub(super) fn rope_scaling(path: &Path, field: &str, v: &Value) -> Result<Option<RopeScaling>> {
    if v.is_null() {
        return Ok(None);
    }
    let kind = v
        .get("rope_type")
        .or_else(|| v.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    match kind {
        "default" => Ok(None),
        "llama3" => {
            let s = RopeScaling {
                factor: f32_field(path, field, v, "factor")?,
                low_freq_factor: f32_field(path, field, v, "low_freq_factor")?,
                high_freq_factor: f32_field(path, field, v, "high_freq_factor")?,
                original_max_position_embeddings: f32_field(
                    path,
                    field,
                    v,
                    "original_max_position_embeddings",
                )? as usize,
            };
            llama3_scaling(path, field, &s)?;
            Ok(Some(s))
        }
        other => Err(EngineError::config(
            path,
            format!("{field}.rope_type"),
            format!("unsupported RoPE scaling {other:?} (supported: default, llama3)"),
        )),
    }
}

/// Refuses a quantized checkpoint (`quantization_config`, at the top or
/// in a wrapper's `text_config`): its weights are packed integers or fp8
/// with scales the engine does not apply (DeepSeek-V3's fp8 release,
/// Kimi-K2.5's int4 experts), so reading them as floats would run a
/// different model without a word.
fn refuse_quantized(path: &Path, whole: &Value, obj: &Value, wrapped: bool) -> Result<()> {
    let found = [
        (whole, "quantization_config"),
        (obj, "text_config.quantization_config"),
    ]
    .into_iter()
    .filter(|(_, field)| wrapped || !field.starts_with("text_config"))
    .find_map(|(v, field)| {
        v.get("quantization_config")
            .filter(|q| !q.is_null())
            .map(|q| (field, q))
    });
    match found {
        None => Ok(()),
        Some((field, q)) => Err(EngineError::config(
            path,
            field,
            format!(
                "a quantized checkpoint (quant_method {}): the engine reads float weights \
                 (f32, bf16, f16) only; use a dequantized copy",
                q.get("quant_method").unwrap_or(&Value::Null)
            ),
        )),
    }
}

/// Reads `eos_token_id` as a token id or a list of them (whole numbers that
/// fit a u32, never cut down to one).
pub(super) fn token_ids(path: &Path, field: &str, v: Option<&Value>) -> Result<Vec<u32>> {
    let bad = || EngineError::config(path, field, "must be a token id or a list of token ids");
    let id = |x: &Value| {
        x.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(bad)
    };
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(n @ Value::Number(_)) => Ok(vec![id(n)?]),
        Some(Value::Array(a)) => a.iter().map(id).collect(),
        Some(_) => Err(bad()),
    }
}

impl TargetConfig {
    /// Reads `dir/config.json`.
    pub fn load(dir: &Path) -> Result<TargetConfig> {
        Self::load_file(&dir.join("config.json"))
    }

    /// Reads a target config file (any name).
    pub fn load_file(path: &Path) -> Result<TargetConfig> {
        let whole: Value = read_json(path, "config.json (the target model config)")?;
        Self::from_json(path, &whole)
    }

    /// The config of the parsed `config.json` text `whole` (read from `path`,
    /// which error messages name).
    pub fn from_json(path: &Path, whole: &Value) -> Result<TargetConfig> {
        let path = path.to_path_buf();
        let (obj, wrapper) = unwrap_language_model(&path, whole)?;
        refuse_quantized(&path, whole, obj, wrapper.is_some())?;
        let raw: RawTargetConfig = serde_path_to_error::deserialize(obj).map_err(|e| {
            EngineError::config(&path, e.path().to_string(), e.into_inner().to_string())
        })?;
        let archs = match (&wrapper, raw.architectures) {
            (Some(w), _) => vec![w.family.architecture().to_string()],
            (None, a) => required(&path, "architectures", a)?,
        };
        let family = archs
            .iter()
            .find_map(|a| Family::from_architecture(a))
            .ok_or_else(|| EngineError::UnknownArchitecture {
                path: path.clone(),
                found: archs.clone(),
                supported: Family::NAMES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let num_hidden_layers = bounded(
            &path,
            "num_hidden_layers",
            raw.num_hidden_layers,
            MAX_LAYERS,
        )?;
        let latent = matches!(family, Family::DeepseekV2 | Family::DeepseekV3);
        let (hidden_size, num_attention_heads, mut num_key_value_heads, mut head_dim) = if latent {
            // No head_dim of its own: the MLA widths below decide.
            let h = width(&path, "hidden_size", raw.hidden_size)?;
            let heads = width(&path, "num_attention_heads", raw.num_attention_heads)?;
            (h, heads, heads, 2)
        } else {
            attention_geometry(
                &path,
                raw.hidden_size,
                raw.num_attention_heads,
                raw.num_key_value_heads,
                raw.head_dim,
            )?
        };
        if head_dim % 2 != 0 {
            return Err(EngineError::config(
                &path,
                "head_dim",
                format!("{head_dim} is odd; RoPE needs an even head size"),
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
        let rope_theta = above_zero(&path, "rope_theta", rope_theta)?;
        let scaling_value = match (&raw.rope_scaling, params.is_null()) {
            (Some(v), _) if !v.is_null() => v.clone(),
            (_, false) => params.clone(),
            _ => Value::Null,
        };
        let max_position_embeddings = match raw.max_position_embeddings {
            None => None,
            n => Some(positive(&path, "max_position_embeddings", n)?),
        };
        let mla = super::mla::parse(
            &path,
            obj,
            family,
            rope_theta,
            &scaling_value,
            max_position_embeddings,
        )?;
        let rope_scaling = match (&mla, &raw.rope_scaling, params.is_null()) {
            (Some(_), _, _) => None,
            (None, Some(v), _) if !v.is_null() => rope_scaling(&path, "rope_scaling", v)?,
            (None, _, false) => rope_scaling(&path, "rope_parameters", &params)?,
            _ => None,
        };
        if let Some(m) = &mla {
            head_dim = m.cache_head_dim();
            num_key_value_heads = num_attention_heads;
        }
        let moe = super::moe::parse(&path, obj, family, num_hidden_layers)?;
        let vocab_size = width(&path, "vocab_size", raw.vocab_size)?;
        let eos = raw.eos_token_id.clone().or_else(|| {
            wrapper
                .as_ref()
                .and_then(|_| whole.get("eos_token_id").cloned())
        });
        let eos_token_ids = token_ids(&path, "eos_token_id", eos.as_ref())?;
        in_vocab(&path, "eos_token_id", &eos_token_ids, vocab_size)?;
        let top_dtype = || {
            ["torch_dtype", "dtype"]
                .iter()
                .find_map(|k| whole.get(*k).and_then(Value::as_str).map(String::from))
        };
        Ok(TargetConfig {
            family,
            hidden_size,
            intermediate_size: width(&path, "intermediate_size", raw.intermediate_size)?,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps: above_zero(&path, "rms_norm_eps", raw.rms_norm_eps.unwrap_or(1e-6))?,
            rope_theta,
            rope_scaling,
            vocab_size,
            max_position_embeddings,
            tie_word_embeddings: raw.tie_word_embeddings.unwrap_or(false),
            qkv_bias: family == Family::Qwen2 || (!latent && raw.attention_bias.unwrap_or(false)),
            eos_token_ids,
            dtype: raw
                .torch_dtype
                .or(raw.dtype)
                .or_else(top_dtype)
                .unwrap_or_else(|| "float32".into()),
            mla,
            moe,
            weight_prefix: if wrapper.is_some() {
                "language_model.".into()
            } else {
                String::new()
            },
            wrapper: wrapper.map(|w| w.architecture),
            path,
        })
    }
}
