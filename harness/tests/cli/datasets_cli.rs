//! The prompt sets compiled into specula, from the command line: listed,
//! exported, and named by a spec that runs from any folder, its relative
//! paths read from the spec's own folder.

use crate::common::*;
use std::path::Path;

#[test]
fn datasets_list_shows_every_compiled_in_set_with_its_count_and_licence() {
    let out = ok(&specula_in(&repo(), &["datasets", "list"]));
    for (name, prompts, licence) in [
        ("mt-bench", "80", "Apache-2.0"),
        ("spec-bench", "480", "Apache-2.0"),
        ("gsm8k", "1319", "MIT"),
        ("humaneval", "164", "MIT"),
        ("builtin", "24", "Apache-2.0"),
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing from:\n{out}"));
        assert!(line.contains(prompts) && line.contains(licence), "{line}");
    }
    assert!(out.contains("hemingkx/Spec-Bench") && out.contains("sha256"));
}

#[test]
fn export_writes_the_upstream_file_and_its_licence_beside_it() {
    let t = tempfile::tempdir().unwrap();
    ok(&specula_in(
        t.path(),
        &["datasets", "export", "humaneval", "--out", "he.jsonl"],
    ));
    let written = std::fs::read(t.path().join("he.jsonl")).unwrap();
    let upstream = std::fs::read(repo().join("datasets/public/humaneval.jsonl")).unwrap();
    assert!(written == upstream, "byte for byte");
    assert!(std::fs::read_to_string(t.path().join("he.jsonl.LICENSE"))
        .unwrap()
        .contains("MIT"));
    let unknown = specula_in(t.path(), &["datasets", "export", "nope", "--out", "x"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("spec-bench"));
}

/// Regression: `specula datasets list | head -1` panicked ("failed printing
/// to stdout: Broken pipe") once its reader had gone.
#[test]
fn a_reader_closing_stdout_early_stops_the_printing_not_the_command() {
    let mut child = command(&repo(), &["datasets", "list"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader leaves before the command has printed anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// A spec in `t/specs/` on the random pair in `t/fx/`, written with paths relative to its folder.
fn spec_in_a_subfolder(t: &Path, target: &str, source: &str) {
    std::fs::create_dir_all(t.join("specs")).unwrap();
    std::fs::write(
        t.join("specs/s.toml"),
        format!(
            "name = \"away\"\nmax_new_tokens = 4\nwarmup = 0\n\
             [[models]]\nname = \"rnd\"\ntarget = \"{target}\"\ndraft = \"../fx/draft\"\n\
             [[drafts]]\nsteps = 2\n\
             [[prompt_sets]]\nsource = \"{source}\"\nsample = 2\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(t.join("elsewhere")).unwrap();
}

#[test]
fn a_spec_naming_a_compiled_in_set_runs_from_any_folder() {
    let t = workspace();
    spec_in_a_subfolder(t.path(), "../fx/target", "spec-bench:translation");
    let cwd = t.path().join("elsewhere");
    ok(&specula_in(
        &cwd,
        &["sweep", "../specs/s.toml", "--quiet", "--out", "run"],
    ));
    let runs = Csv::read(&cwd.join("run/runs.csv"));
    assert_eq!(runs.rows.len(), 2, "a baseline and one config");
    assert!(runs
        .rows
        .iter()
        .all(|r| r["prompt_set"] == "spec-bench:translation"
            && r["prompts"] == "2"
            && r["target"] == "../fx/target"));
}

#[test]
fn a_missing_model_folder_is_named_with_where_it_was_looked_for() {
    let t = workspace();
    spec_in_a_subfolder(t.path(), "fx/target", "builtin");
    let out = specula_in(
        &t.path().join("elsewhere"),
        &["sweep", "../specs/s.toml", "--dry-run"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let looked = t.path().join("specs").join("fx/target");
    assert!(
        err.contains(&looked.display().to_string()) && err.contains("the spec's folder"),
        "{err}"
    );
}
