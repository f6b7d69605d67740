//! The static checks drawn from real bug reports (docs/DESIGN.md 5.2), on
//! copies of the committed `eagle3-embed` draft audited from a capture file:
//! ids in two places that disagree, an id equal to num_hidden_layers, a key
//! only some engines read, a t2d that does not fit. Each is named, exits 1,
//! and leaves the mapping ranking to run.

use crate::common::capture::{audit_states, capture_tiny_llama, edited_draft};
use crate::common::edit_json;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A capture of tiny-llama (2 prompts) and a copy of eagle3-embed changed by `edit`.
fn setup(edit: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let draft = edited_draft(t.path(), "eagle3-embed", edit);
    capture_tiny_llama(
        t.path(),
        "c.safetensors",
        &["--samples", "2", "--max-new-tokens", "8"],
    );
    (t, draft)
}

fn audit(t: &Path) -> (Option<i32>, Value) {
    let o = audit_states(t, "c.safetensors", "draft", &["--json"]);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), v)
}

/// The status and message of check `name`.
fn check(r: &Value, name: &str) -> (String, String) {
    let c = r["static_checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name);
    let c = c.unwrap_or_else(|| panic!("no check {name}: {r}"));
    (
        c["status"].as_str().unwrap().into(),
        c["message"].as_str().unwrap().into(),
    )
}

#[test]
fn the_committed_draft_passes_the_config_checks() {
    let (t, _) = setup(|_| {});
    let (code, r) = audit(t.path());
    assert_eq!(code, Some(0), "{r}");
    for name in [
        "layer_ids_agree",
        "id_past_last_layer",
        "config_keys",
        "t2d",
    ] {
        assert_eq!(check(&r, name).0, "ok", "{name}: {r}");
    }
}

#[test]
fn ids_at_the_top_level_that_disagree_with_eagle_config_fail_and_the_ranking_still_runs() {
    let (t, _) = setup(|d| {
        edit_json(&d.join("config.json"), |c| {
            c["eagle_aux_hidden_state_layer_ids"] = json!([2, 4, 5])
        })
    });
    let (code, r) = audit(t.path());
    let (status, message) = check(&r, "layer_ids_agree");
    assert_eq!((code, status.as_str()), (Some(1), "error"), "{r}");
    assert!(
        message.contains("[-1, 2, 4]") && message.contains("[2, 4, 5]") && message.contains("vLLM"),
        "{message}"
    );
    assert!(r["mismatch"].is_boolean(), "the ranking ran: {r}");
    assert!(r["candidates"].as_array().unwrap().len() >= 4, "{r}");
}

#[test]
fn an_id_equal_to_num_hidden_layers_is_named_as_the_id_vllm_drops() {
    let (t, _) = setup(|d| {
        edit_json(&d.join("config.json"), |c| {
            c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = json!([-1, 2, 8])
        })
    });
    let (code, r) = audit(t.path());
    let (status, message) = check(&r, "id_past_last_layer");
    assert_eq!((code, status.as_str()), (Some(1), "error"), "{r}");
    assert!(
        message.contains("layer id 8 equals num_hidden_layers") && message.contains("silently"),
        "{message}"
    );
}

#[test]
fn norm_before_fc_which_the_engine_ignores_fails() {
    let (t, _) = setup(|d| {
        edit_json(&d.join("config.json"), |c| {
            c["norm_before_fc"] = true.into()
        })
    });
    let (code, r) = audit(t.path());
    let (status, message) = check(&r, "config_keys");
    assert_eq!((code, status.as_str()), (Some(1), "error"), "{r}");
    assert!(message.contains("norm_before_fc"), "{message}");
}

#[test]
fn a_t2d_flagging_more_tokens_than_the_draft_head_has_rows_fails() {
    let (t, _) = setup(|d| set_first_cleared_t2d_flag(&d.join("model.safetensors")));
    let (code, r) = audit(t.path());
    let (status, message) = check(&r, "t2d");
    assert_eq!((code, status.as_str()), (Some(1), "error"), "{r}");
    assert!(
        message.contains("2049") && message.contains("2048"),
        "{message}"
    );
}

/// Sets one more flag of the BOOL tensor `t2d` in a safetensors file.
fn set_first_cleared_t2d_flag(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let offsets = &header["t2d"]["data_offsets"];
    let (begin, end) = (
        offsets[0].as_u64().unwrap() as usize,
        offsets[1].as_u64().unwrap() as usize,
    );
    let flags = &mut bytes[8 + n + begin..8 + n + end];
    *flags.iter_mut().find(|b| **b == 0).unwrap() = 1;
    std::fs::write(file, bytes).unwrap();
}
