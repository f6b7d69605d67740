//! `requests.csv`: one line per request of every finished row, for every
//! backend (docs/DESIGN.md 8.8): what it was (prompt set, category, prompt
//! id, prompt tokens), what it produced (output tokens, verify steps,
//! accepted and proposed drafts, verify steps reaching each depth) and how
//! long it took (TTFT, TPOT, inter-token gaps, E2E), with the load it ran
//! under (request rate, concurrency). Ratios over rows are taken from the
//! sums of these lines (7.1), so tau from requests.csv equals the row's
//! tau wherever the server reports per-request figures.

use super::csv_file::AppendCsv;
use super::{Row, RowWriter, RunFolderError};
use std::path::Path;

/// The file name.
pub const REQUESTS_CSV: &str = "requests.csv";

/// The columns of requests.csv.
pub const REQUESTS_COLUMNS: [&str; 31] = [
    "run_id",
    "row_key",
    "backend",
    "method",
    "prompt_set",
    "category",
    "prompt_id",
    "request_index",
    "prompt_tokens",
    "output_tokens",
    "verify_steps",
    "accepted_drafts",
    "proposed_drafts",
    "reached_per_position",
    "sent_at_s",
    "ttft_ms",
    "tpot_ms",
    "itl_ms_mean",
    "itl_ms_p50",
    "itl_ms_p99",
    "itl_ms_max",
    "e2e_ms",
    "request_rate",
    "concurrency",
    "field_form",
    "itl_ms",
    "scheduled_at_s",
    "past_trained_context",
    "server_step_ms",
    "itl_minus_server_ms_p50",
    "itl_minus_server_ms_max",
];

/// One request, as a row hands it to the writer (absent figures empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestRecord {
    /// The speculative method (empty when the spec names none).
    pub method: String,
    /// The prompt's category.
    pub category: String,
    /// The prompt's id within its set.
    pub prompt_id: String,
    /// Prompt tokens (the server's count, else this side's tokenization).
    pub prompt_tokens: Option<usize>,
    /// Generated tokens (the prefill's token included).
    pub output_tokens: usize,
    /// Verify steps.
    pub verify_steps: Option<usize>,
    /// Accepted draft tokens.
    pub accepted_drafts: Option<usize>,
    /// Proposed draft tokens.
    pub proposed_drafts: Option<usize>,
    /// Verify steps whose accepted path reached depth k, k = 1..=steps.
    pub reached: Option<Vec<u64>>,
    /// Seconds from the row's start to sending.
    pub sent_at_s: f64,
    /// Seconds from the row's start at which the open-loop schedule had it
    /// leave (`None`: closed loop); `sent_at_s` minus this is the send lag.
    pub scheduled_at_s: Option<f64>,
    /// Seconds to the first token.
    pub ttft_s: f64,
    /// Seconds from sending to the last byte.
    pub e2e_s: f64,
    /// Gaps between streamed events carrying output, seconds.
    pub itl_s: Vec<f64>,
    /// The server's clock of the same gaps: seconds between the engine
    /// steps that produced those events (empty where the server does not say).
    pub server_step_s: Vec<f64>,
    /// Requests per second offered (`None`: closed loop).
    pub request_rate: Option<f64>,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// `current` or `legacy` field names (served rows whose server reported any).
    pub field_form: String,
    /// Whether its prompt and output tokens together exceed the target's
    /// `max_position_embeddings` (`None`: either is unknown here).
    pub past_trained_context: Option<bool>,
}

fn opt<T: ToString>(x: Option<T>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

fn ms(s: f64) -> String {
    format!("{:.4}", s * 1e3)
}

/// The p-quantile (0..=1) of sorted `v`, nearest rank.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[i - 1]
}

impl RequestRecord {
    /// Seconds per output token after the first.
    pub fn tpot_s(&self) -> Option<f64> {
        (self.output_tokens > 1)
            .then(|| (self.e2e_s - self.ttft_s) / (self.output_tokens - 1) as f64)
    }

