//! Row groups of two runs matched by identity, and the change of each
//! measure from A to B.

use super::Settings;
use crate::run_folder::{group_key, group_label, Record, Run, RunFolderError};
use crate::stats::{classify, mean, relative_change, Interval, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// The measures compared, higher being better for all of them.
const MEASURES: [&str; 5] = [
    "tau",
    "accept_rate",
    "throughput_tok_s",
    "speedup",
    "cpu_speedup",
];

/// The columns both runs need.
const NEEDED: [&str; 8] = [
    "row_key",
    "steps",
    "topk",
    "num_draft_tokens",
    "batch_size",
    "prompt_set",
    "repeat",
    "tau",
];

/// One measure of one row group.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The runs.csv column.
    pub measure: &'static str,
    /// Mean over A's repeats.
    pub a: f64,
    /// Mean over B's repeats.
    pub b: f64,
    /// Repeats of A.
    pub n_a: usize,
    /// Repeats of B.
    pub n_b: usize,
    /// mean(B) / mean(A) - 1.
    pub relative: f64,
    /// Its bootstrap interval, where both sides have two or more repeats.
    pub interval: Option<Interval>,
    /// What the change amounts to.
    pub verdict: Verdict,
}

/// One matched row group.
#[derive(Debug, Clone, Serialize)]
pub struct RowChange {
    /// Row key without the repeat.
    pub label: String,
    /// Draft depth.
    pub steps: usize,
    /// Changes per measure.
    pub changes: Vec<Change>,
    /// The row's verdict: speedup's for speculative rows, throughput's for baselines.
    pub verdict: Verdict,
}

impl RowChange {
    /// The change of the measure the verdict is read from.
    pub fn headline(&self) -> Option<&Change> {
        let m = if self.steps > 0 {
            "speedup"
        } else {
            "throughput_tok_s"
        };
        self.changes.iter().find(|c| c.measure == m)
    }
}

/// The comparison of two runs.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Matched row groups, in A's order.
    pub rows: Vec<RowChange>,
    /// Row groups only in A.
    pub only_a: Vec<String>,
    /// Row groups only in B.
    pub only_b: Vec<String>,
}

fn groups(run: &Run) -> (Vec<String>, BTreeMap<String, Vec<&Record>>) {
    let mut order = Vec::new();
    let mut map: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in &run.rows {
        let k = group_key(r);
        if !map.contains_key(&k) {
            order.push(k.clone());
        }
        map.entry(k).or_default().push(r);
    }
    (order, map)
}

fn change(measure: &'static str, a: &[f64], b: &[f64], s: &Settings, key: &str) -> Option<Change> {
    let (ma, mb) = (mean(a)?, mean(b)?);
    let relative = if ma != 0.0 { mb / ma - 1.0 } else { 0.0 };
    let interval = relative_change(a, b, &s.bootstrap, &format!("{key}|{measure}"));
    let verdict = match &interval {
        Some(i) => classify(i, s.noise),
        None => classify(
            &Interval {
                estimate: relative,
                lower: relative,
                upper: relative,
            },
            s.noise,
        ),
    };
    Some(Change {
        measure,
        a: ma,
        b: mb,
        n_a: a.len(),
        n_b: b.len(),
        relative,
        interval,
        verdict,
    })
}

/// Matches the rows of `a` and `b` and measures every change.
pub fn compare_runs(a: &Run, b: &Run, s: &Settings) -> Result<Comparison, RunFolderError> {
    a.require(&NEEDED)?;
    b.require(&NEEDED)?;
    let (order_a, ga) = groups(a);
    let (order_b, gb) = groups(b);
    let mut rows = Vec::new();
    let mut only_a = Vec::new();
    for k in &order_a {
        let ra = &ga[k];
        let Some(rb) = gb.get(k) else {
            only_a.push(group_label(ra[0]));
            continue;
        };
        let steps = ra[0].num("steps").unwrap_or(0.0) as usize;
        let changes: Vec<Change> = MEASURES
            .iter()
            .filter(|m| steps > 0 || !matches!(**m, "accept_rate" | "speedup" | "cpu_speedup"))
            .filter_map(|m| {
                let va: Vec<f64> = ra.iter().filter_map(|r| r.num(m)).collect();
                let vb: Vec<f64> = rb.iter().filter_map(|r| r.num(m)).collect();
                change(m, &va, &vb, s, k)
            })
            .collect();
        let mut row = RowChange {
            label: group_label(ra[0]),
            steps,
            changes,
            verdict: Verdict::WithinNoise,
        };
        row.verdict = row.headline().map_or(Verdict::WithinNoise, |c| c.verdict);
        rows.push(row);
    }
    let only_b = order_b
        .iter()
        .filter(|k| !ga.contains_key(*k))
        .map(|k| group_label(gb[k][0]))
        .collect();
    Ok(Comparison {
        rows,
        only_a,
        only_b,
    })
}
