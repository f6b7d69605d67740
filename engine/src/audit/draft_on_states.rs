//! Loading a draft to be scored on captured states, with no target loaded:
//! the target's shape comes from the capture's metadata, and a draft without
//! its own embedding reads its token embeddings from boundary 0 (the
//! embedding output) of the captured prompts.

use crate::capture_file::StatesSource;
use crate::checkpoint::Checkpoint;
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::Eagle3Draft;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A draft ready to score captured states.
pub struct DraftOnStates {
    /// The loaded draft.
    pub draft: Eagle3Draft,
    /// Target token id -> row of the embedding table built from boundary 0,
    /// when the draft has no embedding of its own (else token ids are used as they are).
    rows: Option<HashMap<u32, u32>>,
}

impl DraftOnStates {
    /// The ids the draft's embedding lookup takes for `tokens`.
    pub fn embedding_ids(&self, tokens: &[u32]) -> Vec<u32> {
        match &self.rows {
            None => tokens.to_vec(),
            Some(rows) => tokens.iter().map(|t| rows[t]).collect(),
        }
    }
}

fn capture_field(source: &dyn StatesSource, field: &str, message: String) -> EngineError {
    EngineError::config(
        Path::new(&source.origin()),
        format!("__metadata__.{field}"),
        message,
    )
}

/// Refuses (naming the capture file and field) a capture of another hidden
/// size or vocabulary than the draft in `dir` reads: the capture is of another model.
pub fn check_capture_fits(dir: &Path, source: &dyn StatesSource) -> Result<()> {
    let meta = source.meta();
    let config = DraftConfig::load(dir)?;
    if config.target_hidden_size != meta.hidden_size {
        return Err(capture_field(
            source,
            "hidden_size",
            format!(
                "{}, but the draft in {} reads target hidden states of width {} (target_hidden_size; its fc takes 3 x that): the capture is of another model",
                meta.hidden_size,
                dir.display(),
                config.target_hidden_size
            ),
        ));
    }
    if config.vocab_size != meta.vocab_size {
        return Err(capture_field(
            source,
            "vocab_size",
            format!(
                "{}, but the draft in {} has vocab_size {}",
                meta.vocab_size,
                dir.display(),
                config.vocab_size
            ),
        ));
    }
    Ok(())
}

/// Loads the EAGLE-3 draft in `dir` against the target the capture is of,
/// refusing (naming the capture file and field) a capture of another hidden
/// size or vocabulary ([`check_capture_fits`]), or one without boundary 0
/// when the draft needs it.
pub fn load_draft_on_states(dir: &Path, source: &dyn StatesSource) -> Result<DraftOnStates> {
    let meta = source.meta();
    check_capture_fits(dir, source)?;
    let own_embedding = Checkpoint::open(dir)?.contains("embed_tokens.weight");
    let (table, rows) = if own_embedding {
        (Vec::new(), None)
    } else {
        if !meta.boundaries.contains(&0) {
            return Err(capture_field(
                source,
                "boundaries",
                format!("{:?} lacks 0, the embedding output, which the draft in {} needs (it has no embed_tokens and uses the target's)", meta.boundaries, dir.display()),
            ));
        }
        let (t, r) = embedding_rows(source)?;
        (t, Some(r))
    };
    let target = stand_in_target(source)?;
    let draft = Eagle3Draft::load(dir, &target, Arc::new(table))?;
    Ok(DraftOnStates { draft, rows })
}

/// The embedding row of every distinct token of the capture, from boundary 0.
fn embedding_rows(source: &dyn StatesSource) -> Result<(Vec<f32>, HashMap<u32, u32>)> {
    let h = source.meta().hidden_size;
    let mut table = Vec::new();
    let mut rows = HashMap::new();
    for i in 0..source.prompt_count() {
        let p = source.prompt(i, &[0])?;
        let e = &p.hidden[&0];
        for (k, &tok) in p.tokens.iter().enumerate() {
            rows.entry(tok).or_insert_with(|| {
                table.extend_from_slice(&e[k * h..(k + 1) * h]);
                (table.len() / h - 1) as u32
            });
        }
    }
    Ok((table, rows))
}

/// A target config with the capture's widths and the target's RoPE
/// settings (all a draft takes from its target), read through the engine's
/// own config reader from a scratch file.
fn stand_in_target(source: &dyn StatesSource) -> Result<TargetConfig> {
    let meta = source.meta();
    let tc = &meta.target_config;
    let mut config = json!({
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": meta.hidden_size,
        "intermediate_size": 1,
        "num_hidden_layers": meta.num_hidden_layers,
        "num_attention_heads": 1,
        "head_dim": 2,
        "vocab_size": meta.vocab_size,
    });
    let theta = tc
        .get("rope_theta")
        .or_else(|| tc.pointer("/rope_parameters/rope_theta"));
    if let Some(theta) = theta.and_then(Value::as_f64) {
        config["rope_theta"] = theta.into();
    }
    for key in ["rope_scaling", "rope_parameters"] {
        let v = tc.get(key).cloned().unwrap_or(Value::Null);
        let kind = v
            .get("rope_type")
            .or_else(|| v.get("type"))
            .and_then(Value::as_str);
        if kind == Some("llama3") {
            config[key] = v;
        }
    }
    let path = scratch_path();
    std::fs::write(&path, config.to_string()).map_err(|e| EngineError::write(&path, e))?;
    let loaded = TargetConfig::load_file(&path);
    let _ = std::fs::remove_file(&path);
    loaded.map_err(|e| {
        capture_field(
            source,
            "target_config",
            format!("does not describe a target a draft can be built against: {e}"),
        )
    })
}

fn scratch_path() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "specula-capture-target-{}-{}.json",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}
