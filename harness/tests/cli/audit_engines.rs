//! The audit says what each engine (SGLang after and before PR #25454,
//! vLLM, SpecForge) would feed the draft, the accuracy it would reach, and
//! which engines mis-serve it (docs/DESIGN.md 5.3).

use crate::common::capture::{audit_states, capture_tiny_llama, edited_draft};
use crate::common::edit_json;
use serde_json::{json, Value};
use std::path::Path;

/// The audit's `engines` for a copy of eagle3-embed changed by `edit`, from a capture of tiny-llama.
fn engines(edit: impl FnOnce(&Path)) -> Vec<Value> {
    let t = tempfile::tempdir().unwrap();
    edited_draft(t.path(), "eagle3-embed", edit);
    capture_tiny_llama(t.path(), "c.safetensors", &[]);
    let o = audit_states(t.path(), "c.safetensors", "draft", &["--json"]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    r["engines"].as_array().unwrap().clone()
}

fn engine<'a>(all: &'a [Value], name: &str) -> &'a Value {
    all.iter()
        .find(|e| e["engine"] == name)
        .unwrap_or_else(|| panic!("no {name}: {all:?}"))
}

#[test]
fn the_embedding_draft_with_ids_only_under_eagle_config_is_mis_served_by_vllm_alone() {
    let all = engines(|_| {});
    let sglang = engine(&all, "sglang_boundary");
    assert_eq!(
        (&sglang["points"], &sglang["mis_serves"]),
        (&json!([0, 2, 4]), &json!(false))
    );
    let vllm = engine(&all, "vllm");
    assert_eq!(
        vllm["ids"],
        Value::Null,
        "vLLM reads no top-level ids: {vllm}"
    );
    assert_eq!(
        (&vllm["points"], &vllm["mis_serves"]),
        (&json!([2, 4, 5]), &json!(true)),
        "its default"
    );
    assert!(vllm["accuracy"].as_f64().unwrap() + 0.1 < sglang["accuracy"].as_f64().unwrap());
    assert_eq!(
        engine(&all, "spec_forge")["points"],
        json!([0, 3, 5]),
        "the output of layers -1, 2, 4"
    );
}

#[test]
fn vllm_drops_the_embedding_id_minus_one_given_at_the_top_level() {
    let all = engines(|d| {
        edit_json(&d.join("config.json"), |c| {
            c["eagle_aux_hidden_state_layer_ids"] = json!([-1, 2, 4])
        })
    });
    let vllm = engine(&all, "vllm");
    assert_eq!(
        (&vllm["points"], &vllm["mis_serves"]),
        (&Value::Null, &json!(true)),
        "{vllm}"
    );
    assert!(vllm["problem"].as_str().unwrap().contains("[-1]"), "{vllm}");
}
