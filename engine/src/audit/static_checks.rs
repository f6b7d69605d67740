//! Checks of a draft against its target that need no forward pass.

use super::raw_config::{raw_config_checks, t2d_check};
use crate::capture::{default_points, resolve_ids, IdConvention, AUX_STATES};
use crate::capture_file::CaptureMeta;
use crate::checkpoint::Checkpoint;
use crate::config::{read_json, DraftKind, TargetConfig};
use crate::model::draft_layout::layer_prefix;
use crate::tokenizer::TextTokenizer;
use serde_json::Value;
use std::path::Path;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Fine.
    #[serde(rename = "ok")]
    Pass,
    /// Worth a look; serving may still work.
    Warn,
    /// Serving this pair is broken.
    Error,
}

/// One static check.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    /// Short name (`fc_width`, `d2t`, ...).
    pub name: &'static str,
    /// Outcome.
    pub status: CheckStatus,
    /// What was found, in words.
    pub message: String,
}

pub(super) fn check(name: &'static str, status: CheckStatus, message: impl Into<String>) -> Check {
    Check {
        name,
        status,
        message: message.into(),
    }
}

/// What an fc of shape `s` reads, when its input is a multiple of the target width.
fn fc_reads(s: &[usize], target_hidden: usize) -> String {
    match s.get(1) {
        Some(&w) if w % target_hidden == 0 => {
            format!("; this fc reads {} target states", w / target_hidden)
        }
        Some(_) => "; this fc was made for a target of another width".into(),
        None => String::new(),
    }
}

impl Check {
    /// Whether a failure of this check means the pair cannot be loaded (the
    /// audit then stops before scoring mappings); the config-reading checks
    /// never block.
    pub fn blocks_loading(&self) -> bool {
        self.status == CheckStatus::Error && !super::raw_config::NON_BLOCKING.contains(&self.name)
    }
}

/// Does the config ask for aux states at all?
fn aux_states_check(raw: Option<&Value>) -> Check {
    let use_aux = raw
        .and_then(|v| v.pointer("/eagle_config/use_aux_hidden_state"))
        .and_then(Value::as_bool);
    match use_aux {
        Some(false) => check("aux_states", CheckStatus::Error, "eagle_config.use_aux_hidden_state is false: the draft is served without target hidden states and accepts almost nothing (tau about 1.0)"),
        _ => check("aux_states", CheckStatus::Pass, "the draft is fed target hidden states"),
    }
}

/// What the static checks need to know of the target: from its folder, or
/// from a capture file's metadata (then without a tokenizer).
#[derive(Debug, Clone)]
pub struct TargetFacts {
    /// Residual stream width.
    pub hidden_size: usize,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Decoder layers (L).
    pub num_hidden_layers: usize,
    /// `model_type` (`llama`, `deepseek_v3`, ...).
    pub model_type: String,
    /// Tokens of the target's tokenizer, or why it could not be read; `None` when there is none to read.
    pub tokenizer_vocab: Option<std::result::Result<usize, String>>,
}

