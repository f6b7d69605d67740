//! `specula gate` passes two runs of the same build, catches a planted
//! regression (a shallower draft: tau drops, exactly; a 20% slower verify
//! span: the same-run speedup drops, beyond the bootstrap interval), is
//! deterministic for given inputs, and refuses unusable input with exit
//! code 2 and a message naming the file and the column.

use crate::common;

use specula::run_folder::schema::RUNS_COLUMNS;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, OnceLock};

fn specula(args: &[&str]) -> Output {
    common::specula_in(&common::repo(), args)
}

/// Timed sweeps run one at a time, and nothing else of this file's beside
/// them (its tests run in parallel).
static TIMED: Mutex<()> = Mutex::new(());

fn gate_sweep(out: &Path, extra: &[&str]) {
    let _one_at_a_time = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = vec![
        "sweep",
        "bench/sweeps/gate.toml",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::ok(&specula(&args));
}

/// `specula gate`, never beside a timed sweep: on a 2-core CI machine any
/// process beside one disturbs its timing (a clean-clone CI run of daa1c21
/// judged the A/A pair 9.5% apart while this file's other tests ran their
/// gates beside the sweeps).
fn gate(baseline: &Path, current: &Path, extra: &[&str]) -> Output {
    let _not_beside_a_timing = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    common::gate(baseline, current, extra)
}

/// One baseline run of bench/sweeps/gate.toml shared by the tests.
fn baseline() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("base");
        gate_sweep(&base, &[]);
        (t, base)
    })
    .1
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Table lines of the summary for `measure` (`| row | measure | ... | status |`),
/// each once (a regression is listed first on its own, then among all checks).
fn lines_of<'a>(summary: &'a str, measure: &str) -> Vec<&'a str> {
    let tag = format!("| {measure} |");
    let mut v: Vec<&str> = summary.lines().filter(|l| l.contains(&tag)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn two_runs_of_the_same_build_pass_the_gate() {
    // The gate is a statistical decision and its timing check can be fooled
    // by the machine: on a shared 2-core VM the same-run speedup of two runs
    // of one build a minute apart has moved by 10% with the baselines' pace
    // within tolerance (a clean-clone CI run of bba0529, nothing beside the
    // sweeps, judged such a pair REGRESSED at -10.5% and -11.2%); in a slow
    // spell the baseline rows lose more pace than the speculative ones (here:
    // baseline -17.7%, speedups +7% to +12%). A pair judged a regression is
    // measured again as a fresh adjacent pair, up to three pairs: a gate that
    // calls every same-build pair a regression still fails here.
    let t = tempfile::tempdir().unwrap();
    let mut regressed = Vec::new();
    for attempt in 0..3 {
        let base = if attempt == 0 {
            baseline().to_path_buf()
        } else {
            let b = t.path().join(format!("base{attempt}"));
            gate_sweep(&b, &[]);
            b
        };
        let current = t.path().join(format!("current{attempt}"));
        gate_sweep(&current, &[]);
        let o = gate(&base, &current, &[]);
        let text = stdout(&o);
        for l in lines_of(&text, "tau") {
            assert!(
                l.ends_with("| pass |"),
                "greedy tau is equal to the bit: {l}"
            );
        }
        assert_eq!(lines_of(&text, "cpu_speedup").len(), 3, "{text}");
        // Never a regression of a deterministic measure; inconclusive (exit
        // 3) when the machine's load changed so that timing was not judged.
        match o.status.code() {
            Some(0) => {
                assert!(text.starts_with("# specula gate: PASS"), "{text}");
                return;
            }
            Some(3) => {
                assert!(
                    text.starts_with("# specula gate: INCONCLUSIVE")
                        && lines_of(&text, "cpu_speedup")
                            .iter()
                            .any(|l| l.contains("machine state differs")),
                    "{text}"
                );
                return;
            }
            Some(1) => {
                let timed_only = text
                    .lines()
                    .filter(|l| l.ends_with("| REGRESSED |"))
                    .all(|l| l.contains("| cpu_speedup |"));
                assert!(timed_only, "only timing may be judged off: {text}");
                eprintln!("attempt {attempt}: an A/A pair judged a timing regression:\n{text}");
                regressed.push(text);
            }
            other => panic!("exit {other:?}: {text}\n{}", stderr(&o)),
        }
    }
    panic!(
        "three same-build pairs in a row were judged regressions:\n{}",
        regressed.join("\n")
    );
}

#[test]
fn a_shallower_draft_fails_the_gate_on_tau_exactly() {
    let t = tempfile::tempdir().unwrap();
    let current = t.path().join("shallow");
    gate_sweep(&current, &["--inject-draft-steps", "1"]);
    let o = gate(baseline(), &current, &[]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}\n{}", stderr(&o));
    assert!(text.starts_with("# specula gate: REGRESSION"), "{text}");
    let tau = lines_of(&text, "tau");
    let regressed: Vec<_> = tau
        .iter()
        .filter(|l| l.ends_with("| REGRESSED |"))
        .collect();
    assert_eq!(
        regressed.len(),
        2,
        "both depth-3 configs lose tau: {tau:#?}"
    );
    assert!(
        tau.iter()
            .any(|l| l.contains(".s1k1n2.") && l.ends_with("| pass |")),
        "the depth-1 config is untouched: {tau:#?}"
    );
    assert!(lines_of(&text, "positions")
        .iter()
        .any(|l| l.contains("depths differ") || l.contains("REGRESSED")));
}

#[test]
fn a_verify_span_20_percent_slower_fails_the_gate_on_speedup() {
    // Speedup is judged only when the baselines ran at the same pace as in the
    // baseline run (the gate reports another machine state as not judged), so
    // each attempt runs its own baseline right before the slow run (a shared
    // baseline made in a busy spell left every later attempt unjudged: the
    // regression test of that), and on a busy machine the pair is repeated
    // until its timing is judged.
    let t = tempfile::tempdir().unwrap();
    for attempt in 0..8 {
        let base = t.path().join(format!("base{attempt}"));
        gate_sweep(&base, &[]);
        let current = t.path().join(format!("slow{attempt}"));
        gate_sweep(&current, &["--inject-verify-delay-pct", "20"]);
        let meta = std::fs::read_to_string(current.join("meta.json")).unwrap();
        assert!(
            meta.contains("\"verify_delay_pct\": 20.0"),
            "the hook is recorded: {meta}"
        );
        let o = gate(&base, &current, &[]);
        let text = stdout(&o);
        for m in ["tau", "accept_rate", "positions", "lossless"] {
            for l in lines_of(&text, m) {
                assert!(
                    l.ends_with("| pass |"),
                    "a slower verify changes no deterministic measure: {l}"
                );
            }
        }
        let timed = lines_of(&text, "cpu_speedup");
        if o.status.code() == Some(3) {
            assert!(
                timed.iter().any(|l| l.contains("machine state differs")),
                "inconclusive: {text}"
            );
            eprintln!("attempt {attempt}: the machine's load changed, timing not judged; again");
            continue;
        }
        if o.status.code() == Some(0) {
            // Judged, and the interval reached above -5%: on a 2-core machine
            // shared with other jobs a single pair of 8-repeat runs does not
            // always resolve a 20% slower verify (the gate's power, issue
            // 24); a gate that never resolves it fails below.
            eprintln!("attempt {attempt}: judged but not resolved:\n{text}");
            continue;
        }
        assert_eq!(o.status.code(), Some(1), "{text}\n{}", stderr(&o));
        assert!(timed.iter().any(|l| l.ends_with("| REGRESSED |")), "{text}");
        return;
    }
    panic!("a 20% slower verify was not found in 8 attempts (not judged or not resolved)");
}

// --- unusable input, on copies of the committed baseline (no sweep needed) ---

/// Rewrites runs.csv of `dir` line by line.
fn edit_runs(dir: &Path, f: impl Fn(usize, &str) -> Option<String>) {
    let p = dir.join("runs.csv");
    let text = std::fs::read_to_string(&p).unwrap();
    let out: Vec<String> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| f(i, l))
        .collect();
    std::fs::write(&p, out.join("\n") + "\n").unwrap();
}

