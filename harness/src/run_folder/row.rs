//! One finished row as a sweep hands it to the writers: every runs.csv
//! column, its per-position acceptance and its span samples.

use serde::{Deserialize, Serialize};
use specula_engine::timing::SpanLog;
use std::collections::BTreeMap;
use std::time::Duration;

/// Whether a row records span timings (`on`) or runs with a null recorder
/// (`off`): the `spans` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanMode {
    /// Host-clock (or CUDA-event) spans into HDR histograms.
    On,
    /// No span recording (to measure its overhead).
    Off,
}

impl SpanMode {
    /// `on` or `off`.
    pub fn name(self) -> &'static str {
        match self {
            SpanMode::On => "on",
            SpanMode::Off => "off",
        }
    }
}

impl std::str::FromStr for SpanMode {
    type Err = String;
    fn from_str(s: &str) -> Result<SpanMode, String> {
        match s {
            "on" => Ok(SpanMode::On),
            "off" => Ok(SpanMode::Off),
            other => Err(format!("{other:?}: expected on or off")),
        }
    }
}

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
    /// Where the row ran: `cpu`, `cuda`, or the serving engine (`sglang`, `vllm`).
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
    /// Repeat index (the first of this tool's extra columns).
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
    /// The speculative method as the backend spells it (`{method}` of the
    /// server command, `eagle`/`eagle3` in process); empty when the spec
    /// names none (the backend's default for the draft).
    pub method: String,
    /// Requests per second offered (open loop, `[load]`); `None`: closed loop.
    pub request_rate: Option<f64>,
    /// a_k for k = 1..=steps.
    pub positions: Vec<f64>,
    /// Span samples per `generate` call (empty when spans are off).
    pub intervals: Vec<SpanInterval>,
    /// One record per request (requests.csv).
    pub requests: Vec<super::RequestRecord>,
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
