//! The capture file's `__metadata__`: what the states are of and who wrote them.

use crate::config::MAX_LAYERS;
use crate::error::{EngineError, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The value of `__metadata__.format` in every capture file.
pub const FORMAT: &str = "specula-capture";
/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// What a capture is of, from `__metadata__` (every value a string, as
/// safetensors requires; lists and the config as JSON text).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CaptureMeta {
    /// Which tool wrote it (`specula 0.1.0 capture`, `capture_hf.py (transformers 4.57.1)`).
    pub writer: String,
    /// The target's `model_type` (`llama`, `deepseek_v3`, `kimi_k25`).
    pub model_type: String,
    /// The target's `architectures`.
    pub architectures: Vec<String>,
    /// Decoder layers of the target (L); boundaries run from 0 to L - 1.
    pub num_hidden_layers: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// The target's vocabulary size.
    pub vocab_size: usize,
    /// The dtype the target computed in (`float32`, `bfloat16`); states are stored as bfloat16.
    pub dtype: String,
    /// The boundaries stored, ascending.
    pub boundaries: Vec<usize>,
    /// Tokens of each prompt before its continuation (filled in by the writer).
    pub prompt_lengths: Vec<usize>,
    /// The target's `config.json` (its text part for a multimodal wrapper), as read.
    pub target_config: Value,
}

impl CaptureMeta {
    /// The metadata of a target whose `config.json` is `config`, storing
    /// `boundaries` (all of `0..L` when `None`; 0 is always kept).
    pub fn for_target(
        config: &Value,
        writer: impl Into<String>,
        dtype: impl Into<String>,
        boundaries: Option<&[usize]>,
        file: &Path,
    ) -> Result<CaptureMeta> {
        let text = config.get("text_config").unwrap_or(config);
        let get = |k: &str| text.get(k).or_else(|| config.get(k));
        let num = |k: &str| {
            get(k)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
                .ok_or_else(|| EngineError::config(file, k, "missing or not a whole number"))
        };
        let names = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let layers = num("num_hidden_layers")?;
        let meta = CaptureMeta {
            writer: writer.into(),
            model_type: get("model_type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            architectures: names(config.get("architectures")),
            num_hidden_layers: layers,
            hidden_size: num("hidden_size")?,
            vocab_size: num("vocab_size")?,
            dtype: dtype.into(),
            boundaries: pick_boundaries(boundaries, layers)
                .map_err(|m| EngineError::setting("boundaries", m))?,
            prompt_lengths: Vec::new(),
            target_config: text.clone(),
        };
        Ok(meta)
    }

    /// The `__metadata__` map.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("format".into(), FORMAT.into()),
            ("format_version".into(), FORMAT_VERSION.to_string()),
            ("writer".into(), self.writer.clone()),
            ("model_type".into(), self.model_type.clone()),
            ("architectures".into(), json(&self.architectures)),
            (
                "num_hidden_layers".into(),
                self.num_hidden_layers.to_string(),
            ),
            ("hidden_size".into(), self.hidden_size.to_string()),
            ("vocab_size".into(), self.vocab_size.to_string()),
            ("dtype".into(), self.dtype.clone()),
            ("boundaries".into(), json(&self.boundaries)),
            ("prompt_lengths".into(), json(&self.prompt_lengths)),
            ("target_config".into(), json(&self.target_config)),
        ])
    }

    /// Reads and checks `__metadata__` of `file`, naming the field at fault.
    pub fn from_map(file: &Path, map: &BTreeMap<String, String>) -> Result<CaptureMeta> {
        let field = |k: &str| {
            map.get(k)
                .ok_or_else(|| EngineError::config(file, format!("__metadata__.{k}"), "missing"))
        };
        let bad = |k: &str, m: String| EngineError::config(file, format!("__metadata__.{k}"), m);
        match map.get("format").map(String::as_str) {
            Some(FORMAT) => {}
            other => {
                return Err(bad(
                    "format",
                    format!("{other:?}, not {FORMAT:?}: not a capture file (write one with `specula capture` or tools/capture/capture_hf.py)"),
                ))
            }
        }
        let version = field("format_version")?;
        if version.parse::<u32>().ok() != Some(FORMAT_VERSION) {
            return Err(bad(
                "format_version",
                format!("{version:?}; this build reads version {FORMAT_VERSION}"),
            ));
        }
        let count = |k: &str, max: usize| -> Result<usize> {
            let v = field(k)?;
            match v.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(bad(k, format!("{v:?} is not a whole number in 1..={max}"))),
            }
        };
        let list = |k: &str| -> Result<Vec<usize>> {
            serde_json::from_str(field(k)?)
                .map_err(|e| bad(k, format!("not a list of whole numbers: {e}")))
        };
        let layers = count("num_hidden_layers", MAX_LAYERS)?;
        let boundaries = list("boundaries")?;
        if boundaries.windows(2).any(|w| w[0] >= w[1]) || boundaries.iter().any(|&b| b >= layers) {
            return Err(bad(
                "boundaries",
                format!("{boundaries:?} must ascend, each below num_hidden_layers = {layers}"),
            ));
        }
        Ok(CaptureMeta {
            writer: field("writer")?.clone(),
            model_type: map.get("model_type").cloned().unwrap_or_default(),
            architectures: serde_json::from_str(field("architectures")?)
                .map_err(|e| bad("architectures", format!("not a list of names: {e}")))?,
            num_hidden_layers: layers,
            hidden_size: count("hidden_size", crate::config::MAX_WIDTH)?,
            vocab_size: count("vocab_size", crate::config::MAX_WIDTH)?,
            dtype: field("dtype")?.clone(),
            boundaries,
            prompt_lengths: list("prompt_lengths")?,
            target_config: serde_json::from_str(field("target_config")?)
                .map_err(|e| bad("target_config", format!("not JSON: {e}")))?,
        })
    }

    /// Bytes of one prompt of `tokens` tokens in the file.
    pub fn prompt_bytes(&self, tokens: usize) -> u64 {
        let t = tokens as u64;
        16 * t + 2 * t * self.hidden_size as u64 * self.boundaries.len() as u64
    }
}

/// The boundaries to store: `asked` (sorted, deduplicated, 0 added: a draft
/// without its own embedding reads token embeddings from boundary 0), or all
/// of `0..layers`. Refuses boundaries at or past `layers`.
pub fn pick_boundaries(
    asked: Option<&[usize]>,
    layers: usize,
) -> std::result::Result<Vec<usize>, String> {
    let Some(asked) = asked else {
        return Ok((0..layers).collect());
    };
    if let Some(b) = asked.iter().find(|&&b| b >= layers) {
        return Err(format!(
            "{b} is past the last boundary {} (the target has {layers} layers; hidden_states[{layers}] comes after the final norm and is never an aux state)",
            layers - 1
        ));
    }
    let mut v: Vec<usize> = asked.iter().copied().chain([0]).collect();
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// JSON text of a metadata value.
fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("metadata serialises")
}
