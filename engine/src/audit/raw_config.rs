//! Static checks that read the draft's `config.json` as written (not as the
//! engine's loader resolves it) and its `t2d`: the layouts real bug reports
//! came from (docs/DESIGN.md section 5.2).

use super::static_checks::{check, Check, CheckStatus, TargetFacts};
use crate::checkpoint::Checkpoint;
use serde_json::Value;

/// Checks whose failure does not stop the draft from being loaded and scored.
pub(super) const NON_BLOCKING: [&str; 4] = [
    "layer_ids_agree",
    "id_past_last_layer",
    "config_keys",
    "t2d",
];

/// Draft config keys that change what the draft computes, with what they do
/// and who reads them, as recorded by this project (check the engine version you serve).
const ENGINE_KEYS: [(&str, bool, &str); 4] = [
    ("norm_before_fc", false, "an RMSNorm of the aux states before fc; specula's engine does not read this key, and an engine that does not serves the draft without the norm it was trained with"),
    ("fc_norm", false, "SpecForge's RMSNorm of each aux state before fc; specula reads it, an engine that does not feeds fc un-normed states"),
    ("norm_before_residual", false, "vLLM's residual taken after hidden_norm; specula reads it, an engine that does not adds the raw hidden state instead"),
    ("norm_output", true, "SpecForge's final norm before lm_head (false: none); specula reads it, an engine that does not always applies the norm"),
];

/// The layer ids at `pointer` (`/eagle_config/eagle_aux_hidden_state_layer_ids`, ...), if a list of integers.
fn ids_at(raw: &Value, pointer: &str) -> Option<Vec<i64>> {
    raw.pointer(pointer)?
        .as_array()?
        .iter()
        .map(Value::as_i64)
        .collect()
}

/// The id-placement and key checks of the draft config `raw` against `target`.
pub(super) fn raw_config_checks(raw: &Value, target: &TargetFacts) -> Vec<Check> {
    use CheckStatus::{Error as Fail, Pass, Warn};
    let nested = ids_at(raw, "/eagle_config/eagle_aux_hidden_state_layer_ids");
    let top = ids_at(raw, "/eagle_aux_hidden_state_layer_ids");
    let mut out = Vec::new();
    out.push(match (&nested, &top) {
        (Some(a), Some(b)) if a != b => check(
            "layer_ids_agree",
            Fail,
            format!("eagle_config.eagle_aux_hidden_state_layer_ids {a:?} and the top-level eagle_aux_hidden_state_layer_ids {b:?} differ: SGLang reads the first, vLLM the second, so the two engines feed the draft different states; keep one list"),
        ),
        (Some(_), Some(_)) => check("layer_ids_agree", Pass, "the ids are given in eagle_config and at the top level, alike"),
        _ => check("layer_ids_agree", Pass, "the ids are given in one place (or not at all)"),
    });
    let l = target.num_hidden_layers as i64;
    let all: Vec<i64> = nested.iter().chain(top.iter()).flatten().copied().collect();
    out.push(if all.contains(&l) {
        check(
            "id_past_last_layer",
            Fail,
            format!("layer id {l} equals num_hidden_layers: no decoder layer {l} exists. vLLM's DeepSeek, Kimi and GLM models capture only while running layers 0..{} and drop this id silently (the draft gets two states, not three); the stream after the last layer is never an aux state", l - 1),
        )
    } else if let Some(id) = all.iter().find(|&&id| id > l) {
        check("id_past_last_layer", Fail, format!("layer id {id} is past the target's {l} layers"))
    } else {
        check("id_past_last_layer", Pass, format!("every id is below num_hidden_layers = {l}"))
    });
    let mut notes = Vec::new();
    let mut status = Pass;
    for (key, default, what) in ENGINE_KEYS {
        match raw.get(key).and_then(Value::as_bool) {
            Some(v) if v != default => {
                status = if key == "norm_before_fc" || status == Fail {
                    Fail
                } else {
                    Warn
                };
                notes.push(format!("`{key}: {v}`: {what}"));
            }
            _ => {}
        }
    }
    out.push(if notes.is_empty() {
        check(
            "config_keys",
            Pass,
            "no key that only some engines read changes this draft",
        )
    } else {
        check(
            "config_keys",
            if status == Pass { Warn } else { status },
            notes.join("; "),
        )
    });
    out
}

/// `t2d` (target id -> kept in the draft vocabulary), when the draft has one:
/// one flag per target token, as many set as the draft head has rows.
pub(super) fn t2d_check(ck: &Checkpoint, draft_vocab: usize, target_vocab: usize) -> Check {
    use CheckStatus::{Error as Fail, Pass};
    let Some(shape) = ck.shape("t2d") else {
        return check("t2d", Pass, "no t2d (engines derive it from d2t)");
    };
    if shape != [target_vocab] {
        return check(
            "t2d",
            Fail,
            format!(
                "t2d has shape {shape:?}, expected [{target_vocab}] (one flag per target token)"
            ),
        );
    }
    match read_bool_tensor(&ck.file_of("t2d"), "t2d") {
        None => check(
            "t2d",
            Pass,
            format!("t2d {shape:?} fits the target vocabulary (its flags were not read)"),
        ),
        Some(flags) => {
            let set = flags.iter().filter(|&&f| f).count();
            if set == draft_vocab {
                check(
                    "t2d",
                    Pass,
                    format!("t2d flags {set} of {target_vocab} target tokens, one per draft id"),
                )
            } else {
                check("t2d", Fail, format!("t2d flags {set} target tokens, but the draft head has draft_vocab_size = {draft_vocab} rows"))
            }
        }
    }
}

/// The flags of a BOOL (or U8) tensor of a safetensors file, if readable.
fn read_bool_tensor(file: &std::path::Path, name: &str) -> Option<Vec<bool>> {
    let f = std::fs::File::open(file).ok()?;
    // SAFETY: read-only map of a weight file, read through safetensors' bounds-checked parser.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    let st = safetensors::SafeTensors::deserialize(&map).ok()?;
    let t = st.tensor(name).ok()?;
    matches!(t.dtype(), safetensors::Dtype::BOOL | safetensors::Dtype::U8)
        .then(|| t.data().iter().map(|&b| b != 0).collect())
}
