//! `kernels.csv`: per (row, span) latency: count, mean, p50/p90/p99, max (µs)
//! and share of the decode step time.
//!
//! `count`, `mean_us` and `max_us` are exact (from the raw samples);
//! percentiles come from the row's HDR histogram (3 significant digits, the
//! same histograms as the `.hlog` files). `share` is the span's total time
//! over the summed time of every span except `prefill` (the decode steps);
//! it is empty for `prefill`. Rows served over HTTP have no kernel spans but
//! the client-side request spans `ttft`, `tpot` and `e2e` (share empty).

use super::csv_file::AppendCsv;
use super::histograms::of_samples;
use super::schema::KERNELS_COLUMNS;
use super::{Row, RowWriter, RunFolderError};
use specula_engine::timing::Span;
use std::path::Path;

/// The kernels.csv writer.
#[derive(Debug)]
pub struct KernelsCsv(AppendCsv);

impl KernelsCsv {
    /// Opens (or creates) `path`.
    pub fn open(path: &Path) -> Result<KernelsCsv, RunFolderError> {
        AppendCsv::open(path, &KERNELS_COLUMNS).map(KernelsCsv)
    }
}

fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1e3)
}

/// One kernels.csv record: `name`'s statistics over `samples` (ns), and its share.
fn record(row: &Row, name: &str, samples: &[u64], share: String) -> Vec<String> {
    let h = of_samples(samples);
    let total: u128 = samples.iter().map(|&x| x as u128).sum();
    vec![
        row.run_id.clone(),
        row.row_key.clone(),
        name.to_string(),
        samples.len().to_string(),
        us(total as f64 / samples.len() as f64),
        us(h.value_at_quantile(0.5) as f64),
        us(h.value_at_quantile(0.9) as f64),
        us(h.value_at_quantile(0.99) as f64),
        us(*samples.iter().max().unwrap_or(&0) as f64),
        share,
    ]
}

/// The kernels.csv records of a row (none when spans were off).
pub fn records(row: &Row) -> Vec<Vec<String>> {
    let samples = |s: Span| -> Vec<u64> {
        row.intervals
            .iter()
            .filter_map(|iv| iv.log.samples.get(&s))
            .flatten()
            .copied()
            .collect()
    };
    let all: Vec<(Span, Vec<u64>)> = Span::ALL
        .iter()
        .map(|&s| (s, samples(s)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let step_ns: u128 = all
        .iter()
        .filter(|(s, _)| !s.per_call())
        .flat_map(|(_, v)| v)
        .map(|&x| x as u128)
        .sum();
    let mut out: Vec<Vec<String>> = all
        .iter()
        .map(|(span, v)| {
            let total: u128 = v.iter().map(|&x| x as u128).sum();
            let share = if span.per_call() || step_ns == 0 {
                String::new()
            } else {
                format!("{:.4}", total as f64 / step_ns as f64)
            };
            record(row, span.name(), v, share)
        })
        .collect();
    out.extend(client_records(row));
    out
}

/// Rows of the client-side request spans of a served row (`ttft`, `tpot`,
/// `e2e`; `share` empty), after the kernel spans (none for served rows).
fn client_records(row: &Row) -> Vec<Vec<String>> {
    let mut names: Vec<&'static str> = Vec::new();
    for iv in &row.intervals {
        for n in iv.client.keys() {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    names.sort_by_key(|n| CLIENT_SPANS.iter().position(|c| c == n));
    names
        .into_iter()
        .filter_map(|name| {
            let v: Vec<u64> = row
                .intervals
                .iter()
                .filter_map(|iv| iv.client.get(name))
                .flatten()
                .copied()
                .collect();
            (!v.is_empty()).then(|| record(row, name, &v, String::new()))
        })
        .collect()
}

/// The client-side spans of served rows, in report order.
pub const CLIENT_SPANS: [&str; 3] = ["ttft", "tpot", "e2e"];

impl RowWriter for KernelsCsv {
    fn write(&mut self, row: &Row) -> Result<(), RunFolderError> {
        let r = records(row);
        if r.is_empty() {
            return Ok(());
        }
        self.0.append(&r)
    }
}
