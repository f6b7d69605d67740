//! Explaining a run: expected tau from per-position acceptance beside the
//! measured tau, live acceptance beside the draft's training accuracy, the
//! break-even tau from the measured span costs, and a verdict per row.

mod read;

pub use read::{read_run, RunData};

use serde::Serialize;
use std::collections::BTreeMap;

/// tau at or below this, for a speculative row, means the draft is
/// effectively never accepted: a configuration error, not a result.
pub const TAU_CONFIG_ERROR: f64 = 1.05;

/// The analysis of one speculative row.
#[derive(Debug, Clone, Serialize)]
pub struct RowAnalysis {
    /// The row key.
    pub row_key: String,
    /// Measured tau (tokens per verify step).
    pub tau: f64,
    /// 1 + the sum of the per-position acceptance rates.
    pub expected_tau: f64,
    /// a_k for k = 1..steps.
    pub per_position: Vec<f64>,
    /// a_k / a_(k-1): the chance depth k is accepted once depth k-1 was.
    pub conditional: Vec<f64>,
    /// The draft's teacher-forced validation accuracy per unrolled step, if its training report says.
    pub trained_accuracy: Option<Vec<f64>>,
    /// Costs per decode step, microseconds: draft (draft + tree_build), verify, overhead (accept + kv_commit + sample).
    pub step_us: Option<StepCost>,
    /// The baseline's cost per decode step, microseconds.
    pub baseline_step_us: Option<f64>,
    /// (draft + verify + overhead) / baseline step: below it speculation loses.
    pub break_even_tau: Option<f64>,
    /// Measured speedup over the same-run baseline.
    pub speedup: Option<f64>,
    /// Whether tau is so close to 1 that the run is likely misconfigured.
    pub likely_misconfigured: bool,
    /// The verdict, in words.
    pub verdict: String,
}

/// Where a speculative step's time goes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StepCost {
    /// Draft forwards and tree building.
    pub draft: f64,
    /// The target's forward over the tree.
    pub verify: f64,
    /// Acceptance, KV commit and sampling.
    pub overhead: f64,
}

impl StepCost {
    /// The whole step.
    pub fn total(&self) -> f64 {
        self.draft + self.verify + self.overhead
    }
}

/// Per-step cost of a row from its span totals (`span -> (count, total_us)`),
/// per decode step (the number of `verify` spans).
fn step_cost(spans: &BTreeMap<String, (f64, f64)>) -> Option<StepCost> {
    let steps = spans.get("verify")?.0;
    if steps <= 0.0 {
        return None;
    }
    let total = |names: &[&str]| {
        names
            .iter()
            .filter_map(|n| spans.get(*n))
            .map(|(_, t)| t)
            .sum::<f64>()
            / steps
    };
    Some(StepCost {
        draft: total(&["draft", "tree_build"]),
        verify: total(&["verify"]),
        overhead: total(&["accept", "kv_commit", "sample"]),
    })
}

fn verdict(a: &RowAnalysis) -> String {
    if a.likely_misconfigured {
        return format!(
            "likely a configuration error, not a result: tau {:.2} means the draft is almost never accepted (draft fed other hidden states than it was trained on, or none): run `specula audit`",
            a.tau
        );
    }
    let Some((be, cost)) = a.break_even_tau.zip(a.step_us) else {
        return format!(
            "tau {:.2}; no span timings to weigh it against (run with spans on)",
            a.tau
        );
    };
    let draft_share = 100.0 * cost.draft / cost.total();
    if a.tau < be {
        format!("speculation is a net loss: tau {:.2} < break-even {be:.2}; drafting is {draft_share:.0}% of the step", a.tau)
    } else {
        format!("speculation pays: tau {:.2} >= break-even {be:.2}; drafting is {draft_share:.0}% of the step", a.tau)
    }
}

/// Analyses every speculative row of a run.
pub fn analyze(run: &RunData) -> Vec<RowAnalysis> {
    let mut out = Vec::new();
    for row in run.rows.iter().filter(|r| r.steps > 0) {
        let per_position = run.positions.get(&row.row_key).cloned().unwrap_or_default();
        let expected_tau = 1.0 + per_position.iter().sum::<f64>();
        let conditional = per_position.iter().scan(1.0, |prev, &a| {
            let c = if *prev > 0.0 { a / *prev } else { 0.0 };
            *prev = a;
            Some(c)
        });
        let step_us = run.spans.get(&row.row_key).and_then(step_cost);
        let baseline_step_us = row
            .baseline_key
            .as_ref()
            .and_then(|k| run.spans.get(k))
            .and_then(step_cost)
            .map(|c| c.total());
        let break_even_tau = step_us
            .zip(baseline_step_us)
            .filter(|(_, b)| *b > 0.0)
            .map(|(c, b)| c.total() / b);
        let mut a = RowAnalysis {
            row_key: row.row_key.clone(),
            tau: row.tau,
            expected_tau,
            per_position: per_position.clone(),
            conditional: conditional.collect(),
            trained_accuracy: run.trained_accuracy.get(&row.draft).cloned(),
            step_us,
            baseline_step_us,
            break_even_tau,
            speedup: row.speedup,
            likely_misconfigured: row.tau <= TAU_CONFIG_ERROR,
            verdict: String::new(),
        };
        a.verdict = verdict(&a);
        out.push(a);
    }
    out
}
