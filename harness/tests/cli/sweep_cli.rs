//! `specula sweep` and `specula merge`, run as a user would, on a random tiny
//! model pair written into a temp folder.

use crate::common::*;
use specula::run_folder::schema::{KERNELS_COLUMNS, POSITIONS_COLUMNS, RUNS_COLUMNS};
use specula_engine::timing::Span;
use std::collections::BTreeSet;
use std::path::Path;

const SMALL: &str = r#"
name = "small"
max_new_tokens = 8
batch_sizes = [1, 2]
temperatures = [0, 0.7]

[[drafts]]
steps = [1, 2]
topk = [1, 2]

[[drafts]]
steps = 2
num_draft_tokens = 6     # more than steps * topk + 1: listed as skipped

[[prompt_sets]]
categories = ["code"]
sample = 3
"#;

#[test]
fn a_small_spec_writes_every_file_with_the_documented_columns() {
    let t = workspace();
    let spec = spec(t.path(), "small.toml", SMALL);
    let out = specula_in(
        t.path(),
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            "run",
            "--cpu-threads",
            "1",
        ],
    );
    let stdout = ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("skipped rnd steps=2 topk=1 num_draft_tokens=6: invalid num_draft_tokens"),
        "the invalid point is listed with its reason: {stderr}"
    );
    assert!(
        stdout.contains("row_key") && stdout.contains("wrote 20 rows"),
        "{stdout}"
    );
    let run = t.path().join("run");

    let runs = Csv::read(&run.join("runs.csv"));
    assert_eq!(runs.header, RUNS_COLUMNS);
    // 2 batch sizes x 2 temperatures, each a baseline + 4 draft configs.
    assert_eq!(runs.rows.len(), 20);
    for r in &runs.rows {
        let baseline = r["steps"] == "0";
        assert_eq!(r["prompts"], "3");
        assert_eq!(r["prompt_set"], "builtin");
        assert_eq!(r["target"], "fx/target");
        assert_eq!(r["backend"], "cpu");
        assert_eq!(r["dtype"], "float32");
        assert_eq!(r["aux_layers_resolved"].is_empty(), baseline);
        assert_eq!(
            r["lossless"],
            if r["temperature"] == "0" { "true" } else { "" },
            "{r:?}"
        );
        if baseline {
            assert_eq!(r["speedup"], "1.0000");
            assert_eq!(r["tau"], "1");
        }
        assert!(r["throughput_tok_s"].parse::<f64>().unwrap() > 0.0);
    }

    let positions = Csv::read(&run.join("positions.csv"));
    assert_eq!(positions.header, POSITIONS_COLUMNS);
    let steps: usize = runs
        .rows
        .iter()
        .map(|r| r["steps"].parse::<usize>().unwrap())
        .sum();
    assert_eq!(
        positions.rows.len(),
        steps,
        "one row per position of every speculative row"
    );

    let kernels = Csv::read(&run.join("kernels.csv"));
    assert_eq!(kernels.header, KERNELS_COLUMNS);
    let spans: BTreeSet<String> = kernels.column("span").into_iter().collect();
    for s in Span::ALL.map(Span::name) {
        assert!(spans.contains(s), "span {s} missing from kernels.csv");
    }
    let counts = histogram_counts(&run);
    assert_eq!(
        counts.len(),
        kernels.rows.len(),
        "one histogram per (row, span)"
    );
    for k in &kernels.rows {
        assert_eq!(
            counts[&(k["row_key"].clone(), k["span"].clone())].to_string(),
            k["count"],
            "the hlog holds every sample of kernels.csv"
        );
    }

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "finished");
    assert_eq!(meta["rows_written"], 20);
    assert_eq!(meta["histogram_unit"], "ns");
    assert_eq!(meta["spec"]["max_new_tokens"], 8);
    assert_eq!(meta["cpu_threads"], 1, "--cpu-threads is recorded");
    assert_eq!(meta["spec"]["threads"], 1, "as the spec's threads");
    assert!(meta["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(meta["crate_versions"]["specula-engine"].is_string());
    assert!(meta["git_rev"].is_string());
    assert_eq!(meta["skipped"].as_array().unwrap().len(), 1);
    assert!(run.join("spec.toml").exists());
}

#[test]
fn four_shards_merged_equal_one_unsharded_run() {
    let t = workspace();
    let spec = spec(t.path(), "s.toml", SMALL);
    let spec = spec.to_str().unwrap();
    ok(&specula_in(
        t.path(),
        &["sweep", spec, "-q", "--out", "whole"],
    ));
    let mut shards = Vec::new();
    for i in 0..4 {
        let dir = format!("shard-{i}");
        let s = format!("{i}/4");
        ok(&specula_in(
            t.path(),
            &[
                "sweep", spec, "-q", "--shard", &s, "--run-id", "sh", "--out", &dir,
            ],
        ));
        shards.push(dir);
    }
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--out", "merged"]);
    ok(&specula_in(t.path(), &args));

    let whole = Csv::read(&t.path().join("whole/runs.csv")).by_key();
    let merged = Csv::read(&t.path().join("merged/runs.csv")).by_key();
    assert_eq!(whole.len(), 20);
    assert_eq!(
        whole.keys().collect::<Vec<_>>(),
        merged.keys().collect::<Vec<_>>()
    );
    for (key, w) in &whole {
        for col in identity_and_deterministic() {
            assert_eq!(w[col], merged[key][col], "{key}: column {col}");
        }
    }
    assert_eq!(
        histogram_counts(&t.path().join("whole")),
        histogram_counts(&t.path().join("merged")),
        "every (row, span) histogram has the same sample count"
    );
    assert_eq!(
        requests_per_row(&t.path().join("whole")),
        requests_per_row(&t.path().join("merged")),
        "the merged requests.csv has every shard's lines"
    );

    // A shard given twice is a duplicate, refused with its row key.
    let again = specula_in(t.path(), &["merge", "shard-0", "shard-0", "--out", "twice"]);
    assert_eq!(again.status.code(), Some(2));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("refusing to merge a row twice"), "{err}");
    assert!(!t.path().join("twice").exists());
}