fn assert_unusable(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {}\nstderr: {err}",
        stdout(o)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{err:?} names {n:?}");
    }
}

#[test]
fn the_committed_baseline_passes_against_itself_and_the_gate_is_deterministic() {
    let t = tempfile::tempdir().unwrap();
    let a = common::copy_of_committed_baseline(t.path(), "a");
    let b = common::copy_of_committed_baseline(t.path(), "b");
    let first = gate(&a, &b, &[]);
    let second = gate(&a, &b, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(stdout(&first), stdout(&second));
    assert_eq!(lines_of(&stdout(&first), "cpu_speedup").len(), 3);
    assert!(lines_of(&stdout(&first), "cpu_speedup")
        .iter()
        .all(|l| l.contains("| +0.0% [") && l.ends_with("| pass |")));
}

#[test]
fn a_current_run_without_the_tau_column_is_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    let tau = RUNS_COLUMNS.iter().position(|c| *c == "tau").unwrap();
    edit_runs(&cur, |_, l| {
        let mut cells: Vec<&str> = l.split(',').collect();
        cells.remove(tau);
        Some(cells.join(","))
    });
    assert_unusable(
        &gate(&base, &cur, &[]),
        &["cur/runs.csv", "missing column `tau`"],
    );
}

#[test]
fn runs_with_different_columns_are_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    edit_runs(&cur, |i, l| {
        Some(format!("{l},{}", if i == 0 { "extra" } else { "1" }))
    });
    assert_unusable(
        &gate(&base, &cur, &[]),
        &["base/runs.csv", "mismatched schemas", "`extra`"],
    );
}

