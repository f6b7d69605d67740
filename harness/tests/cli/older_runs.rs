//! Run folders written by an earlier version (CSV files with fewer columns,
//! the later ones added at the end): `--resume` and `specula merge` bring
//! them to this version's columns, the added columns empty in the older
//! lines, instead of refusing them.

use crate::common::*;
use specula::run_folder::requests_csv::REQUESTS_COLUMNS;
use specula::run_folder::schema::RUNS_COLUMNS;
use std::path::Path;

const SPEC: &str = r#"
name = "older"
max_new_tokens = 6
warmup = 0
threads = 1

[[drafts]]
steps = [1, 2]

[[prompt_sets]]
categories = ["code"]
sample = 2
"#;

/// Rewrites the CSV file `path` without its columns from `keep` on (as an
/// earlier version wrote it), dropping the data lines `drop` says to.
fn as_written_before(path: &Path, keep: usize, drop: impl Fn(&[String]) -> bool) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(&header[..keep]).unwrap();
    for rec in r.records() {
        let cells: Vec<String> = rec.unwrap().iter().map(String::from).collect();
        if !drop(&cells) {
            w.write_record(&cells[..keep]).unwrap();
        }
    }
    std::fs::write(path, w.into_inner().unwrap()).unwrap();
}

fn index(columns: &[&str], name: &str) -> usize {
    columns.iter().position(|c| *c == name).unwrap()
}

/// Regression: a run folder written before requests.csv had
/// `scheduled_at_s` (and runs.csv `request_rate`, which came with it) was refused by
/// `--resume` ("its header is not the one this version writes") and by
/// `specula merge` ("merge only runs of one schema").
#[test]
fn a_run_written_before_scheduled_at_s_resumes_and_merges_with_the_later_columns_empty() {
    let t = workspace();
    let spec = spec(t.path(), "older.toml", SPEC);
    let spec = spec.to_str().unwrap();
    ok(&specula_in(
        t.path(),
        &["sweep", spec, "-q", "--out", "old"],
    ));
    let old = t.path().join("old");
    let keys = Csv::read(&old.join("runs.csv")).column("row_key");
    assert_eq!(keys.len(), 3, "baseline and two chains: {keys:?}");
    let unfinished = keys[2].clone();
    let key_at = index(&RUNS_COLUMNS, "row_key");
    as_written_before(
        &old.join("runs.csv"),
        index(&RUNS_COLUMNS, "request_rate"),
        |r| r[key_at] == unfinished,
    );
    as_written_before(
        &old.join("requests.csv"),
        index(&REQUESTS_COLUMNS, "scheduled_at_s"),
        |_| false,
    );
    let before = Csv::read(&old.join("requests.csv"));
    assert!(before.header.len() < REQUESTS_COLUMNS.len());

    // A current run with other row keys (temperature 0.5), to merge with.
    ok(&specula_in(
        t.path(),
        &["sweep", spec, "-q", "--temperatures", "0.5", "--out", "new"],
    ));
    let merged = specula_in(t.path(), &["merge", "old", "new", "--out", "merged"]);
    ok(&merged);
    let m = Csv::read(&t.path().join("merged/runs.csv"));
    assert_eq!(m.header, RUNS_COLUMNS);
    assert_eq!(m.rows.len(), 5, "2 older rows and 3 current");
    let requests = Csv::read(&t.path().join("merged/requests.csv"));
    assert_eq!(requests.header, REQUESTS_COLUMNS);
    for r in &requests.rows {
        // Closed loop: no schedule in either; the current lines know the context fit.
        assert!(r["scheduled_at_s"].is_empty(), "{r:?}");
        let older = r["row_key"].contains(".t0.");
        let want = if older { "" } else { "false" };
        assert_eq!(
            r["past_trained_context"], want,
            "older lines empty (unknown): {r:?}"
        );
    }

    ok(&specula_in(t.path(), &["sweep", "--resume", "old", "-q"]));
    let runs = Csv::read(&old.join("runs.csv"));
    assert_eq!(runs.header, RUNS_COLUMNS);
    assert_eq!(runs.column("row_key"), keys, "the unfinished row ran once");
    for r in &runs.rows {
        // Closed loop: the rate is empty in every row, older or resumed.
        assert_eq!(r["request_rate"], "", "{r:?}");
    }
    let requests = Csv::read(&old.join("requests.csv"));
    assert_eq!(requests.header, REQUESTS_COLUMNS);
    let lines = |key: &str| requests.rows.iter().filter(|r| r["row_key"] == key).count();
    assert_eq!(lines(&unfinished), 2, "its requests written once");
    assert_eq!(lines(&keys[0]), 2, "the older lines kept");
    for r in &requests.rows {
        assert!(r["scheduled_at_s"].is_empty(), "{r:?}");
        let want = if r["row_key"] == unfinished {
            "false"
        } else {
            ""
        };
        assert_eq!(
            r["past_trained_context"], want,
            "only the resumed row's lines know: {r:?}"
        );
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(old.join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["columns"]["runs.csv"].as_array().unwrap().len(),
        RUNS_COLUMNS.len()
    );

    // A header that is no version's is still refused, naming the file.
    let kernels = old.join("kernels.csv");
    let text = std::fs::read_to_string(&kernels).unwrap();
    std::fs::write(&kernels, text.replacen("run_id", "run", 1)).unwrap();
    let refused = specula_in(t.path(), &["merge", "old", "new", "--out", "bad"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("kernels.csv") && err.contains("earlier version"),
        "{err}"
    );
}
