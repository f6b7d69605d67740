//! Helpers of the sweep tests: a random tiny model pair, spec files, and
//! reading the files a run writes.

#![allow(dead_code)]

pub mod served;

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

/// A CSV file as a header and rows of named cells.
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<BTreeMap<String, String>>,
}

impl Csv {
    /// Reads `path`; every line must be whole.
    pub fn read(path: &Path) -> Csv {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.ends_with('\n'),
            "{} ends with a partial line",
            path.display()
        );
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
        let rows = r
            .records()
            .map(|rec| {
                let rec = rec.unwrap();
                header
                    .iter()
                    .cloned()
                    .zip(rec.iter().map(str::to_owned))
                    .collect()
            })
            .collect();
        Csv { header, rows }
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

/// The runs.csv header DESIGN.md fixes, then this tool's extra columns.
pub const RUNS_HEADER: &str = "run_id,git_rev,started_at,machine,backend,device,target,draft,dtype,aux_layers_resolved,steps,topk,num_draft_tokens,temperature,batch_size,prompt_set,prompts,output_tokens,verify_steps,wall_s,throughput_tok_s,tau,accept_rate,speedup,ttft_ms_p50,tpot_ms_p50,lossless,repeat,seed,max_new_tokens,id_convention,spans,prefill_s,decode_s,row_key,flag,decode_cpu_s,cpu_tok_s,cpu_speedup";

/// Columns that do not depend on when, where or how fast a row ran.
pub const IDENTITY_AND_DETERMINISTIC: [&str; 20] = [
    "target",
    "draft",
    "dtype",
    "aux_layers_resolved",
    "steps",
    "topk",
    "num_draft_tokens",
    "temperature",
    "batch_size",
    "prompt_set",
    "prompts",
    "repeat",
    "seed",
    "row_key",
    "output_tokens",
    "verify_steps",
    "tau",
    "accept_rate",
    "lossless",
    "id_convention",
];
