//! Multi-head latent attention settings (DeepSeek V2/V3, Kimi) and the RoPE
//! of its decoupled part, with YaRN scaling, computed as transformers does.

use super::bounds::{above_zero, width};
use super::moe::{count, flag, number};
use super::target::Family;
use crate::error::{EngineError, Result};
use serde_json::Value;
use std::path::Path;

/// Epsilon of `q_a_layernorm` and `kv_a_layernorm` (transformers builds
/// them with the RMSNorm default, not `rms_norm_eps`).
pub const LATENT_NORM_EPS: f32 = 1e-6;

/// The attention of a DeepSeek layer.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MlaConfig {
    /// Rank of the query compression (`q_lora_rank`); `None`: a plain `q_proj`.
    pub q_lora_rank: Option<usize>,
    /// Rank of the key/value compression (`kv_lora_rank`).
    pub kv_lora_rank: usize,
    /// Per-head query/key width without position (`qk_nope_head_dim`).
    pub qk_nope_head_dim: usize,
    /// Per-head width of the decoupled RoPE part (`qk_rope_head_dim`), shared by all heads for keys.
    pub qk_rope_head_dim: usize,
    /// Per-head value width (`v_head_dim`).
    pub v_head_dim: usize,
    /// Biases on `q_a_proj`, `kv_a_proj_with_mqa` and `o_proj` (`attention_bias`).
    pub attention_bias: bool,
    /// The RoPE part is stored pair-interleaved (`rope_interleave`, default
    /// true for V3; always for V2, which rotates adjacent pairs as complex numbers).
    pub rope_interleave: bool,
    /// Inverse frequencies of the RoPE part (`qk_rope_head_dim / 2`), YaRN-scaled when configured.
    #[serde(skip)]
    pub inv_freq: Vec<f32>,
    /// YaRN's factor on cos and sin (`attention_factor`; 1 without YaRN).
    pub rope_attention_factor: f32,
    /// Softmax scale: `(qk_nope + qk_rope)^-0.5`, times `mscale(factor, mscale_all_dim)^2` under YaRN.
    pub softmax_scale: f32,
}

impl MlaConfig {
    /// Query/key width of one head.
    pub fn qk_head_dim(&self) -> usize {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }

    /// Width of one head in the engine's KV cache: keys and values are both
    /// zero-padded to the wider of the two.
    pub fn cache_head_dim(&self) -> usize {
        self.qk_head_dim().max(self.v_head_dim)
    }
}

/// YaRN's `get_mscale`.
fn mscale(scale: f64, m: f64) -> f64 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * m * scale.ln() + 1.0
    }
}

/// Unscaled inverse frequencies as torch computes them: `base ** (2i / dim)` in f32, inverted.
fn pos_freqs(base: f64, dim: usize) -> Vec<f32> {
    (0..dim / 2)
        .map(|i| (base as f32 as f64).powf(((2 * i) as f32 / dim as f32) as f64) as f32)
        .collect()
}

/// YaRN inverse frequencies and attention factor (`_compute_yarn_parameters`).
fn yarn(
    path: &Path,
    s: &Value,
    base: f64,
    dim: usize,
    max_pos: usize,
) -> Result<(Vec<f32>, f64, f64)> {
    let field = |k: &str| format!("rope_scaling.{k}");
    let get = |k: &str| {
        number(path, s, k).map_err(|_| EngineError::config(path, field(k), "must be a number"))
    };
    let orig = match get("original_max_position_embeddings")? {
        Some(v) if v >= 1.0 => v,
        Some(v) => {
            return Err(EngineError::config(
                path,
                field("original_max_position_embeddings"),
                format!("{v} (must be at least 1)"),
            ))
        }
        None => max_pos as f64,
    };
    let factor = match get("factor")? {
        Some(f) => f,
        None => max_pos as f64 / orig,
    };
    above_zero(path, &field("factor"), factor as f32)?;
    let (m, m_all) = (
        get("mscale")?.unwrap_or(0.0),
        get("mscale_all_dim")?.unwrap_or(0.0),
    );
    let attention_factor = match get("attention_factor")? {
        Some(a) => a,
        None if m != 0.0 && m_all != 0.0 => mscale(factor, m) / mscale(factor, m_all),
        None => mscale(factor, 1.0),
    };
    let beta_fast = get("beta_fast")?.filter(|&b| b != 0.0).unwrap_or(32.0);
    let beta_slow = get("beta_slow")?.filter(|&b| b != 0.0).unwrap_or(1.0);
    let truncate = s.get("truncate").and_then(Value::as_bool).unwrap_or(true);
    let correction_dim = |rotations: f64| {
        dim as f64 * (orig / (rotations * 2.0 * std::f64::consts::PI)).ln() / (2.0 * base.ln())
    };
    let (mut low, mut high) = (correction_dim(beta_fast), correction_dim(beta_slow));
    if truncate {
        (low, high) = (low.floor(), high.ceil());
    }
    let (low, mut high) = (low.max(0.0), high.min(dim as f64 - 1.0));
    if low == high {
        high += 0.001;
    }
    let pos = pos_freqs(base, dim);
    let inv = pos
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let ramp = ((i as f32 - low as f32) / (high as f32 - low as f32)).clamp(0.0, 1.0);
            let extrapolation_factor = 1.0 - ramp;
            let interpolation = 1.0 / (factor as f32 * p);
            let extrapolation = 1.0 / p;
            interpolation * (1.0 - extrapolation_factor) + extrapolation * extrapolation_factor
        })
        .collect();
    Ok((inv, attention_factor, factor))
}

