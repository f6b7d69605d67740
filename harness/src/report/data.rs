//! What the report's tables and plots are made of: one [`RowView`] per
//! runs.csv row, with the draft config's label, and averages over repeats.

use crate::run_folder::{Record, Run};
use std::collections::BTreeMap;

/// The fields of a row the report shows.
#[derive(Debug, Clone)]
pub struct RowView {
    /// The row key.
    pub key: String,
    /// The model pair's name from the row key.
    pub model: String,
    /// The draft config's label from the row key (`base`, `s3k1n4`, ...).
    pub config: String,
    /// Draft depth (0 = baseline).
    pub steps: usize,
    /// Branching.
    pub topk: usize,
    /// Prompts per call.
    pub batch: usize,
    /// Prompt set.
    pub prompt_set: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// Repeat index.
    pub repeat: usize,
    /// Acceptance length.
    pub tau: f64,
    /// Accept rate (speculative rows).
    pub accept_rate: f64,
    /// Decode tokens per second.
    pub throughput: f64,
    /// Wall-clock speedup over the same-run baseline.
    pub speedup: Option<f64>,
    /// CPU-time speedup over the same-run baseline.
    pub cpu_speedup: Option<f64>,
    /// `true`, `false` or empty.
    pub lossless: String,
    /// Flagged `likely_config_error` in runs.csv.
    pub flagged: bool,
}

impl RowView {
    /// Reads the view of one record.
    pub fn of(r: &Record) -> RowView {
        let key = r.text("row_key").to_string();
        let config = key.split('.').nth(1).unwrap_or("?").to_string();
        let model = key.split('.').next().unwrap_or("?").to_string();
        let num = |c: &str| r.num(c).unwrap_or(0.0);
        RowView {
            model,
            config,
            steps: num("steps") as usize,
            topk: num("topk") as usize,
            batch: num("batch_size") as usize,
            prompt_set: r.text("prompt_set").to_string(),
            temperature: num("temperature"),
            repeat: num("repeat") as usize,
            tau: num("tau"),
            accept_rate: num("accept_rate"),
            throughput: num("throughput_tok_s"),
            speedup: r.num("speedup"),
            cpu_speedup: r.num("cpu_speedup"),
            lossless: r.text("lossless").to_string(),
            flagged: r.likely_config_error(),
            key,
        }
    }
}

/// Every row of `run`.
pub fn views(run: &Run) -> Vec<RowView> {
    run.rows.iter().map(RowView::of).collect()
}

/// Mean of `f` over rows grouped by `key`, keys in first-seen order.
pub fn mean_by<K: Ord + Clone>(
    rows: &[&RowView],
    key: impl Fn(&RowView) -> K,
    f: impl Fn(&RowView) -> Option<f64>,
) -> Vec<(K, f64, f64, f64)> {
    let mut order: Vec<K> = Vec::new();
    let mut acc: BTreeMap<K, Vec<f64>> = BTreeMap::new();
    for r in rows {
        let k = key(r);
        if let Some(v) = f(r) {
            if !acc.contains_key(&k) {
                order.push(k.clone());
            }
            acc.entry(k).or_default().push(v);
        }
    }
    order
        .into_iter()
        .map(|k| {
            let v = &acc[&k];
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (k, mean, lo, hi)
        })
        .collect()
}
