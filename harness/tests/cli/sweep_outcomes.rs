//! How a sweep ends when no draft config of its spec can run (exit 2, the
//! baselines kept) and when the reader of its output goes away (it runs to
//! the end), and how entries over one target share its load, on a random
//! tiny model pair written into a temp folder.

use crate::common::*;

#[test]
fn regression_a_sweep_whose_every_draft_config_is_skipped_exits_2_keeping_its_baselines() {
    // It wrote only the baselines and exited 0.
    let t = workspace();
    let body = "max_new_tokens = 4\nwarmup = 0\n[[prompt_sets]]\nsample = 1\n\
                [[drafts]]\nsteps = 2\nnum_draft_tokens = 9\n\
                [[drafts]]\nsteps = 3\naux_layers = [2, 4]\n";
    let none = spec(t.path(), "none.toml", body);
    let dry = specula_in(t.path(), &["sweep", none.to_str().unwrap(), "--dry-run"]);
    assert_bad_input(
        &dry,
        &[
            "no draft config of the spec runs",
            "only baselines would run",
        ],
    );
    let out = specula_in(
        t.path(),
        &["sweep", none.to_str().unwrap(), "-q", "--out", "run"],
    );
    assert_bad_input(
        &out,
        &[
            "no draft config of the spec runs",
            "skipped rnd steps=2 topk=1 num_draft_tokens=9: invalid num_draft_tokens",
            "skipped rnd steps=3 topk=1 num_draft_tokens=4",
            "invalid aux layer ids",
            "only baselines ran (kept in run)",
        ],
    );
    let runs = Csv::read(&t.path().join("run/runs.csv"));
    assert_eq!(runs.column("steps"), ["0"], "the baseline row is kept");

    // A baseline written as steps = 0, or a model without a draft, is no refusal.
    let base = spec(
        t.path(),
        "base.toml",
        "max_new_tokens = 4\nwarmup = 0\n[[prompt_sets]]\nsample = 1\n[[drafts]]\nsteps = 0\n",
    );
    ok(&specula_in(
        t.path(),
        &["sweep", base.to_str().unwrap(), "-q", "--out", "base"],
    ));
}

#[test]
fn regression_a_sweep_whose_output_pipe_closes_runs_to_the_end() {
    // `specula sweep spec 2>&1 | head -1` panicked printing its first
    // skipped config (exit 101) and wrote nothing.
    let t = workspace();
    let body = "max_new_tokens = 4\nwarmup = 0\n[[prompt_sets]]\nsample = 1\n\
                [[drafts]]\nsteps = 2\nnum_draft_tokens = [3, 9]\n";
    let spec = spec(t.path(), "s.toml", body);
    let mut child = command(t.path(), &["sweep", spec.to_str().unwrap(), "--out", "run"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let runs = Csv::read(&t.path().join("run/runs.csv"));
    assert_eq!(runs.column("steps"), ["0", "2"]);
}

#[test]
fn a_missing_model_folder_says_relative_paths_are_read_from_the_spec_folder() {
    // Issue 20, item 14: a user ran a spec from another folder and did not
    // know where its relative model paths were looked for.
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir(t.path().join("specs")).unwrap();
    std::fs::write(
        t.path().join("specs/s.toml"),
        "[[models]]\nname = \"m\"\ntarget = \"models/nope\"\n",
    )
    .unwrap();
    let out = specula_in(t.path(), &["sweep", "specs/s.toml", "--out", "o"]);
    let folder = t.path().join("specs");
    assert_bad_input(
        &out,
        &[
            "target = \"models/nope\"",
            &folder.join("models/nope").display().to_string(),
            "relative paths are read from the spec's folder",
        ],
    );
}

#[test]
fn two_model_entries_over_one_target_run_on_one_load() {
    // Issue 23, item 4: a sweep loads each target once, whatever the number
    // of entries (draft folders, captures) over it.
    let t = workspace();
    let body = "max_new_tokens = 4\nwarmup = 0\n[[prompt_sets]]\nsample = 1\n\
                [[drafts]]\nsteps = 2\n\
                [[models]]\nname = \"rnd-b\"\ntarget = \"fx/target\"\ndraft = \"fx/draft\"\n";
    let two = spec(t.path(), "two.toml", body);
    let out = specula_in(t.path(), &["sweep", two.to_str().unwrap(), "--out", "run"]);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("loading ").count(), 1, "{err}");
    assert!(
        err.contains("the target fx/target is loaded already"),
        "{err}"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("run/meta.json")).unwrap())
            .unwrap();
    let loads = meta["model_loads"]
        .as_array()
        .expect("meta.json model_loads");
    assert_eq!(loads.len(), 1, "{loads:?}");
    assert_eq!(loads[0]["models"], serde_json::json!(["rnd-b", "rnd"]));
    assert_eq!(loads[0]["device"], "cpu");
    assert!(loads[0]["peak_host_memory_bytes"].as_u64().unwrap() > 0);
    let runs = Csv::read(&t.path().join("run/runs.csv"));
    let keys: std::collections::BTreeSet<String> = runs.column("row_key").into_iter().collect();
    assert_eq!(
        keys.len(),
        4,
        "both entries wrote a baseline and a draft row: {keys:?}"
    );
}
