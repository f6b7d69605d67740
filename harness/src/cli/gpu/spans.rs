//! Summaries of CUDA-event span logs (the same spans the CPU records).

use specula_engine::timing::{Span, SpanLog};

/// One span's statistics over a run, in microseconds.
pub struct SpanSummary {
    /// The span.
    pub span: Span,
    /// Recordings.
    pub count: usize,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Longest.
    pub max_us: f64,
    /// Share of the summed time of all spans.
    pub share: f64,
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Median of `v` in microseconds (nanosecond samples).
pub fn median_us(v: &[u64]) -> f64 {
    let mut s: Vec<f64> = v.iter().map(|&n| n as f64 / 1e3).collect();
    s.sort_by(f64::total_cmp);
    percentile(&s, 0.5)
}

/// Per-span statistics of `log`, in step order.
pub fn summarize(log: &SpanLog) -> Vec<SpanSummary> {
    let total: f64 = log.samples.values().flatten().map(|&n| n as f64).sum();
    Span::ALL
        .iter()
        .filter_map(|&span| {
            let v = log.samples.get(&span)?;
            let mut s: Vec<f64> = v.iter().map(|&n| n as f64 / 1e3).collect();
            s.sort_by(f64::total_cmp);
            let sum: f64 = s.iter().sum();
            Some(SpanSummary {
                span,
                count: s.len(),
                mean_us: sum / s.len().max(1) as f64,
                p50_us: percentile(&s, 0.5),
                p90_us: percentile(&s, 0.9),
                p99_us: percentile(&s, 0.99),
                max_us: s.last().copied().unwrap_or(0.0),
                share: if total > 0.0 { sum * 1e3 / total } else { 0.0 },
            })
        })
        .collect()
}

/// CSV header of [`csv_rows`].
pub const SPANS_HEADER: &str =
    "mode,batch_size,span,count,mean_us,p50_us,p90_us,p99_us,max_us,share";

/// CSV rows of a span summary for one (mode, batch).
pub fn csv_rows(mode: &str, batch: usize, log: &SpanLog) -> String {
    summarize(log)
        .iter()
        .map(|s| {
            format!(
                "{mode},{batch},{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{:.4}\n",
                s.span.name(),
                s.count,
                s.mean_us,
                s.p50_us,
                s.p90_us,
                s.p99_us,
                s.max_us,
                s.share
            )
        })
        .collect()
}
