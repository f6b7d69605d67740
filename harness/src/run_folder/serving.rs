//! The `serving` section of summary.json (docs/DESIGN.md 8.7): per served
//! row, the figures of `vllm bench serve` and SGLang's bench_serving under
//! their own names, computed from the row's requests.csv lines.

use super::csv_file::Table;
use serde::Serialize;
use std::collections::BTreeMap;

/// One row's serving figures (times in milliseconds, rates per second).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingPoint {
    /// The row key.
    pub row_key: String,
    /// The backend.
    pub backend: String,
    /// The speculative method (`null` when the spec names none).
    pub method: Option<String>,
    /// Requests per second offered (`null`: closed loop, vLLM's `inf`).
    pub request_rate: Option<f64>,
    /// Requests in flight at most.
    pub max_concurrency: Option<u64>,
    /// Requests finished.
    pub completed: usize,
    /// Seconds from the first send to the last answer.
    pub duration: f64,
    /// Prompt tokens of every request.
    pub total_input_tokens: u64,
    /// Output tokens of every request.
    pub total_output_tokens: u64,
    /// completed / duration.
    pub request_throughput: f64,
    /// total_input_tokens / duration (bench_serving's name).
    pub input_throughput: f64,
    /// total_output_tokens / duration.
    pub output_throughput: f64,
    /// (input + output tokens) / duration.
    pub total_token_throughput: f64,
    /// Requests within the `[load] goodput` SLO per second (`null` without one).
    pub request_goodput: Option<f64>,
    /// Tokens emitted per verify step over the row's requests: sum of
    /// (output tokens - 1) / sum of verify steps (`null` when not reported).
    pub accept_length: Option<f64>,
    /// Accepted / proposed drafts over the row's requests.
    pub accept_rate: Option<f64>,
    /// Figures of each latency: `mean_X_ms`, `median_X_ms`, `std_X_ms`,
    /// `p90_X_ms`, `p99_X_ms` for X in ttft, tpot, itl, e2el (vLLM) and
    /// e2e_latency (bench_serving).
    #[serde(flatten)]
    pub latencies: BTreeMap<String, f64>,
}

/// Nearest-rank percentile of sorted `v`.
fn percentile(v: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[i - 1]
}

fn describe(name: &str, mut v: Vec<f64>, out: &mut BTreeMap<String, f64>) {
    if v.is_empty() {
        return;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    out.insert(format!("mean_{name}_ms"), mean);
    out.insert(format!("median_{name}_ms"), median);
    out.insert(format!("std_{name}_ms"), var.sqrt());
    out.insert(format!("p90_{name}_ms"), percentile(&v, 90.0));
    out.insert(format!("p99_{name}_ms"), percentile(&v, 99.0));
}

/// The bounds of the goodput SLO (ttft, tpot, e2el; milliseconds).
pub type SloBounds = (Option<f64>, Option<f64>, Option<f64>);

/// The serving figures of every row in `requests` (requests.csv), in first-seen order.
pub fn serving_points(requests: &Table, slo: Option<SloBounds>) -> Vec<ServingPoint> {
    let col = |r: &Vec<String>, c: &str| requests.col(c).map_or(String::new(), |i| r[i].clone());
    let num = |r: &Vec<String>, c: &str| col(r, c).parse::<f64>().ok();
    let mut order: Vec<String> = Vec::new();
    let mut by_key: BTreeMap<String, Vec<&Vec<String>>> = BTreeMap::new();
    for r in &requests.rows {
        let k = col(r, "row_key");
        if !by_key.contains_key(&k) {
            order.push(k.clone());
        }
        by_key.entry(k).or_default().push(r);
    }
    order
        .into_iter()
        .map(|key| {
            let rows = &by_key[&key];
            let first = rows[0];
            let start = rows
                .iter()
                .filter_map(|r| num(r, "sent_at_s"))
                .fold(f64::INFINITY, f64::min);
            let end = rows
                .iter()
                .filter_map(|r| Some(num(r, "sent_at_s")? + num(r, "e2e_ms")? / 1e3))
                .fold(0.0, f64::max);
            let duration = (end - start).max(0.0);
            let per_s = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
            let sum = |c: &str| rows.iter().filter_map(|r| num(r, c)).sum::<f64>();
            let (input, output) = (sum("prompt_tokens") as u64, sum("output_tokens") as u64);
            let mut latencies = BTreeMap::new();
            let each = |c: &str| rows.iter().filter_map(|r| num(r, c)).collect::<Vec<f64>>();
            describe("ttft", each("ttft_ms"), &mut latencies);
            describe("tpot", each("tpot_ms"), &mut latencies);
            describe("e2el", each("e2e_ms"), &mut latencies);
            describe("e2e_latency", each("e2e_ms"), &mut latencies);
            let gaps: Vec<f64> = rows
                .iter()
                .flat_map(|r| {
                    col(r, "itl_ms")
                        .split(';')
                        .filter_map(|g| g.parse::<f64>().ok())
                        .collect::<Vec<_>>()
                })
                .collect();
            describe("itl", gaps, &mut latencies);
            let verify = sum("verify_steps");
            let with_steps: Vec<&&Vec<String>> = rows
                .iter()
                .filter(|r| num(r, "verify_steps").is_some())
                .collect();
            let decode: f64 = with_steps
                .iter()
                .filter_map(|r| num(r, "output_tokens"))
                .map(|n| (n - 1.0).max(0.0))
                .sum();
            let proposed = sum("proposed_drafts");
            let good = slo.map(|(ttft, tpot, e2el)| {
                let ok = |r: &Vec<String>, c: &str, bound: Option<f64>| {
                    bound.is_none_or(|b| num(r, c).is_none_or(|v| v <= b))
                };
                rows.iter()
                    .filter(|r| {
                        ok(r, "ttft_ms", ttft) && ok(r, "tpot_ms", tpot) && ok(r, "e2e_ms", e2el)
                    })
                    .count() as f64
            });
            ServingPoint {
                row_key: key.clone(),
                backend: col(first, "backend"),
                method: Some(col(first, "method")).filter(|m| !m.is_empty()),
                request_rate: num(first, "request_rate"),
                max_concurrency: num(first, "concurrency").map(|c| c as u64),
                completed: rows.len(),
                duration,
                total_input_tokens: input,
                total_output_tokens: output,
                request_throughput: per_s(rows.len() as f64),
                input_throughput: per_s(input as f64),
                output_throughput: per_s(output as f64),
                total_token_throughput: per_s((input + output) as f64),
                request_goodput: good.map(per_s),
                accept_length: (verify > 0.0 && with_steps.len() == rows.len())
                    .then(|| decode / verify),
                accept_rate: (proposed > 0.0).then(|| sum("accepted_drafts") / proposed),
                latencies,
            }
        })
        .collect()
}
