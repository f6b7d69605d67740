//! `specula audit` names a capture mismatch and the ids that fix it, stays
//! quiet on a correctly served draft, and catches each broken draft file.

use crate::common;

use crate::common::edit_json;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use specula_engine::fixtures::{DraftShape, StoreDtype, TargetShape};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn models() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tiny-llama"))
}

fn audit(target: &Path, draft: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec![
        "audit",
        "--target",
        target.to_str().unwrap(),
        "--draft",
        draft.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_specula"))
        .args(&args)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

fn status(report: &serde_json::Value, check: &str) -> String {
    let c = report["static_checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == check)
        .unwrap_or_else(|| panic!("no check {check}"));
    c["status"].as_str().unwrap().to_string()
}

#[test]
fn the_embedding_trained_draft_served_with_the_default_layers_is_named_a_mismatch_with_its_fix() {
    let t0 = Instant::now();
    let (code, r) = audit(
        &models(),
        &models().join("eagle3-embed"),
        &["--aux-layers", "2,4,5"],
    );
    assert!(
        t0.elapsed().as_secs() < 60,
        "the audit must take under a minute on the CPU"
    );
    assert_eq!(code, Some(1), "a mismatch exits 1");
    assert_eq!(r["mismatch"], true);
    assert_eq!(r["configured"]["points"], serde_json::json!([2, 4, 5]));
    assert_eq!(
        r["best"]["points"],
        serde_json::json!([0, 2, 4]),
        "trained on [embeddings, entering 2, entering 4]"
    );
    // The fix as data: the ids to write and the convention to read them with.
    assert_eq!(r["fix"]["aux_layer_ids"], serde_json::json!([-1, 2, 4]));
    assert_eq!(r["fix"]["id_convention"], "boundary");
    assert_eq!(r["fix"]["points"], serde_json::json!([0, 2, 4]));
    let served = r["configured"]["accuracy"].as_f64().unwrap();
    let best = r["best"]["accuracy"].as_f64().unwrap();
    assert!(best > served + 0.1, "best {best} vs served {served}");
    assert!(r["candidates"].as_array().unwrap().len() >= 5);
}

#[test]
fn a_correctly_served_draft_has_no_mismatch() {
    for (draft, ids) in [("eagle3", None), ("eagle3-embed", Some("-1,2,4"))] {
        let extra: Vec<&str> = ids.map(|i| vec!["--aux-layers", i]).unwrap_or_default();
        let (code, r) = audit(&models(), &models().join(draft), &extra);
        assert_eq!(r["mismatch"], false, "{draft}: {r}");
        assert_eq!(code, Some(0));
        assert_eq!(r["best"]["points"], r["configured"]["points"], "{draft}");
    }
}

fn broken_pair(edit: impl FnOnce(&Path, &Path)) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (t, target, draft) = common::random_pair(4);
    edit(&target, &draft);
    (t, target, draft)
}

fn rewrite_draft(
    draft: &Path,
    change: impl FnOnce(&mut DraftShape, &mut Vec<usize>),
    drop: &[&str],
) {
    let mut shape = DraftShape::for_target(&TargetShape::named("tiny").unwrap(), None);
    let mut ids: Vec<usize> = (0..256).collect();
    change(&mut shape, &mut ids);
    let mut w = shape.random_weights(&mut ChaCha8Rng::seed_from_u64(5), StoreDtype::F32, &ids);
    for n in drop {
        w.remove(n);
    }
    w.write(&draft.join("model.safetensors")).unwrap();
}

#[test]
fn a_sound_random_pair_passes_every_static_check() {
    let (_t, target, draft) = broken_pair(|_, _| {});
    let (_, r) = audit(&target, &draft, &["--samples", "2", "--tokens", "8"]);
    for c in [
        "capture_points",
        "aux_states",
        "fc_width",
        "norms",
        "d2t",
        "vocab",
    ] {
        assert_eq!(status(&r, c), "ok", "{c}: {r}");
    }
}

#[test]
fn an_fc_narrower_than_three_target_widths_fails() {
    let (_t, target, draft) =
        broken_pair(|_, d| rewrite_draft(d, |s, _| s.target_hidden_size = 48, &[]));
    let (code, r) = audit(&target, &draft, &[]);
    assert_eq!(
        (code, status(&r, "fc_width")),
        (Some(1), "error".into()),
        "{r}"
    );
}

#[test]
fn a_d2t_that_maps_two_draft_ids_to_one_token_fails() {
    let (_t, target, draft) = broken_pair(|_, d| rewrite_draft(d, |_, ids| ids[7] = ids[6], &[]));
    let (_, r) = audit(&target, &draft, &[]);
    assert_eq!(status(&r, "d2t"), "error", "{r}");
}

#[test]
fn a_missing_hidden_norm_fails() {
    let (_t, target, draft) =
        broken_pair(|_, d| rewrite_draft(d, |_, _| {}, &["midlayer.hidden_norm.weight"]));
    let (_, r) = audit(&target, &draft, &[]);
    assert_eq!(status(&r, "norms"), "error", "{r}");
}

#[test]
fn a_draft_served_without_aux_states_fails() {
    let (_t, target, draft) = broken_pair(|_, d| {
        edit_json(&d.join("config.json"), |c| {
            c["eagle_config"]["use_aux_hidden_state"] = false.into()
        })
    });
    let (_, r) = audit(&target, &draft, &[]);
    assert_eq!(status(&r, "aux_states"), "error", "{r}");
}

#[test]
fn a_tokenizer_larger_than_the_vocabulary_fails() {
    let (_t, target, draft) = broken_pair(|t, d| {
        edit_json(&t.join("config.json"), |c| c["vocab_size"] = 300.into());
        edit_json(&d.join("config.json"), |c| c["vocab_size"] = 300.into());
    });
    let (_, r) = audit(&target, &draft, &[]);
    assert_eq!(status(&r, "vocab"), "error", "{r}");
}

#[test]
fn ids_past_the_last_layer_under_every_convention_fail() {
    let (_t, target, draft) = broken_pair(|_, d| {
        edit_json(&d.join("config.json"), |c| {
            c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = serde_json::json!([1, 2, 3])
        })
    });
    let (code, r) = audit(&target, &draft, &[]);
    assert_eq!(
        (code, status(&r, "capture_points")),
        (Some(1), "error".into()),
        "{r}"
    );
}

#[test]
fn ids_the_two_conventions_read_differently_are_a_warning() {
    let (_t, target, draft) = broken_pair(|_, d| {
        edit_json(&d.join("config.json"), |c| {
            c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = serde_json::json!([0, 1, 2])
        })
    });
    let (_, r) = audit(&target, &draft, &["--samples", "2", "--tokens", "8"]);
    assert_eq!(status(&r, "capture_points"), "warn", "{r}");
}

#[test]
fn regression_audit_with_two_aux_layer_ids_is_a_clear_error_not_a_panic() {
    // `--aux-layers 2,4` once panicked in draft.rs (exit 101) where generate and serve refused it.
    let models = models();
    let o = Command::new(env!("CARGO_BIN_EXE_specula"))
        .args(["audit", "--target"])
        .arg(&models)
        .arg("--draft")
        .arg(models.join("eagle3"))
        .args(["--aux-layers", "2,4"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("2 capture points") && err.contains("exactly 3"),
        "{err}"
    );
}