/// Reads the MLA settings of a DeepSeek `family` config `obj` (`None` for
/// other families); `rope_theta` and `rope_scaling` as the caller found them.
pub(super) fn parse(
    path: &Path,
    obj: &Value,
    family: Family,
    rope_theta: f32,
    rope_scaling: &Value,
    max_pos: Option<usize>,
) -> Result<Option<MlaConfig>> {
    if !matches!(family, Family::DeepseekV2 | Family::DeepseekV3) {
        return Ok(None);
    }
    let need = |k: &str| -> Result<usize> { width(path, k, count(path, obj, k)?) };
    let q_lora_rank = match count(path, obj, "q_lora_rank")? {
        None => None,
        n => Some(width(path, "q_lora_rank", n)?),
    };
    let kv_lora_rank = need("kv_lora_rank")?;
    let qk_nope_head_dim = need("qk_nope_head_dim")?;
    let qk_rope_head_dim = need("qk_rope_head_dim")?;
    let v_head_dim = need("v_head_dim")?;
    if qk_rope_head_dim % 2 != 0 {
        return Err(EngineError::config(
            path,
            "qk_rope_head_dim",
            format!("{qk_rope_head_dim} is odd; RoPE needs an even width"),
        ));
    }
    let rope_interleave =
        family == Family::DeepseekV2 || flag(path, obj, "rope_interleave")?.unwrap_or(true);
    let base = rope_theta as f64;
    let qk_head_dim = qk_nope_head_dim + qk_rope_head_dim;
    let mut softmax_scale = (qk_head_dim as f64).powf(-0.5);
    let kind = rope_scaling
        .get("rope_type")
        .or_else(|| rope_scaling.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    let (inv_freq, attention_factor) = match kind {
        "default" => (
            pos_freqs(base, qk_rope_head_dim)
                .iter()
                .map(|p| 1.0 / p)
                .collect(),
            1.0,
        ),
        "yarn" => {
            let max_pos = max_pos.unwrap_or(2048);
            let (inv, attention_factor, factor) =
                yarn(path, rope_scaling, base, qk_rope_head_dim, max_pos)?;
            let m_all = number(path, rope_scaling, "mscale_all_dim")?.unwrap_or(0.0);
            if m_all != 0.0 {
                let m = mscale(factor, m_all);
                softmax_scale = softmax_scale * m * m;
            }
            (inv, attention_factor)
        }
        other => {
            return Err(EngineError::config(
                path,
                "rope_scaling.rope_type",
                format!(
                    "unsupported RoPE scaling {other:?} for {} (supported: default, yarn)",
                    family.architecture()
                ),
            ))
        }
    };
    Ok(Some(MlaConfig {
        q_lora_rank,
        kv_lora_rank,
        qk_nope_head_dim,
        qk_rope_head_dim,
        v_head_dim,
        attention_bias: flag(path, obj, "attention_bias")?.unwrap_or(false),
        rope_interleave,
        inv_freq,
        rope_attention_factor: attention_factor as f32,
        softmax_scale: softmax_scale as f32,
    }))
}