/// Waits until `runs` has at least `rows` data rows (or the child exits).
fn wait_for_rows(child: &mut std::process::Child, runs: &Path, rows: usize) {
    let t0 = std::time::Instant::now();
    loop {
        let n = std::fs::read_to_string(runs).map_or(0, |s| s.lines().count().saturating_sub(1));
        if n >= rows {
            return;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before {rows} rows"
        );
        assert!(t0.elapsed().as_secs() < 60, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

const SLOW: &str = r#"
name = "slow"
max_new_tokens = 48
ignore_eos = true
batch_sizes = [1, 2, 3]
repeats = 2

[[drafts]]
steps = [1, 2, 3]
topk = [1, 2]

[[prompt_sets]]
sample = 4
"#;

fn kill_and_resume(signal: i32, expect_code: Option<i32>) {
    let t = workspace();
    let spec = spec(t.path(), "slow.toml", SLOW);
    let mut child = command(
        t.path(),
        &["sweep", spec.to_str().unwrap(), "-q", "--out", "run"],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let run = t.path().join("run");
    wait_for_rows(&mut child, &run.join("runs.csv"), 3);

    // While it runs, nobody else may write into its folder.
    let other = specula_in(t.path(), &["sweep", "--resume", "run"]);
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&other.stderr).contains("another sweep is writing"));

    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), expect_code);
    let before = Csv::read(&run.join("runs.csv"));
    assert!(
        before.rows.len() >= 3 && before.rows.len() < 42,
        "{} rows",
        before.rows.len()
    );

    let stdout = ok(&specula_in(t.path(), &["sweep", "--resume", "run", "-q"]));
    assert!(stdout.contains("wrote 42 rows"), "{stdout}");
    let after = Csv::read(&run.join("runs.csv"));
    assert_eq!(
        after.rows.len(),
        42,
        "3 batch sizes x 2 repeats x (baseline + 6 configs)"
    );
    assert_eq!(
        &after.rows[..before.rows.len()],
        &before.rows[..],
        "finished rows are kept as they were"
    );
    let keys: BTreeSet<String> = after.column("row_key").into_iter().collect();
    assert_eq!(keys.len(), 42, "no row is duplicated");
    assert!(after.rows.iter().all(|r| r["lossless"] == "true"));
    let kernels = Csv::read(&run.join("kernels.csv"));
    let counts = histogram_counts(&run);
    assert_eq!(
        counts.len(),
        kernels.rows.len(),
        "no histogram or kernels line of a dropped row survives"
    );
    let positions = Csv::read(&run.join("positions.csv"));
    let steps: usize = after
        .rows
        .iter()
        .map(|r| r["steps"].parse::<usize>().unwrap())
        .sum();
    assert_eq!(positions.rows.len(), steps);
    assert_eq!(
        requests_per_row(&run),
        after
            .rows
            .iter()
            .map(|r| (r["row_key"].clone(), r["prompts"].parse::<usize>().unwrap()))
            .collect(),
        "requests.csv: one line per prompt of each finished row, none of a dropped row"
    );
}

/// requests.csv's lines per row key.
fn requests_per_row(run: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut n = std::collections::BTreeMap::new();
    for r in Csv::read(&run.join("requests.csv")).rows {
        *n.entry(r["row_key"].clone()).or_insert(0) += 1;
    }
    n
}

#[test]
fn a_sweep_killed_mid_way_resumes_without_losing_or_duplicating_rows() {
    kill_and_resume(libc::SIGKILL, None);
}

#[test]
fn ctrl_c_leaves_valid_csv_and_the_run_resumes() {
    kill_and_resume(libc::SIGINT, Some(130));
}

