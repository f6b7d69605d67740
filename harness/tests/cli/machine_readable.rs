//! Machine-readable output (issue 20, item 12): every run gets a
//! summary.json of numbers; compare, gate and audit print JSON whose numbers
//! are numbers, with one verdict, and the fix as ids and a convention; and no
//! Rust Debug text (`(Length)`, `(boundary, DraftConfig)`) reaches a user.

use crate::common::{copy_of_committed_baseline, ok, repo, specula_in, Csv};
use serde_json::Value;
use std::path::Path;

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn models() -> std::path::PathBuf {
    repo().join("models/tiny-llama")
}

#[test]
fn a_sweep_writes_summary_json_beside_runs_csv_with_numbers_as_numbers_and_report_writes_it_too() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    ok(&specula_in(
        &repo(),
        &[
            "sweep",
            "bench/sweeps/ci.toml",
            "--quiet",
            "--out",
            run.to_str().unwrap(),
        ],
    ));
    let csv = Csv::read(&run.join("runs.csv"));
    let summary = json_file(&run.join("summary.json"));
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(rows.len(), csv.rows.len(), "one entry per runs.csv row");
    assert_eq!(summary["run_id"], csv.rows[0]["run_id"].as_str());
    for (r, c) in rows.iter().zip(&csv.rows) {
        assert_eq!(r["row_key"], c["row_key"].as_str());
        let tau = r["tau"].as_f64().expect("tau is a number");
        assert!((tau - c["tau"].parse::<f64>().unwrap()).abs() < 1e-9);
        assert!(r["speedup"].is_f64() && r["cpu_speedup"].is_f64(), "{r}");
        assert!(r["steps"].is_u64() && r["batch_size"].is_u64(), "{r}");
        assert!(
            r["contended"].is_boolean() && r["lossless"].is_boolean(),
            "{r}"
        );
        if r["steps"] == 0 {
            assert!(r["accept_rate"].is_null(), "a baseline has no accept rate");
        }
    }
    let out = t.path().join("report");
    let wrote = ok(&specula_in(
        &repo(),
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(wrote.contains("summary.json"), "{wrote}");
    assert_eq!(json_file(&out.join("summary.json")), summary);
}

#[test]
fn compare_json_is_one_object_whose_changes_are_numbers() {
    let t = tempfile::tempdir().unwrap();
    let a = copy_of_committed_baseline(t.path(), "a");
    let b = copy_of_committed_baseline(t.path(), "b");
    let out = t.path().join("cmp");
    let text = ok(&specula_in(
        &repo(),
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    ));
    let report: Value = serde_json::from_str(&text).expect("stdout is one JSON object");
    let rows = report["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert_eq!(
        report["counts"]["within_noise"],
        rows.len(),
        "a run against itself"
    );
    assert_eq!(report["settings"]["noise_threshold"], 0.05);
    for row in rows {
        assert_eq!(row["verdict"], "within_noise");
        for c in row["changes"].as_array().unwrap() {
            assert!(
                c["a"].is_f64() && c["b"].is_f64() && c["relative"].is_f64(),
                "{c}"
            );
            assert!(c["n_a"].is_u64(), "{c}");
        }
    }
    for f in report["files"].as_array().unwrap() {
        assert!(Path::new(f.as_str().unwrap()).is_file(), "{f}");
    }
}

/// Regression: gate --json gave display strings (`"0.880..0.895"`,
/// `"0.866 (n=8)"`, `"+0.0% [-1.6%, +1.6%]"`) and no overall verdict.
#[test]
fn gate_json_gives_one_verdict_and_numbers_not_display_strings() {
    let t = tempfile::tempdir().unwrap();
    let a = copy_of_committed_baseline(t.path(), "a");
    let o = specula_in(
        &repo(),
        &[
            "gate",
            "--baseline",
            a.to_str().unwrap(),
            "--current",
            a.to_str().unwrap(),
            "--json",
        ],
    );
    let judged: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(judged["verdict"], "pass");
    let checks = judged["checks"].as_array().unwrap();
    assert_eq!(judged["counts"]["pass"], checks.len());
    for c in checks {
        for side in ["baseline", "current"] {
            let values = c[side].as_array().unwrap_or_else(|| panic!("{c}"));
            assert!(values.iter().all(|v| v.is_f64() || v.is_boolean()), "{c}");
        }
        assert!(c["change"].is_f64() || c["change"].is_null(), "{c}");
        if c["measure"] == "cpu_speedup" {
            assert_eq!(c["change"], 0.0);
            assert!(c["interval"]["lower"].as_f64().unwrap() <= 0.0, "{c}");
            assert!(c["interval"]["upper"].as_f64().unwrap() >= 0.0, "{c}");
        }
    }
    // A run whose tau dropped: verdict regression, exit 1, the drop as a number.
    let b = copy_of_committed_baseline(t.path(), "b");
    let path = b.join("runs.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let dropped = text.replace(",1.5897435897435896,", ",1.4897435897435896,");
    assert_ne!(text, dropped, "the s1k1n2 rows' tau is in the file");
    std::fs::write(&path, dropped).unwrap();
    let o = specula_in(
        &repo(),
        &[
            "gate",
            "--baseline",
            a.to_str().unwrap(),
            "--current",
            b.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let judged: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(judged["verdict"], "regression");
    let tau = checks_of(&judged, "tau", "regressed");
    assert!(!tau.is_empty());
    assert!(
        (tau[0]["change"].as_f64().unwrap() + 0.1).abs() < 1e-9,
        "{}",
        tau[0]
    );
}

fn checks_of<'a>(judged: &'a Value, measure: &str, status: &str) -> Vec<&'a Value> {
    judged["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["measure"] == measure && c["status"] == status)
        .collect()
}

/// Regression: `specula generate` printed `output 8 tokens (Length)` and
/// `capture: ids [2, 4, 5] (boundary, DraftConfig) -> ...`; audit printed
/// `(boundary, Override)`; fixtures printed the family as `Llama`.
#[test]
fn user_output_holds_no_rust_debug_text() {
    let (target, draft) = (models(), models().join("eagle3"));
    let text = ok(&specula_in(
        &repo(),
        &[
            "generate",
            "--target",
            target.to_str().unwrap(),
            "--draft",
            draft.to_str().unwrap(),
            "--steps",
            "3",
            "--prompt",
            "def fibonacci(n):",
            "--max-new-tokens",
            "8",
        ],
    ));
    assert!(text.contains("(finish reason: "), "{text}");
    assert!(
        text.contains("(from the draft's config, read as boundary)"),
        "{text}"
    );
    let embed = models().join("eagle3-embed");
    let o = specula_in(
        &repo(),
        &[
            "audit",
            "--target",
            target.to_str().unwrap(),
            "--draft",
            embed.to_str().unwrap(),
            "--aux-layers",
            "2,4,5",
            "--samples",
            "2",
            "--tokens",
            "8",
        ],
    );
    let audit = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        audit.contains("(given explicitly, read as boundary)"),
        "{audit}"
    );
    let t = tempfile::tempdir().unwrap();
    let fixtures = ok(&specula_in(
        t.path(),
        &[
            "fixtures",
            "random",
            "--out",
            t.path().join("fx").to_str().unwrap(),
        ],
    ));
    assert!(fixtures.contains("LlamaForCausalLM"), "{fixtures}");
    for (what, out) in [
        ("generate", &text),
        ("audit", &audit),
        ("fixtures", &fixtures),
    ] {
        for debug in [
            "Length)",
            "Eos)",
            "DraftConfig",
            "Override",
            "Llama)",
            "Some(",
            "None",
        ] {
            assert!(
                !out.contains(debug),
                "{what} printed Rust Debug text {debug:?}:\n{out}"
            );
        }
    }
}