#[test]
fn an_empty_run_is_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    edit_runs(&cur, |i, l| (i == 0).then(|| l.to_string()));
    assert_unusable(&gate(&base, &cur, &[]), &["cur/runs.csv", "no rows"]);
    let missing = t.path().join("nowhere");
    assert_unusable(
        &gate(&base, &missing, &[]),
        &["nowhere", "no such file or folder"],
    );
}

#[test]
fn baseline_rows_without_a_match_are_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    edit_runs(&cur, |i, l| {
        (i == 0 || !l.contains(".s3k2n5.")).then(|| l.to_string())
    });
    assert_unusable(
        &gate(&base, &cur, &[]),
        &[
            "cur/runs.csv",
            "8 of 32 baseline rows have no match",
            "s3k2n5",
        ],
    );
}

#[test]
fn a_non_numeric_measure_and_a_bad_policy_are_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    let policy = t.path().join("policy.toml");
    std::fs::write(&policy, "alpha = 2.0\n").unwrap();
    let p = policy.to_str().unwrap();
    assert_unusable(
        &gate(&base, &cur, &["--policy", p]),
        &["policy.toml", "alpha"],
    );
    std::fs::write(&policy, "noise = 0.1\n").unwrap();
    assert_unusable(
        &gate(&base, &cur, &["--policy", p]),
        &["policy.toml", "noise"],
    );
    let tau = RUNS_COLUMNS.iter().position(|c| *c == "tau").unwrap();
    edit_runs(&cur, |i, l| {
        let mut cells: Vec<String> = l.split(',').map(str::to_owned).collect();
        if i == 3 {
            cells[tau] = "fast".into();
        }
        Some(cells.join(","))
    });
    assert_unusable(
        &gate(&base, &cur, &[]),
        &["cur/runs.csv", "line 4", "`tau`", "\"fast\""],
    );
}

/// Sets column `col` of data line `line` (1: the first row) of runs.csv in `dir`.
fn set_cell(dir: &Path, line: usize, col: &str, value: &str) {
    let c = RUNS_COLUMNS.iter().position(|h| *h == col).unwrap();
    edit_runs(dir, |i, l| {
        let mut cells: Vec<String> = l.split(',').map(str::to_owned).collect();
        if i == line {
            cells[c] = value.into();
        }
        Some(cells.join(","))
    });
}

#[test]
fn regression_baseline_tau_nan_is_refused_not_passed_against_tau_1_01() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    set_cell(&base, 2, "tau", "NaN");
    set_cell(&cur, 2, "tau", "1.01");
    assert_unusable(
        &gate(&base, &cur, &[]),
        &[
            "base/runs.csv",
            "line 3",
            "`tau`",
            "\"NaN\" is not a finite number",
        ],
    );
    set_cell(&base, 2, "tau", "inf");
    assert_unusable(
        &gate(&base, &cur, &[]),
        &["base/runs.csv", "line 3", "`tau`", "\"inf\""],
    );
}

#[test]
fn a_policy_that_checks_only_tau_ignores_timings() {
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    let policy = t.path().join("policy.toml");
    std::fs::write(&policy, "measures = [\"tau\"]\n").unwrap();
    let o = gate(&base, &cur, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(lines_of(&text, "tau").len(), 3);
    assert!(lines_of(&text, "cpu_speedup").is_empty());
}

#[test]
fn regression_timings_not_judged_passed_the_gate_silently_now_inconclusive_exit_3() {
    // A planted 20% verify slowdown once passed with exit 0 because the
    // pace check refused to judge it (issue 24).
    let t = tempfile::tempdir().unwrap();
    let base = common::copy_of_committed_baseline(t.path(), "base");
    let cur = common::copy_of_committed_baseline(t.path(), "cur");
    // The current run's baselines ran 30% faster per CPU second: another machine state.
    let pace = RUNS_COLUMNS.iter().position(|h| *h == "cpu_tok_s").unwrap();
    edit_runs(&cur, |i, l| {
        let mut cells: Vec<String> = l.split(',').map(str::to_owned).collect();
        if i > 0 && cells.iter().any(|c| c.contains(".base.")) {
            let v: f64 = cells[pace].parse().unwrap();
            cells[pace] = format!("{}", v * 1.3);
        }
        Some(cells.join(","))
    });
    let o = gate(&base, &cur, &[]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(3), "{text}\n{}", stderr(&o));
    assert!(text.starts_with("# specula gate: INCONCLUSIVE"), "{text}");
    assert!(
        text.contains("What to do") && text.contains("fails the job on it (exit 3)"),
        "{text}"
    );
    assert!(stderr(&o).contains("inconclusive"), "{}", stderr(&o));
    let json = gate(&base, &cur, &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["verdict"], "inconclusive");
    // A policy may let it pass; the summary still says it is inconclusive.
    let policy = t.path().join("policy.toml");
    std::fs::write(&policy, "on_inconclusive = \"pass\"\n").unwrap();
    let o = gate(&base, &cur, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("# specula gate: INCONCLUSIVE"));
    assert!(stdout(&o).contains("lets it pass (exit 0)"));
}
