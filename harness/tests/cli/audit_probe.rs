//! `specula audit --probe RUN`: from a served sweep's a_1 and the audit's
//! per-mapping predictions, which mapping is the server feeding? Tested
//! against `specula serve` started with the wrong `--aux-layers`.

use crate::common;

use crate::common::capture::{audit_states, capture_tiny_llama};
use crate::common::served::{have_models, models, BIN};
use crate::common::{assert_bad_input, ok, specula_in};
use serde_json::{json, Value};
use std::path::Path;

/// Sweeps eagle3-embed (steps 3, 8 built-in prompts, greedy) through the sglang
/// backend against `specula serve ... --aux-layers aux`, into `dir/name`.
fn served_sweep(dir: &Path, name: &str, aux: &str) {
    let m = models();
    let spec = format!(
        r#"name = "{name}"
max_new_tokens = 48
ignore_eos = true
batch_sizes = [1]
warmup = 0
backend = "sglang"

[server]
command = "{BIN} serve --target {{target}} --draft {{draft}} --steps {{steps}} --aux-layers {aux} --port {{port}}"

[[drafts]]
steps = 3

[[prompt_sets]]
sample = 8

[[models]]
name = "embed"
target = "{}"
draft = "{}"
chat_template = "none"
"#,
        m.display(),
        m.join("eagle3-embed").display()
    );
    std::fs::write(dir.join(format!("{name}.toml")), spec).unwrap();
    ok(&specula_in(
        dir,
        &["sweep", &format!("{name}.toml"), "--out", name, "--quiet"],
    ));
}

fn probe(dir: &Path, run: &str) -> (Option<i32>, Value) {
    let draft = models().join("eagle3-embed");
    let draft = draft.to_str().unwrap();
    let o = audit_states(dir, "c.safetensors", draft, &["--probe", run, "--json"]);
    (o.status.code(), serde_json::from_slice(&o.stdout).unwrap())
}

#[test]
fn a_server_started_with_the_wrong_aux_layers_is_named_feeding_them() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    capture_tiny_llama(t.path(), "c.safetensors", &[]);

    // Served the engine default [2, 4, 5] where the draft's config says [-1, 2, 4].
    served_sweep(t.path(), "wrong", "2,4,5");
    let (code, r) = probe(t.path(), "wrong");
    let row = &r["probe"][0];
    assert_eq!(row["backend"], "sglang");
    assert_eq!(row["configured"]["points"], json!([0, 2, 4]), "{row}");
    assert_eq!(row["feeds_configured"], false, "{row}");
    assert_eq!(
        row["closest"]["points"],
        json!([2, 4, 5]),
        "the probe names the served mapping: {row}"
    );
    assert_eq!(
        code,
        Some(1),
        "a server not feeding the configured mapping is a finding"
    );

    // Served as configured.
    served_sweep(t.path(), "right", "-1,2,4");
    let (code, r) = probe(t.path(), "right");
    assert_eq!(r["probe"][0]["feeds_configured"], true, "{r}");
    assert_eq!(code, Some(0));
}

#[test]
fn a_run_without_served_rows_cannot_be_probed() {
    if !have_models() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    capture_tiny_llama(
        t.path(),
        "c.safetensors",
        &["--samples", "2", "--max-new-tokens", "8"],
    );
    let run = common::copy_of_committed_baseline(t.path(), "cpu-run");
    let draft = models().join("eagle3-embed");
    let o = audit_states(
        t.path(),
        "c.safetensors",
        draft.to_str().unwrap(),
        &["--probe", run.to_str().unwrap()],
    );
    assert_bad_input(&o, &["cpu-run", "no sglang or vllm row"]);
}
