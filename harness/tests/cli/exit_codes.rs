//! The exit codes the README documents, one test each: 0 when all is well,
//! 1 for a regression or a failed write, 2 for unusable input. (130, an
//! interrupted sweep, is `sweep_cli::ctrl_c_leaves_valid_csv_and_the_run_resumes`.)
//! Inputs are copies of the committed CI baseline: no sweep runs here.

use crate::common;

use specula::run_folder::schema::RUNS_COLUMNS;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A folder nothing can be written into: without write permission, or,
/// for root (whom permissions do not stop), a file where the folder should be.
fn unwritable(t: &Path) -> PathBuf {
    let dir = t.join("read-only");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(dir.join("probe"), "").is_ok() {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "a file where a folder should be").unwrap();
    }
    dir
}

fn specula(t: &Path, args: &[&str]) -> Output {
    common::specula_in(t, args)
}

/// The gate judging the run `run` against itself.
const GATE_RUN_AGAINST_ITSELF: [&str; 5] = ["gate", "--baseline", "run", "--current", "run"];

fn code_and_error(o: &Output) -> (Option<i32>, String) {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (o.status.code(), err)
}

#[test]
fn a_report_and_a_passing_gate_exit_0() {
    let t = tempfile::tempdir().unwrap();
    let run = common::copy_of_committed_baseline(t.path(), "run");
    let report = specula(t.path(), &["report", "run", "--out", "report"]);
    assert_eq!(code_and_error(&report).0, Some(0));
    assert!(run.join("../report/report.html").is_file());
    let gate = specula(t.path(), &GATE_RUN_AGAINST_ITSELF);
    assert_eq!(code_and_error(&gate).0, Some(0));
}

#[test]
fn a_gate_that_finds_a_regression_exits_1() {
    let t = tempfile::tempdir().unwrap();
    common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    let col = |name: &str| RUNS_COLUMNS.iter().position(|c| *c == name).unwrap();
    let (tau, steps) = (col("tau"), col("steps"));
    let runs = cur.join("runs.csv");
    let text = std::fs::read_to_string(&runs).unwrap();
    let lower: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut cells: Vec<String> = l.split(',').map(str::to_owned).collect();
            let steps: usize = cells[steps].parse().unwrap_or(0);
            if i > 0 && steps > 0 {
                cells[tau] = "1.5".into();
            }
            cells.join(",")
        })
        .collect();
    std::fs::write(&runs, lower.join("\n") + "\n").unwrap();
    let o = specula(
        t.path(),
        &["gate", "--baseline", "base", "--current", "cur"],
    );
    let (code, err) = code_and_error(&o);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the gate found a regression"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("REGRESSED"));
}

/// Regression: a failed write of report.html, of compare's pages or of
/// `gate --markdown` exited 2 ("unusable input") where the README says 1.
#[test]
fn a_failed_write_exits_1_not_2() {
    let t = tempfile::tempdir().unwrap();
    common::copy_of_committed_baseline(t.path(), "run");
    let ro = unwritable(t.path());
    let under = |name: &str| ro.join(name).to_str().unwrap().to_string();
    let (report, compare, markdown, fixtures, sweep) = (
        under("report"),
        under("compare"),
        under("gate.md"),
        under("fixtures"),
        under("sweep"),
    );
    let (here, repo) = (t.path().to_path_buf(), common::repo());
    let cases: [(&str, &Path, Vec<&str>); 5] = [
        ("report", &here, vec!["report", "run", "--out", &report]),
        (
            "compare",
            &here,
            vec!["compare", "run", "run", "--out", &compare],
        ),
        (
            "gate --markdown",
            &here,
            [&GATE_RUN_AGAINST_ITSELF[..], &["--markdown", &markdown]].concat(),
        ),
        (
            "fixtures",
            &here,
            vec!["fixtures", "random", "--shape", "tiny", "--out", &fixtures],
        ),
        (
            "sweep --out",
            &repo,
            vec!["sweep", "bench/sweeps/ci.toml", "--quiet", "--out", &sweep],
        ),
    ];
    for (what, cwd, args) in cases {
        let (code, err) = code_and_error(&specula(cwd, &args));
        assert_eq!(code, Some(1), "{what}: {err}");
        assert!(
            err.contains("read-only"),
            "{what}: the error names the place: {err}"
        );
    }
}

#[test]
fn unusable_input_exits_2() {
    let t = tempfile::tempdir().unwrap();
    common::copy_of_committed_baseline(t.path(), "run");
    std::fs::write(t.path().join("policy.toml"), "alpha = 2\n").unwrap();
    let cases: [(&str, Vec<&str>); 3] = [
        ("a missing run folder", vec!["report", "nowhere"]),
        (
            "a policy out of range",
            [&GATE_RUN_AGAINST_ITSELF[..], &["--policy", "policy.toml"]].concat(),
        ),
        ("a missing spec", vec!["sweep", "--dry-run", "nowhere.toml"]),
    ];
    for (what, args) in cases {
        let (code, err) = code_and_error(&specula(t.path(), &args));
        assert_eq!(code, Some(2), "{what}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: one line: {err}");
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn regression_specula_gpu_in_a_build_without_cuda_said_only_unrecognized_subcommand() {
    let t = tempfile::tempdir().unwrap();
    for args in [&["gpu"][..], &["gpu", "bench", "--batch-sizes", "1,8"]] {
        let (code, err) = code_and_error(&specula(t.path(), args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("built without CUDA") && err.contains("--features cuda"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_truncated_or_corrupt_pytorch_bin_is_one_line_and_exit_2() {
    let src = common::repo().join("engine/tests/fixtures/pytorch/bin/target");
    for damage in ["truncated", "corrupt"] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("target");
        std::fs::create_dir(&dir).unwrap();
        for f in std::fs::read_dir(&src).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
        }
        let shard = dir.join("pytorch_model-00002-of-00002.bin");
        let mut bytes = std::fs::read(&shard).unwrap();
        if damage == "truncated" {
            bytes.truncate(bytes.len() / 3);
        } else {
            bytes[..256].fill(0);
        }
        std::fs::write(&shard, bytes).unwrap();
        let o = specula(
            t.path(),
            &["generate", "--target", "target", "--prompt", "hi"],
        );
        let (code, err) = code_and_error(&o);
        assert_eq!(code, Some(2), "{damage}: {err}");
        assert!(
            err.contains("pytorch_model-00002-of-00002.bin") && err.contains("PyTorch checkpoint"),
            "{damage}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{damage}: one line: {err}");
    }
}