    /// The p-quantile of the client's gaps minus the server's step times,
    /// gap by gap (what delivery added, or took away when an event came
    /// late and the next on time); `None` unless the server gave one step
    /// time per gap.
    pub fn itl_over_server(&self, p: f64) -> Option<f64> {
        if self.itl_s.is_empty() || self.itl_s.len() != self.server_step_s.len() {
            return None;
        }
        let mut d: Vec<f64> = self
            .itl_s
            .iter()
            .zip(&self.server_step_s)
            .map(|(c, s)| c - s)
            .collect();
        d.sort_by(f64::total_cmp);
        Some(quantile(&d, p))
    }

    fn cells(&self, row: &Row, index: usize) -> Vec<String> {
        let mut itl = self.itl_s.clone();
        itl.sort_by(f64::total_cmp);
        let itl_stat = |f: &dyn Fn(&[f64]) -> f64| {
            if itl.is_empty() {
                String::new()
            } else {
                ms(f(&itl))
            }
        };
        vec![
            row.run_id.clone(),
            row.row_key.clone(),
            row.backend.clone(),
            self.method.clone(),
            row.prompt_set.clone(),
            self.category.clone(),
            self.prompt_id.clone(),
            index.to_string(),
            opt(self.prompt_tokens),
            self.output_tokens.to_string(),
            opt(self.verify_steps),
            opt(self.accepted_drafts),
            opt(self.proposed_drafts),
            self.reached
                .as_ref()
                .map(|r| r.iter().map(u64::to_string).collect::<Vec<_>>().join(";"))
                .unwrap_or_default(),
            format!("{:.6}", self.sent_at_s),
            ms(self.ttft_s),
            self.tpot_s().map(ms).unwrap_or_default(),
            itl_stat(&|v| v.iter().sum::<f64>() / v.len() as f64),
            itl_stat(&|v| quantile(v, 0.5)),
            itl_stat(&|v| quantile(v, 0.99)),
            itl_stat(&|v| v[v.len() - 1]),
            ms(self.e2e_s),
            opt(self.request_rate),
            self.concurrency.to_string(),
            self.field_form.clone(),
            self.itl_s
                .iter()
                .map(|g| format!("{:.3}", g * 1e3))
                .collect::<Vec<_>>()
                .join(";"),
            self.scheduled_at_s
                .map(|t| format!("{t:.6}"))
                .unwrap_or_default(),
            opt(self.past_trained_context),
            self.server_step_s
                .iter()
                .map(|g| format!("{:.3}", g * 1e3))
                .collect::<Vec<_>>()
                .join(";"),
            self.itl_over_server(0.5).map(ms).unwrap_or_default(),
            self.itl_over_server(1.0).map(ms).unwrap_or_default(),
        ]
    }
}

/// The requests.csv writer.
#[derive(Debug)]
pub struct RequestsCsv(AppendCsv);

impl RequestsCsv {
    /// Opens (or creates) `path`.
    pub fn open(path: &Path) -> Result<RequestsCsv, RunFolderError> {
        AppendCsv::open(path, &REQUESTS_COLUMNS).map(RequestsCsv)
    }
}

impl RowWriter for RequestsCsv {
    fn write(&mut self, row: &Row) -> Result<(), RunFolderError> {
        let lines: Vec<Vec<String>> = row
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| r.cells(row, i))
            .collect();
        if lines.is_empty() {
            return Ok(());
        }
        self.0.append(&lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.99), 4.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
    }

    #[test]
    fn itl_over_server_is_gap_by_gap_and_only_when_the_counts_match() {
        let r = RequestRecord {
            itl_s: vec![0.010, 0.004, 0.020],
            server_step_s: vec![0.008, 0.005, 0.011],
            ..RequestRecord::default()
        };
        let near = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(near(r.itl_over_server(0.5), 0.002));
        assert!(near(r.itl_over_server(1.0), 0.009));
        let fewer = RequestRecord {
            server_step_s: vec![0.008],
            ..r
        };
        assert_eq!(
            fewer.itl_over_server(0.5),
            None,
            "never matched up by guess"
        );
    }
}
