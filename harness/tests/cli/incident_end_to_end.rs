//! The bug specula exists for, end to end (README, "Walk-through: a draft
//! fed the wrong layers"): the draft `eagle3-embed`, trained on
//! [embedding, entering layer 2, entering layer 4] of tiny-llama, served
//! with the engine default capture [2, L/2, L-3] = [2, 4, 5], is slower than
//! no speculation; the audit, run from a capture file alone, names the
//! mismatch and the config line that fixes it; served with that fix, tau recovers.

use crate::common;

use crate::common::capture::audit_states;
use crate::common::{ok, specula_in, Csv};
use serde_json::Value;

#[test]
fn a_draft_fed_the_default_layers_is_slower_than_no_speculation_and_the_audit_of_a_capture_file_fixes_it(
) {
    let t = tempfile::tempdir().unwrap();
    let models = common::repo().join("models/tiny-llama");
    let draft = models.join("eagle3-embed");
    let (models_s, draft_s) = (models.to_str().unwrap(), draft.to_str().unwrap());

    // 1. The target's states, captured once; the target is not needed after this.
    ok(&specula_in(
        t.path(),
        &[
            "capture",
            "--target",
            models_s,
            "--out",
            "tiny.capture.safetensors",
        ],
    ));

    // 2. The audit of the draft, served the default capture, from the file alone.
    let served = ["--aux-layers", "2,4,5"];
    let o = audit_states(t.path(), "tiny.capture.safetensors", draft_s, &served);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "a mismatch exits 1: {text}");
    assert!(
        text.contains("MISMATCH: the draft predicts best with capture points [0, 2, 4]"),
        "{text}"
    );
    assert!(text.contains("but is served [2, 4, 5]"), "{text}");
    let fix_line = r#"fix: "eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 2, 4]}, read with the boundary convention"#;
    assert!(text.contains(fix_line), "{text}");
    let served_json = ["--aux-layers", "2,4,5", "--json"];
    let o = audit_states(t.path(), "tiny.capture.safetensors", draft_s, &served_json);
    let audit: Value = serde_json::from_slice(&o.stdout).unwrap();
    let fix: Vec<String> = audit["fix"]["aux_layer_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap().to_string())
        .collect();

    // 3. Serve it both ways beside plain decoding: the default capture, and the audit's fix.
    let spec = format!(
        r#"name = "incident"
max_new_tokens = 48
ignore_eos = true
batch_sizes = [1]
temperatures = [0]
[[models]]
name = "eagle3-embed"
target = "{models_s}"
draft = "{draft_s}"
chat_template = "none"
[[drafts]]
steps = 5
aux_layers = [2, 4, 5]
[[drafts]]
steps = 5
aux_layers = [{}]
[[prompt_sets]]
source = "builtin"
sample = 8
"#,
        fix.join(", ")
    );
    std::fs::write(t.path().join("incident.toml"), spec).unwrap();
    ok(&specula_in(
        t.path(),
        &[
            "--cpu-threads",
            "1",
            "sweep",
            "incident.toml",
            "--out",
            "run",
            "--quiet",
        ],
    ));
    let runs = Csv::read(&t.path().join("run/runs.csv"));
    let row = |points: &str| {
        runs.rows
            .iter()
            .find(|r| r["steps"] != "0" && r["aux_layers_resolved"] == points)
            .unwrap_or_else(|| panic!("no row served {points}"))
            .clone()
    };
    let num =
        |r: &std::collections::BTreeMap<String, String>, c: &str| r[c].parse::<f64>().unwrap();
    let (default, fixed) = (row("2;4;5"), row("0;2;4"));
    assert!(
        num(&default, "cpu_speedup") < 1.0,
        "served the default capture, the draft must be slower than no speculation: cpu_speedup {}",
        default["cpu_speedup"]
    );
    assert!(
        num(&fixed, "tau") > num(&default, "tau") + 0.4,
        "with the fix tau recovers: {} fixed vs {} served the default",
        fixed["tau"],
        default["tau"]
    );
    assert!(num(&fixed, "cpu_speedup") > num(&default, "cpu_speedup"));
}
