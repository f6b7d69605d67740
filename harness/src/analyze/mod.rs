//! Explaining a run: expected tau from per-position acceptance beside the
//! measured tau, live acceptance beside the draft's training accuracy, the
//! break-even tau from the measured span costs, and a verdict per row.

pub mod training;

use crate::run_folder::row_key::baseline_of;
use crate::run_folder::schema::TAU_CONFIG_ERROR;
use crate::run_folder::{Run, RunFolderError, SpanTotal};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

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

/// Per-step cost of a row from its span totals, per decode step (the
/// number of `verify` spans).
pub fn step_cost(spans: &BTreeMap<String, SpanTotal>) -> Option<StepCost> {
    let steps = spans.get("verify")?.count;
    if steps <= 0.0 {
        return None;
    }
    let total = |names: &[&str]| {
        names
            .iter()
            .filter_map(|n| spans.get(*n))
            .map(|t| t.total_us)
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

/// Where the draft `draft` (as runs.csv writes it) may be: relative to the
/// folder the run read its spec's paths from (meta.json `base_dir`), then
/// relative to the current folder.
fn draft_folders(run: &Run, draft: &str) -> Vec<PathBuf> {
    let base = run
        .meta
        .as_ref()
        .and_then(|m| m.get("base_dir"))
        .and_then(|b| b.as_str());
    let mut out: Vec<PathBuf> = base.map(|b| Path::new(b).join(draft)).into_iter().collect();
    out.push(PathBuf::from(draft));
    out
}

/// The columns an analysis reads.
const COLUMNS: [&str; 5] = ["row_key", "steps", "tau", "speedup", "draft"];

/// Analyses every speculative row of a run.
pub fn analyze(run: &Run) -> Result<Vec<RowAnalysis>, RunFolderError> {
    run.require(&COLUMNS)?;
    let mut trained: HashMap<&str, Option<Vec<f64>>> = HashMap::new();
    let mut out = Vec::new();
    for (i, row) in run.rows.iter().enumerate().filter(|(_, r)| r.speculative()) {
        let key = row.key();
        let tau = row.num("tau").ok_or_else(|| {
            RunFolderError::malformed(
                &run.runs_path,
                format!("row {}: column `tau` is empty", i + 2),
            )
        })?;
        let per_position = run.positions.get(key).cloned().unwrap_or_default();
        let expected_tau = 1.0 + per_position.iter().sum::<f64>();
        let conditional: Vec<f64> = per_position
            .iter()
            .scan(1.0, |prev, &a| {
                let c = if *prev > 0.0 { a / *prev } else { 0.0 };
                *prev = a;
                Some(c)
            })
            .collect();
        let step_us = run.spans.get(key).and_then(step_cost);
        let baseline_step_us = baseline_of(key)
            .and_then(|k| run.spans.get(&k))
            .and_then(step_cost)
            .map(|c| c.total());
        let break_even_tau = step_us
            .zip(baseline_step_us)
            .filter(|(_, b)| *b > 0.0)
            .map(|(c, b)| c.total() / b);
        let draft = row.text("draft");
        let trained_accuracy = trained
            .entry(draft)
            .or_insert_with(|| {
                (!draft.is_empty())
                    .then(|| {
                        draft_folders(run, draft)
                            .into_iter()
                            .find_map(|d| training::trained_accuracy(&d))
                    })
                    .flatten()
            })
            .clone();
        let mut a = RowAnalysis {
            row_key: key.to_string(),
            tau,
            expected_tau,
            per_position,
            conditional,
            trained_accuracy,
            step_us,
            baseline_step_us,
            break_even_tau,
            speedup: row.num("speedup"),
            likely_misconfigured: tau <= TAU_CONFIG_ERROR,
            verdict: String::new(),
        };
        a.verdict = verdict(&a);
        out.push(a);
    }
    Ok(out)
}