#[test]
fn an_existing_run_folder_is_never_reused() {
    let t = workspace();
    let spec = spec(
        t.path(),
        "s.toml",
        "max_new_tokens = 2\n[[prompt_sets]]\nsample = 1\n",
    );
    ok(&specula_in(
        t.path(),
        &["sweep", spec.to_str().unwrap(), "-q", "--out", "run"],
    ));
    let again = specula_in(
        t.path(),
        &["sweep", spec.to_str().unwrap(), "-q", "--out", "run"],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}

#[test]
fn a_malformed_spec_gives_its_file_and_line_and_exit_2() {
    let t = workspace();
    let spec = spec(
        t.path(),
        "bad.toml",
        "name = \"x\"\nbatch_sizes = [1,, 2]\n",
    );
    let out = specula_in(t.path(), &["sweep", spec.to_str().unwrap()]);
    assert_bad_input(&out, &["bad.toml:2:"]);
}

#[test]
fn an_unknown_field_gives_its_line_and_exit_2() {
    let t = workspace();
    let spec = spec(
        t.path(),
        "typo.toml",
        "name = \"x\"\n\n[[drafts]]\nsteps = 3\ntop_k = 2\n",
    );
    let out = specula_in(t.path(), &["sweep", spec.to_str().unwrap()]);
    assert_bad_input(&out, &["typo.toml:5:1", "unknown field `top_k`"]);
    let spec = spec_at_top(t.path());
    let out = specula_in(t.path(), &["sweep", spec.to_str().unwrap()]);
    assert_bad_input(&out, &["top.toml:2:1", "unknown field `max_tokens`"]);
}

/// The test binary is built without `--features cuda`.
#[test]
fn a_gpu_sweep_in_a_build_without_the_gpu_backend_says_how_to_build_one_and_exits_2() {
    let t = workspace();
    let gpu = spec(t.path(), "gpu.toml", "name = \"x\"\ndevice = \"cuda\"\n");
    let out = specula_in(t.path(), &["sweep", gpu.to_str().unwrap()]);
    assert_bad_input(&out, &["gpu.toml:2:1", "field `device`", "--features cuda"]);
    let tpu = spec(t.path(), "tpu.toml", "name = \"x\"\ndevice = \"tpu\"\n");
    let out = specula_in(t.path(), &["sweep", tpu.to_str().unwrap()]);
    assert_bad_input(&out, &["tpu.toml:2:", "cpu", "cuda"]);
}

fn spec_at_top(dir: &Path) -> std::path::PathBuf {
    spec(dir, "top.toml", "name = \"x\"\nmax_tokens = 3\n")
}

#[test]
fn a_bad_prompt_file_gives_its_line_and_exit_2() {
    let t = workspace();
    std::fs::write(
        t.path().join("p.jsonl"),
        "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"\n",
    )
    .unwrap();
    let bad = spec(
        t.path(),
        "s.toml",
        "[[prompt_sets]]\nsource = \"p.jsonl\"\n",
    );
    let out = specula_in(t.path(), &["sweep", bad.to_str().unwrap()]);
    assert_bad_input(&out, &["p.jsonl:2", "malformed JSON"]);
    let zero = spec(t.path(), "v.toml", "repeats = 0\n");
    assert_bad_input(
        &specula_in(t.path(), &["sweep", zero.to_str().unwrap()]),
        &["v.toml:1:1", "`repeats` must be at least 1"],
    );
}

#[test]
fn the_committed_sweeps_parse_and_expand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    if !root.join("models/tiny-llama/config.json").exists() {
        eprintln!("SKIPPED: models/tiny-llama is not in this checkout");
        return;
    }
    for spec in ["bench/sweeps/default.toml", "bench/sweeps/ci.toml"] {
        let stdout = ok(&specula_in(root, &["sweep", spec, "--dry-run"]));
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("run tiny-llama.base.b1.builtin.t0.r0")),
            "{spec}: {stdout}"
        );
        assert!(
            stdout.lines().all(|l| l.starts_with("run ")),
            "{spec}: {stdout}"
        );
    }
}

#[test]
fn span_recording_can_be_switched_off_and_its_overhead_is_reported() {
    let t = workspace();
    let spec = spec(
        t.path(),
        "s.toml",
        "max_new_tokens = 6\nspans = [\"on\", \"off\"]\n[[drafts]]\nsteps = 2\n[[prompt_sets]]\nsample = 2\n",
    );
    let stdout = ok(&specula_in(
        t.path(),
        &["sweep", spec.to_str().unwrap(), "--out", "run"],
    ));
    assert!(
        stdout.contains("span recording: throughput with spans / without ="),
        "{stdout}"
    );
    let run = t.path().join("run");
    let keys = Csv::read(&run.join("runs.csv")).column("row_key");
    assert_eq!(
        keys,
        [
            "rnd.base.b1.builtin.t0.r0",
            "rnd.base.b1.builtin.t0.r0.nospans",
            "rnd.s2k1n3.b1.builtin.t0.r0",
            "rnd.s2k1n3.b1.builtin.t0.r0.nospans"
        ],
        "each row runs with and without spans, back to back"
    );
    let kernels = Csv::read(&run.join("kernels.csv"));
    assert!(kernels
        .rows
        .iter()
        .all(|r| !r["row_key"].ends_with(".nospans")));
    assert_eq!(histogram_counts(&run).len(), kernels.rows.len());
    let runs = Csv::read(&run.join("runs.csv"));
    assert!(runs.rows.iter().all(|r| r["spans"]
        == if r["row_key"].ends_with(".nospans") {
            "off"
        } else {
            "on"
        }));
}
