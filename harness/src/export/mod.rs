//! The files a sweep writes, one module per file, each behind [`RowWriter`]:
//! runs.csv ([`runs_csv`]), positions.csv ([`positions_csv`]), kernels.csv
//! ([`kernels_csv`]), `histograms/<row_key>.hlog` ([`histograms`]), and
//! meta.json ([`meta`], written once per run rather than per row).
//!
//! Every row goes out with one append (one `write` of whole lines) and a
//! flush, runs.csv last: a row is finished exactly when its runs.csv line
//! exists, which is what `--resume` reads.

pub mod histograms;
pub mod kernels_csv;
pub mod meta;
pub mod positions_csv;
pub mod runs_csv;

use crate::sweep::spec::SpanMode;
use crate::sweep::SweepError;
use specula_engine::timing::SpanLog;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The span samples of one `generate` call within a row.
#[derive(Debug, Clone)]
pub struct SpanInterval {
    /// When the call started, from the row's start.
    pub start: Duration,
    /// How long the call took.
    pub duration: Duration,
    /// Per-span durations in nanoseconds.
    pub log: SpanLog,
    /// Client-side request timings of a served row (`ttft`, `tpot`, `e2e`),
    /// in nanoseconds; empty for in-process rows.
    pub client: BTreeMap<&'static str, Vec<u64>>,
}

/// One finished grid point: every column of runs.csv plus what the other files need.
#[derive(Debug, Clone)]
pub struct Row {
    /// Identity columns, in runs.csv order (run_id .. prompts).
    pub run_id: String,
    /// `git rev-parse HEAD` at run time, or `unknown`.
    pub git_rev: String,
    /// UTC start of the row, RFC 3339.
    pub started_at: String,
    /// The same instant, for the histogram logs' BaseTime.
    pub start_time: std::time::SystemTime,
    /// Host name.
    pub machine: String,
    /// `cpu` (the CUDA backend will write `cuda`), or the serving engine (`sglang`, `vllm`).
    pub backend: String,
    /// CPU model (or GPU name).
    pub device: String,
    /// Target path as written in the spec.
    pub target: String,
    /// Draft path as written in the spec (the model pair's, also on baseline rows).
    pub draft: String,
    /// Target storage dtype.
    pub dtype: String,
    /// Capture points `a;b;c` (empty for the baseline).
    pub aux_layers_resolved: String,
    /// Draft depth (0 = baseline).
    pub steps: usize,
    /// Branching.
    pub topk: usize,
    /// Tokens verified per step.
    pub num_draft_tokens: usize,
    /// Sampling temperature.
    pub temperature: f64,
    /// Prompts per `generate` call.
    pub batch_size: usize,
    /// Prompt set name.
    pub prompt_set: String,
    /// Prompts run.
    pub prompts: usize,
    /// Measures.
    pub measures: Measures,
    /// Extra columns (after the DESIGN.md ones).
    pub repeat: usize,
    /// Seed of the sampling streams.
    pub seed: u64,
    /// Tokens per prompt at most.
    pub max_new_tokens: usize,
    /// `legacy` or `boundary` (empty for the baseline).
    pub id_convention: String,
    /// Whether spans were recorded.
    pub spans: SpanMode,
    /// Unique key of the row (positions.csv, kernels.csv, histogram files).
    pub row_key: String,
    /// a_k for k = 1..=steps.
    pub positions: Vec<f64>,
    /// Span samples per `generate` call (empty when spans are off).
    pub intervals: Vec<SpanInterval>,
}

