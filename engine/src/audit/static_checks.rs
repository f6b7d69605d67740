//! Checks of a draft against its target that need no forward pass.

use crate::capture::{default_points, resolve_ids, IdConvention, AUX_STATES};
use crate::checkpoint::Checkpoint;
use crate::config::{read_json, DraftConfig, TargetConfig};
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

fn check(name: &'static str, status: CheckStatus, message: impl Into<String>) -> Check {
    Check {
        name,
        status,
        message: message.into(),
    }
}

/// Runs every static check of the draft in `draft_dir` against the target in
/// `target_dir`. Unreadable files give an error check rather than stopping.
pub fn static_checks(target_dir: &Path, draft_dir: &Path) -> Vec<Check> {
    use CheckStatus::{Error as Fail, Pass, Warn};
    let mut out = Vec::new();
    let target = match TargetConfig::load(target_dir) {
        Ok(t) => t,
        Err(e) => return vec![check("target_config", Fail, e.to_string())],
    };
    let draft = match DraftConfig::load(draft_dir) {
        Ok(d) => d,
        Err(e) => return vec![check("draft_config", Fail, e.to_string())],
    };
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

    // Does the config ask for aux states at all?
    let raw: Option<Value> = read_json(&draft.path, "config.json").ok();
    let use_aux = raw
        .as_ref()
        .and_then(|v| v.pointer("/eagle_config/use_aux_hidden_state"))
        .and_then(Value::as_bool);
    out.push(match use_aux {
        Some(false) => check("aux_states", Fail, "eagle_config.use_aux_hidden_state is false: the draft is served without target hidden states and accepts almost nothing (tau about 1.0)"),
        _ => check("aux_states", Pass, "the draft is fed target hidden states"),
    });

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
        Some(s) => check("fc_width", Fail, format!("fc.weight is {s:?}, expected {want:?}: fc input must be 3 x the target's hidden_size ({})", target.hidden_size)),
        None => check("fc_width", Fail, "fc.weight is missing"),
    });

    // Norms the midlayer and head need.
    let missing: Vec<&str> = [
        "midlayer.input_layernorm.weight",
        "midlayer.hidden_norm.weight",
        "midlayer.post_attention_layernorm.weight",
        "norm.weight",
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

    // Vocabulary sizes agree.
    let tok = TextTokenizer::load(target_dir).map(|t| t.vocab_size());
    let mut problems = Vec::new();
    if draft.vocab_size != target.vocab_size {
        problems.push(format!(
            "draft vocab_size {} != target vocab_size {}",
            draft.vocab_size, target.vocab_size
        ));
    }
    match tok {
        Ok(n) if n > target.vocab_size => problems.push(format!(
            "tokenizer has {n} tokens, more than the target's vocab_size {}",
            target.vocab_size
        )),
        Err(e) => problems.push(e.to_string()),
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
