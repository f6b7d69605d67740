//! `specula capture` writes a capture file, and `specula audit --states`
//! reads it without the target: the same accuracies as the in-process
//! audit, in under 10 s, and one clear line (exit 2) for a file it cannot use.

use crate::common;

use crate::common::capture::{audit_states, capture_tiny_llama as capture};
use crate::common::{assert_bad_input, specula_in};
use serde_json::Value;
use specula_engine::capture_file::{CaptureFile, CaptureMeta, CaptureWriter, StatesSource};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn models() -> PathBuf {
    common::repo().join("models/tiny-llama")
}

fn audit_json(dir: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let o = specula_in(dir, args);
    let json = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), json)
}

/// Each candidate as (points, accuracy, positions), in rank order.
fn scores(r: &Value) -> Vec<(Value, f64, u64)> {
    r["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["points"].clone(),
                c["accuracy"].as_f64().unwrap(),
                c["positions"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_audit_from_a_capture_file_scores_every_mapping_as_the_in_process_audit_does() {
    let t = tempfile::tempdir().unwrap();
    let file = capture(t.path(), "tiny.capture.safetensors", &[]);
    let draft = models().join("eagle3-embed");
    let (draft, target, file) = (
        draft.to_str().unwrap(),
        models(),
        file.to_str().unwrap().to_string(),
    );
    let started = Instant::now();
    let (code, from_file) = audit_json(
        t.path(),
        &[
            "audit",
            "--states",
            &file,
            "--draft",
            draft,
            "--aux-layers",
            "2,4,5",
            "--json",
        ],
    );
    let took = started.elapsed();
    assert!(
        took.as_secs_f64() < 10.0,
        "the audit from a capture file took {took:?}, more than 10 s"
    );
    let (_, in_process) = audit_json(
        t.path(),
        &[
            "audit",
            "--target",
            target.to_str().unwrap(),
            "--draft",
            draft,
            "--aux-layers",
            "2,4,5",
            "--json",
        ],
    );
    assert_eq!(code, Some(1), "a mismatch exits 1: {from_file}");
    assert_eq!(
        scores(&from_file),
        scores(&in_process),
        "the accuracies differ"
    );
    assert_eq!(from_file["fix"], in_process["fix"]);
    assert_eq!(from_file["prompts"], 8);
    assert_eq!(from_file["states"]["origin"], file.as_str());
    assert!(from_file["states"]["writer"]
        .as_str()
        .unwrap()
        .starts_with("specula "));
}

#[test]
fn a_capture_file_holds_every_boundary_of_every_prompt_with_the_targets_metadata() {
    let t = tempfile::tempdir().unwrap();
    let file = capture(
        t.path(),
        "c.safetensors",
        &["--samples", "3", "--max-new-tokens", "5"],
    );
    let f = CaptureFile::open(&file).unwrap();
    let m = f.meta();
    assert_eq!(
        (m.num_hidden_layers, m.hidden_size, m.vocab_size),
        (8, 256, 8192)
    );
    assert_eq!(m.model_type, "llama");
    assert_eq!(m.architectures, ["LlamaForCausalLM"]);
    assert_eq!(
        m.boundaries,
        (0..8).collect::<Vec<_>>(),
        "all boundaries by default"
    );
    assert_eq!(f.prompt_count(), 3);
    for i in 0..3 {
        let p = f.prompt(i, &[0, 7]).unwrap();
        assert_eq!(
            p.tokens.len(),
            p.prompt_len + 5,
            "prompt {i}: the prompt and 5 greedy tokens"
        );
        // The continuation is the target's greedy choice, position by position.
        for k in p.prompt_len..p.tokens.len() {
            assert_eq!(p.tokens[k], p.argmax[k - 1], "prompt {i}, position {k}");
        }
        assert_eq!(p.hidden[&7].len(), p.tokens.len() * 256);
    }
}

#[test]
fn a_subset_of_boundaries_is_stored_with_boundary_0_always() {
    let t = tempfile::tempdir().unwrap();
    let file = capture(
        t.path(),
        "c.safetensors",
        &[
            "--samples",
            "2",
            "--max-new-tokens",
            "4",
            "--boundaries",
            "2,4,5",
        ],
    );
    assert_eq!(
        CaptureFile::open(&file).unwrap().meta().boundaries,
        [0, 2, 4, 5]
    );
}

#[test]
fn a_capture_never_overwrites_a_file() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("c.safetensors"), "keep").unwrap();
    let target = models();
    let o = specula_in(
        t.path(),
        &[
            "capture",
            "--target",
            target.to_str().unwrap(),
            "--out",
            "c.safetensors",
        ],
    );
    assert_bad_input(&o, &["c.safetensors", "exists"]);
    assert_eq!(
        std::fs::read_to_string(t.path().join("c.safetensors")).unwrap(),
        "keep"
    );
}

/// `specula audit --states FILE --draft eagle3-embed`: exit 2 and one line naming `needles`.
fn assert_audit_refuses(dir: &Path, file: &Path, needles: &[&str]) {
    let draft = models().join("eagle3-embed");
    let o = audit_states(dir, file.to_str().unwrap(), draft.to_str().unwrap(), &[]);
    assert_bad_input(&o, needles);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn a_truncated_capture_file_is_refused_naming_the_tensor_cut_off() {
    let t = tempfile::tempdir().unwrap();
    let file = capture(
        t.path(),
        "c.safetensors",
        &["--samples", "2", "--max-new-tokens", "4"],
    );
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
    assert_audit_refuses(
        t.path(),
        &file,
        &["c.safetensors", "truncated", "prompt.1.hidden.7"],
    );
    std::fs::write(&file, &bytes[..5]).unwrap();
    assert_audit_refuses(t.path(), &file, &["c.safetensors", "truncated"]);
}

#[test]
fn a_capture_without_the_boundaries_the_draft_is_served_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let file = capture(
        t.path(),
        "c.safetensors",
        &[
            "--samples",
            "2",
            "--max-new-tokens",
            "4",
            "--boundaries",
            "1,3",
        ],
    );
    // eagle3-embed names ids [-1, 2, 4]: served boundaries 0, 2 and 4.
    assert_audit_refuses(
        t.path(),
        &file,
        &["c.safetensors", "__metadata__.boundaries", "[2, 4]"],
    );
}

/// A small capture of width `hidden` whose first state is `first`.
fn handmade(path: &Path, hidden: usize, first: f32) {
    let config = serde_json::json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "num_hidden_layers": 8, "hidden_size": hidden, "vocab_size": 8192});
    let meta = CaptureMeta::for_target(&config, "test", "float32", None, path).unwrap();
    let mut w = CaptureWriter::create(path, meta).unwrap();
    w.begin_prompt(2, &[1, 2, 3, 4], &[2, 3, 4, 5]).unwrap();
    for b in 0..8 {
        let mut states = vec![0.5f32; 4 * hidden];
        states[0] = first;
        w.boundary(b, &states).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn a_capture_of_another_hidden_size_than_the_draft_reads_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("c.safetensors");
    handmade(&file, 128, 0.5);
    assert_audit_refuses(
        t.path(),
        &file,
        &["c.safetensors", "__metadata__.hidden_size", "128", "256"],
    );
}

#[test]
fn a_capture_holding_nan_is_refused_naming_the_tensor() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("c.safetensors");
    handmade(&file, 256, f32::NAN);
    assert_audit_refuses(
        t.path(),
        &file,
        &["c.safetensors", "prompt.0.hidden.0", "NaN"],
    );
}

#[test]
fn a_file_that_is_not_a_capture_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let weights = models().join("model.safetensors");
    assert_audit_refuses(
        t.path(),
        &weights,
        &["model.safetensors", "not a capture file"],
    );
}