/// The measured columns of a row.
#[derive(Debug, Clone, Default)]
pub struct Measures {
    /// Generated tokens (each prompt's first token, from prefill, included).
    pub output_tokens: usize,
    /// Verify steps summed over sequences.
    pub verify_steps: usize,
    /// Wall seconds of the row (prefill + decode of every batch).
    pub wall_s: f64,
    /// Seconds of the prefill phases, summed over batches.
    pub prefill_s: f64,
    /// Seconds of the decode phases, summed over batches.
    pub decode_s: f64,
    /// Decode-phase tokens / decode seconds.
    pub throughput_tok_s: f64,
    /// Acceptance length.
    pub tau: f64,
    /// Accepted / drafted slots.
    pub accept_rate: f64,
    /// Throughput / the same group's baseline throughput.
    pub speedup: Option<f64>,
    /// Median time to first token, ms.
    pub ttft_ms_p50: Option<f64>,
    /// Median time per output token after the first, ms.
    pub tpot_ms_p50: Option<f64>,
    /// Temperature 0: outputs equal the baseline's token for token.
    pub lossless: Option<bool>,
    /// CPU seconds of the decode phases (all threads; prefill taken out).
    pub decode_cpu_s: f64,
    /// Decode-phase tokens / decode CPU seconds.
    pub cpu_tok_s: f64,
    /// `cpu_tok_s` over the same group's baseline's: a same-run ratio that
    /// other processes' load on shared cores hardly moves (the gate's timed measure).
    pub cpu_speedup: Option<f64>,
}

/// One output file fed row by row.
pub trait RowWriter {
    /// Appends what `row` contributes to the file.
    fn write(&mut self, row: &Row) -> Result<(), SweepError>;
}

/// A CSV file that is only appended to, whole lines at a time.
#[derive(Debug)]
pub struct AppendCsv {
    path: PathBuf,
    file: File,
}

impl AppendCsv {
    /// Opens `path` for appending, writing `header` if the file is new or
    /// empty, and refusing a file whose header differs.
    pub fn open(path: &Path, header: &[&str]) -> Result<AppendCsv, SweepError> {
        let existing = std::fs::read_to_string(path).unwrap_or_default();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| SweepError::io(path, e))?;
        let want = header.join(",");
        match existing.lines().next() {
            None => {
                file.write_all(format!("{want}\n").as_bytes())
                    .map_err(|e| SweepError::io(path, e))?;
            }
            Some(h) if h == want => {}
            Some(h) => {
                return Err(SweepError::Corrupt {
                    path: path.to_path_buf(),
                    message: format!("header `{h}` is not the one this tool writes (`{want}`)"),
                })
            }
        }
        Ok(AppendCsv {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends `records` with one write, then flushes.
    pub fn append(&mut self, records: &[Vec<String>]) -> Result<(), SweepError> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        for r in records {
            w.write_record(r).map_err(|e| SweepError::Corrupt {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
        }
        let buf = w.into_inner().map_err(|e| SweepError::Corrupt {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        self.file
            .write_all(&buf)
            .and_then(|()| self.file.flush())
            .map_err(|e| SweepError::io(&self.path, e))
    }
}

/// A whole CSV file, read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows, as text.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Reads `path` (every row must have the header's width).
    pub fn read(path: &Path) -> Result<Table, SweepError> {
        let corrupt = |e: csv::Error| SweepError::Corrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let mut r = csv::Reader::from_path(path).map_err(corrupt)?;
        let header = r
            .headers()
            .map_err(corrupt)?
            .iter()
            .map(str::to_owned)
            .collect();
        let rows = r
            .records()
            .map(|rec| rec.map(|rec| rec.iter().map(str::to_owned).collect()))
            .collect::<Result<_, _>>()
            .map_err(corrupt)?;
        Ok(Table { header, rows })
    }

    /// The index of column `name`.
    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The values of column `name` (empty when there is no such column).
    pub fn column(&self, name: &str) -> Vec<&str> {
        match self.col(name) {
            Some(i) => self.rows.iter().map(|r| r[i].as_str()).collect(),
            None => Vec::new(),
        }
    }
}

/// `x` with `digits` decimals.
pub fn fixed(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// `x` with `digits` decimals, or empty.
pub fn opt_fixed(x: Option<f64>, digits: usize) -> String {
    x.map(|x| fixed(x, digits)).unwrap_or_default()
}
