//! Drafts as their publishers ship them, run through the binary: the EAGLE
//! authors' layout says the default capture applies, and an EAGLE-1/2
//! draft runs in a sweep beside an EAGLE-3 draft served both ways.

use crate::common::*;
use std::path::{Path, PathBuf};

fn layouts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/draft_layouts")
}

#[test]
fn generate_with_an_eagle_authors_draft_says_the_default_capture_applies() {
    let l = layouts();
    let out = specula_in(
        &l,
        &[
            "generate",
            "--target",
            "target",
            "--draft",
            "eagle-authors",
            "--prompt",
            "Hello",
            "--max-new-tokens",
            "8",
        ],
    );
    let stdout = ok(&out);
    assert!(
        stdout.contains("capture: default [2, L/2, L-3] -> [entering layer 2, entering layer 4, entering layer 5]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("names no eagle_aux_hidden_state_layer_ids")
            && stdout.contains("the engine default capture [2, L/2, L-3] applies"),
        "one line says why: {stdout}"
    );
}

#[test]
fn generate_with_an_eagle1_draft_feeds_it_the_last_hidden_state() {
    let out = specula_in(
        &layouts(),
        &[
            "generate",
            "--target",
            "target",
            "--draft",
            "eagle1-authors",
            "--prompt",
            "Hi",
            "--max-new-tokens",
            "8",
        ],
    );
    let stdout = ok(&out);
    assert!(
        stdout.contains("capture: the target's last hidden state (after its final norm)"),
        "{stdout}"
    );
}

#[test]
fn aux_layers_cannot_be_given_to_a_draft_served_as_eagle() {
    let out = specula_in(
        &layouts(),
        &[
            "generate",
            "--target",
            "target",
            "--draft",
            "specforge",
            "--served-as",
            "eagle",
            "--aux-layers",
            "1,2,3",
            "--prompt",
            "Hi",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("aux layer ids do not apply"), "{stderr}");
}

const GENERATIONS: &str = r#"
name = "generations"
max_new_tokens = 12
batch_sizes = [1]

[[drafts]]
steps = 3

[[drafts]]
steps = 3
served_as = "eagle"

[[prompt_sets]]
categories = ["code"]
sample = 2

[[models]]
name = "eagle3"
target = "LAYOUTS/target"
draft = "LAYOUTS/specforge"

[[models]]
name = "eagle1"
target = "LAYOUTS/target"
draft = "LAYOUTS/eagle1-authors"
"#;

#[test]
fn an_eagle1_draft_runs_in_a_sweep_beside_an_eagle3_draft_served_both_ways() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("generations.toml");
    let body = GENERATIONS.replace("LAYOUTS", layouts().to_str().unwrap());
    std::fs::write(&p, body).unwrap();
    let out = specula_in(
        t.path(),
        &[
            "sweep",
            p.to_str().unwrap(),
            "--out",
            "run",
            "--cpu-threads",
            "1",
        ],
    );
    ok(&out);
    let runs = Csv::read(&t.path().join("run/runs.csv"));
    let keys = runs.column("row_key");
    let resolved = runs.column("aux_layers_resolved");
    let lossless = runs.column("lossless");
    let row = |key: &str| {
        keys.iter()
            .position(|k| k.starts_with(key))
            .unwrap_or_else(|| panic!("no row {key}: {keys:?}"))
    };
    // EAGLE-3 fed its aux states; served as EAGLE it gets point L = 8, as
    // does the EAGLE-1/2 draft (whose own generation is EAGLE already).
    assert_eq!(resolved[row("eagle3.s3k1n4.")], "2;4;5");
    assert_eq!(resolved[row("eagle3.s3k1n4-as_eagle.")], "8");
    assert_eq!(resolved[row("eagle1.s3k1n4.")], "8");
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("eagle1.s3k1n4-as_eagle.")),
        "served as its own generation is a duplicate, not a second row: {keys:?}"
    );
    for (k, l) in keys.iter().zip(&lossless) {
        if !k.contains(".base.") {
            assert_eq!(l, "true", "{k}: lossless");
        }
    }
}

#[test]
fn a_draft_pickle_that_would_run_a_command_runs_nothing_and_is_one_line_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let draft = t.path().join("draft");
    std::fs::create_dir(&draft).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures/pytorch/malicious-draft");
    for f in ["config.json", "pytorch_model.bin"] {
        std::fs::copy(src.join(f), draft.join(f)).unwrap();
    }
    let target = layouts().join("target");
    let out = specula_in(
        t.path(),
        &[
            "generate",
            "--target",
            target.to_str().unwrap(),
            "--draft",
            "draft",
            "--prompt",
            "hi",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pytorch_model.bin") && stderr.contains("no tensor records"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        !t.path().join("specula-ran-pickle-code").exists(),
        "the pickle's os.system call ran"
    );
}