impl TargetFacts {
    /// The facts of the target in `dir` (config.json and tokenizer.json).
    pub fn from_dir(dir: &Path) -> crate::Result<TargetFacts> {
        let t = TargetConfig::load(dir)?;
        let raw: Option<Value> = read_json(&dir.join("config.json"), "config.json").ok();
        Ok(TargetFacts {
            hidden_size: t.hidden_size,
            vocab_size: t.vocab_size,
            num_hidden_layers: t.num_hidden_layers,
            model_type: raw
                .as_ref()
                .and_then(|v| v.get("model_type"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            tokenizer_vocab: Some(
                TextTokenizer::load(dir)
                    .map(|t| t.vocab_size())
                    .map_err(|e| e.to_string()),
            ),
        })
    }

    /// The facts a capture file records.
    pub fn from_capture(meta: &CaptureMeta) -> TargetFacts {
        TargetFacts {
            hidden_size: meta.hidden_size,
            vocab_size: meta.vocab_size,
            num_hidden_layers: meta.num_hidden_layers,
            model_type: meta.model_type.clone(),
            tokenizer_vocab: None,
        }
    }
}

/// Runs every static check of the draft in `draft_dir` against the target in
/// `target_dir`. Unreadable files give an error check rather than stopping.
pub fn static_checks(target_dir: &Path, draft_dir: &Path) -> Vec<Check> {
    match TargetFacts::from_dir(target_dir) {
        Ok(t) => static_checks_for(&t, draft_dir),
        Err(e) => vec![check("target_config", CheckStatus::Error, e.to_string())],
    }
}

/// Runs every static check of the draft in `draft_dir` against a target
/// known by its facts.
pub fn static_checks_for(target: &TargetFacts, draft_dir: &Path) -> Vec<Check> {
    use CheckStatus::{Error as Fail, Pass, Warn};
    let mut out = Vec::new();
    // The config as written: what the loader may refuse is still reported.
    let raw: Option<Value> = read_json(&draft_dir.join("config.json"), "config.json").ok();
    let aux_states = aux_states_check(raw.as_ref());
    let draft = match crate::model::draft_config(draft_dir) {
        Ok(d) => d,
        Err(e) => return vec![check("draft_config", Fail, e.to_string()), aux_states],
    };
    if draft.kind() == DraftKind::Eagle {
        return vec![check(
            "generation",
            Pass,
            "an EAGLE-1/2 draft (fc over [embedding, last hidden state]): fed the target's last hidden state after its final norm; aux layer ids and capture mappings apply to EAGLE-3 drafts only",
        )];
    }
    let l = target.num_hidden_layers;
    // Capture points under each reading of the ids.
    let mut lines = vec![format!("default [2, L/2, L-3] = {:?}", default_points(l))];
    match &draft.aux_layer_ids {
        None => lines.push("the draft names no ids: engines use the default".into()),
        Some(ids) => {
            for conv in IdConvention::ALL {
                match resolve_ids(ids, conv, l) {
                    Ok(p) => lines.push(format!("{} reads {ids:?} as {p:?}", conv.name())),
                    Err(e) => lines.push(format!("{}: {e}", conv.name())),
                }
            }
        }
    }
    let readings: Vec<Option<Vec<usize>>> = match &draft.aux_layer_ids {
        None => vec![],
        Some(ids) => IdConvention::ALL
            .iter()
            .map(|&c| resolve_ids(ids, c, l).ok())
            .collect(),
    };
    let (status, note) = if !readings.is_empty() && readings.iter().all(Option::is_none) {
        (Fail, " -- no convention can serve these ids")
    } else if readings.windows(2).any(|w| w[0] != w[1]) {
        (Warn, " -- the two conventions disagree: make sure the serving engine uses the one the draft was trained with")
    } else {
        (Pass, "")
    };
    out.push(check(
        "capture_points",
        status,
        format!("{}{note}", lines.join("; ")),
    ));

    if let Some(raw) = &raw {
        out.extend(raw_config_checks(raw, target));
    }
    out.push(aux_states);

    let ck = match Checkpoint::open(draft_dir) {
        Ok(c) => c,
        Err(e) => {
            out.push(check("draft_weights", Fail, e.to_string()));
            return out;
        }
    };
    // fc consumes three target hidden states.
    let want = [draft.hidden_size, AUX_STATES * target.hidden_size];
    out.push(match ck.shape("fc.weight") {
        Some(s) if s == want => check("fc_width", Pass, format!("fc.weight {s:?} = [hidden, 3 x target hidden {}]", target.hidden_size)),
        Some(s) => check("fc_width", Fail, format!("fc.weight is {s:?}, expected {want:?}: fc input must be 3 x the target's hidden_size ({}){}", target.hidden_size, fc_reads(&s, target.hidden_size))),
        None => check("fc_width", Fail, "fc.weight is missing"),
    });

    // Norms the midlayer (under `midlayer.` or vLLM's `layers.0.`) and head need.
    let layer = layer_prefix(&ck);
    let missing: Vec<String> = [
        format!("{layer}.input_layernorm.weight"),
        format!("{layer}.hidden_norm.weight"),
        format!("{layer}.post_attention_layernorm.weight"),
        "norm.weight".to_string(),
    ]
    .into_iter()
    .filter(|n| !ck.contains(n))
    .collect();
    out.push(if missing.is_empty() {
        check(
            "norms",
            Pass,
            "input_layernorm, hidden_norm, post_attention_layernorm and norm are present",
        )
    } else {
        check("norms", Fail, format!("missing: {}", missing.join(", ")))
    });

    // d2t maps draft ids into the target vocabulary, one to one.
    out.push(match ck.i64("d2t", &[draft.draft_vocab_size], "draft_vocab_size") {
        Err(_) if !ck.contains("d2t") && draft.draft_vocab_size == draft.vocab_size => check(
            "d2t",
            Pass,
            "no d2t: the draft scores the whole vocabulary (draft id = target id)",
        ),
        Err(e) => check("d2t", Fail, e.to_string()),
        Ok(d2t) => {
            let targets: Vec<i64> = d2t.iter().enumerate().map(|(d, off)| d as i64 + off).collect();
            let out_of_range = targets.iter().filter(|&&t| t < 0 || t as usize >= target.vocab_size).count();
            let mut sorted = targets.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let duplicates = targets.len() - sorted.len();
            if out_of_range > 0 || duplicates > 0 {
                check("d2t", Fail, format!("{out_of_range} draft ids map outside the target vocabulary of {}, {duplicates} target ids are mapped twice", target.vocab_size))
            } else {
                check("d2t", Pass, format!("{} draft ids map one to one into the target vocabulary of {}", d2t.len(), target.vocab_size))
            }
        }
    });

    out.push(t2d_check(&ck, draft.draft_vocab_size, target.vocab_size));

    // Vocabulary sizes agree.
    let mut problems = Vec::new();
    if draft.vocab_size != target.vocab_size {
        problems.push(format!(
            "draft vocab_size {} != target vocab_size {}",
            draft.vocab_size, target.vocab_size
        ));
    }
    match &target.tokenizer_vocab {
        Some(Ok(n)) if *n > target.vocab_size => problems.push(format!(
            "tokenizer has {n} tokens, more than the target's vocab_size {}",
            target.vocab_size
        )),
        Some(Err(e)) => problems.push(e.clone()),
        _ => {}
    }
    out.push(if problems.is_empty() {
        check(
            "vocab",
            Pass,
            format!(
                "target {} tokens, draft head {} tokens",
                target.vocab_size, draft.draft_vocab_size
            ),
        )
    } else {
        check("vocab", Fail, problems.join("; "))
    });
    out
}
