//! On GPU run folders `specula gate` judges absolute CUDA-event times per
//! span (prefill, draft, verify) within `gpu_span_tolerance` (3%): the
//! committed H200 baseline passes against itself, and a copy whose verify span
//! is 5% slower (what a slower target forward does, the baseline's rows
//! included) regresses with exit 1, although its same-run speedups moved
//! by no more than noise.

use crate::common;

use std::path::{Path, PathBuf};

/// A copy of results/baselines/h200 (results/h200/gpu-tiny-llama in the
/// current runs.csv schema: empty `method` and `request_rate` columns).
fn copy_of_h200_run(t: &Path, name: &str) -> PathBuf {
    let src = common::repo().join("results/baselines/h200");
    let dst = t.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["runs.csv", "positions.csv", "kernels.csv", "meta.json"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    dst
}

/// Multiplies the times of `span` in kernels.csv of `dir` by `factor`.
fn slow_span(dir: &Path, span: &str, factor: f64) {
    let p = dir.join("kernels.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let timed = ["mean_us", "p50_us", "p90_us", "p99_us", "max_us"].map(col);
    let out: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut c: Vec<String> = l.split(',').map(str::to_owned).collect();
            if i > 0 && c[col("span")] == span {
                for &t in &timed {
                    let v: f64 = c[t].parse().unwrap();
                    c[t] = format!("{:.3}", v * factor);
                }
            }
            c.join(",")
        })
        .collect();
    std::fs::write(&p, out.join("\n") + "\n").unwrap();
}

fn gate(b: &Path, c: &Path) -> (Option<i32>, serde_json::Value) {
    let policy = common::repo().join("bench/gate-gpu-policy.toml");
    let o = common::gate(b, c, &["--json", "--policy", policy.to_str().unwrap()]);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), v)
}

fn span_checks(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["measure"].as_str().unwrap().starts_with("gpu_us/"))
        .collect()
}

#[test]
fn the_h200_run_passes_against_itself_with_every_span_judged() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (
        copy_of_h200_run(t.path(), "a"),
        copy_of_h200_run(t.path(), "b"),
    );
    let (code, v) = gate(&a, &b);
    assert_eq!(code, Some(0), "{v:#}");
    let spans = span_checks(&v);
    // 8 speculative groups (4 draft configs x batch 1 and 4) x prefill, draft, verify.
    assert_eq!(spans.len(), 2 * 3 * 4, "{spans:#?}");
    assert!(spans.iter().all(|c| c["status"] == "pass"));
}

#[test]
fn a_verify_span_5_percent_slower_on_the_gpu_regresses() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (
        copy_of_h200_run(t.path(), "a"),
        copy_of_h200_run(t.path(), "b"),
    );
    slow_span(&b, "verify", 1.05);
    let (code, v) = gate(&a, &b);
    assert_eq!(code, Some(1), "{v:#}");
    let regressed: Vec<_> = span_checks(&v)
        .into_iter()
        .filter(|c| c["status"] == "regressed")
        .collect();
    assert_eq!(
        regressed.len(),
        8,
        "every speculative group's verify: {regressed:#?}"
    );
    assert!(regressed.iter().all(|c| c["measure"] == "gpu_us/verify"));
    slow_span(&b, "verify", 1.02 / 1.05);
    assert_eq!(gate(&a, &b).0, Some(0), "2% is within the 3% tolerance");
}
