//! Helpers of the sweep tests: a random tiny model pair, spec files, and
//! reading the files a run writes (through the library's reader and schema,
//! never a copy of them).

#![allow(dead_code)]

pub mod attack_client;
pub mod capture;
pub mod fuzz;
pub mod raw_http;
pub mod served;

use specula::run_folder::schema::{DETERMINISTIC_COLUMNS, IDENTITY};
use specula::run_folder::Table;
use specula_engine::fixtures::{write_random_pair, StoreDtype, TargetShape};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Rewrites the JSON file `path` through `f`.
pub fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// Runs the binary with `args` in `cwd`.
pub fn specula_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_specula"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `specula gate --baseline B --current C EXTRA...`, run from the repository root.
pub fn gate(baseline: &Path, current: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "gate",
        "--baseline",
        baseline.to_str().unwrap(),
        "--current",
        current.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    specula_in(&repo(), &args)
}

/// A command for the binary (to spawn).
pub fn command(cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_specula"));
    c.current_dir(cwd).args(args);
    c
}

/// Asserts success, showing stderr otherwise.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {}\nstdout: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ is in the repository")
        .to_path_buf()
}

/// A copy of the committed CI baseline run (`results/baselines/ci`) as `t/name`.
pub fn copy_of_committed_baseline(t: &Path, name: &str) -> PathBuf {
    let src = repo().join("results/baselines/ci");
    let dst = t.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["runs.csv", "positions.csv", "kernels.csv", "meta.json"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    dst
}

/// A temp folder holding a random tiny pair (seed `seed`), and its target and draft folders.
pub fn random_pair(seed: u64) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let shape = TargetShape::named("tiny").unwrap();
    let p = write_random_pair(t.path(), &shape, seed, StoreDtype::F32, None).unwrap();
    (t, p.target, p.draft)
}

/// A temp folder with a random tiny pair in `fx/target` and `fx/draft`.
pub fn workspace() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    write_random_pair(
        &t.path().join("fx"),
        &TargetShape::named("tiny").unwrap(),
        3,
        StoreDtype::F32,
        None,
    )
    .unwrap();
    t
}

/// Writes `name` in `dir` with the model pair table prepended to `body`.
pub fn spec(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "{body}\n[[models]]\nname = \"rnd\"\ntarget = \"fx/target\"\ndraft = \"fx/draft\"\n"
        ),
    )
    .unwrap();
    p
}

/// Exit code 2, one `error:` line holding every needle.
pub fn assert_bad_input(out: &std::process::Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{err}"));
    for n in needles {
        assert!(line.contains(n), "{n:?} missing from: {line}");
    }
}

/// A CSV file as a header and rows of named cells.
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<BTreeMap<String, String>>,
}

impl Csv {
    /// Reads `path` with the library's CSV reader; every line must be whole.
    pub fn read(path: &Path) -> Csv {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.ends_with('\n'),
            "{} ends with a partial line",
            path.display()
        );
        let table = Table::read(path).unwrap_or_else(|e| panic!("{e}"));
        let rows = table
            .rows
            .iter()
            .map(|r| {
                table
                    .header
                    .iter()
                    .cloned()
                    .zip(r.iter().cloned())
                    .collect()
            })
            .collect();
        Csv {
            header: table.header,
            rows,
        }
    }

    /// The values of `col`, in order.
    pub fn column(&self, col: &str) -> Vec<String> {
        self.rows.iter().map(|r| r[col].clone()).collect()
    }

    /// Rows by `row_key`.
    pub fn by_key(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.rows
            .iter()
            .map(|r| (r["row_key"].clone(), r.clone()))
            .collect()
    }
}

/// Total sample count per (row key, span) over the `.hlog` files of `dir/histograms`.
pub fn histogram_counts(dir: &Path) -> BTreeMap<(String, String), u64> {
    use base64::Engine;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("histograms")).unwrap() {
        let p = e.unwrap().path();
        let key = p.file_stem().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&p).unwrap();
        for entry in IntervalLogIterator::new(&bytes) {
            let LogEntry::Interval(iv) = entry.unwrap() else {
                continue;
            };
            let raw = base64::engine::general_purpose::STANDARD
                .decode(iv.encoded_histogram())
                .unwrap();
            let h: hdrhistogram::Histogram<u64> = Deserializer::new()
                .deserialize(&mut raw.as_slice())
                .unwrap();
            *out.entry((key.clone(), iv.tag().unwrap().to_string()))
                .or_insert(0) += h.len();
        }
    }
    out
}

/// Columns that do not depend on when, where or how fast a row ran: the
/// identity, the row key and the deterministic measures.
pub fn identity_and_deterministic() -> Vec<&'static str> {
    IDENTITY
        .iter()
        .chain(&["row_key"])
        .chain(&DETERMINISTIC_COLUMNS)
        .copied()
        .collect()
}
