//! Multimodal wrappers whose language model is a supported family: Kimi-K2.5
//! (`KimiK25ForConditionalGeneration`) keeps a DeepSeek-V3 language model
//! under `text_config` and its weights under `language_model.`; the vision
//! parts are not read.

use super::target::Family;
use crate::error::{EngineError, Result};
use serde_json::Value;
use std::path::Path;

/// The language model a wrapper config holds.
#[derive(Debug, Clone)]
pub struct Wrapped {
    /// The wrapper's own architecture (or `model_type`), e.g. `KimiK25ForConditionalGeneration`.
    pub architecture: String,
    /// The family of the language model under `text_config`.
    pub family: Family,
}

/// The family a `model_type` names, for a `text_config` without `architectures`.
fn family_of_model_type(model_type: &str) -> Option<Family> {
    match model_type {
        "llama" => Some(Family::Llama),
        "qwen2" => Some(Family::Qwen2),
        "qwen3" => Some(Family::Qwen3),
        "qwen3_moe" => Some(Family::Qwen3Moe),
        "deepseek_v2" => Some(Family::DeepseekV2),
        "deepseek_v3" | "kimi_k2" => Some(Family::DeepseekV3),
        _ => None,
    }
}

fn names(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The object the target config is read from: `whole` itself when its
/// `architectures` names a supported family (or it has no `text_config`),
/// else its `text_config` with the wrapper it came from.
pub fn unwrap_language_model<'a>(
    path: &Path,
    whole: &'a Value,
) -> Result<(&'a Value, Option<Wrapped>)> {
    let archs = names(whole, "architectures");
    if archs.iter().any(|a| Family::from_architecture(a).is_some()) {
        return Ok((whole, None));
    }
    let Some(text) = whole.get("text_config").filter(|t| t.is_object()) else {
        return Ok((whole, None));
    };
    let text_archs = names(text, "architectures");
    let family = text_archs
        .iter()
        .find_map(|a| Family::from_architecture(a))
        .or_else(|| {
            text.get("model_type")
                .and_then(Value::as_str)
                .and_then(family_of_model_type)
        });
    let Some(family) = family else {
        return Err(EngineError::config(
            path,
            "text_config.architectures",
            format!(
                "the wrapper {archs:?} holds a language model of no supported family \
                 (architectures {text_archs:?}, model_type {}; supported: {})",
                text.get("model_type").unwrap_or(&Value::Null),
                Family::NAMES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    let architecture = archs
        .first()
        .cloned()
        .or_else(|| {
            whole
                .get("model_type")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .unwrap_or_else(|| "a wrapper".into());
    Ok((
        text,
        Some(Wrapped {
            architecture,
            family,
        }),
    ))
}
