//! Explaining a run: expected tau from per-position acceptance beside the
//! measured tau, live acceptance beside the draft's training accuracy, the
//! break-even tau from the measured span costs, and a verdict per row
//! (none from a break-even tau below 1, which no undisturbed measurement
//! gives), beside both speedups and whether they say the machine was
//! contended.

pub mod context_tiers;
pub mod slices;
pub mod training;

use crate::run_folder::row_key::baseline_of;
use crate::run_folder::schema::TAU_CONFIG_ERROR;
use crate::run_folder::summary::contention;
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
    /// Measured wall-clock speedup over the same-run baseline.
    pub speedup: Option<f64>,
    /// Measured CPU-time speedup over the same-run baseline.
    pub cpu_speedup: Option<f64>,
    /// `speedup / cpu_speedup`.
    pub wall_over_cpu: Option<f64>,
    /// Whether the two speedups disagree so much that the machine was
    /// contended (see [`crate::run_folder::summary::CONTENTION_RATIO`]); the
    /// span timings behind the break-even tau are then suspect too.
    pub contended: bool,
    /// Whether tau is so close to 1 that the run is likely misconfigured.
    pub likely_misconfigured: bool,
    /// The verdict.
    pub status: VerdictKind,
    /// The verdict, in words.
    pub verdict: String,
    /// Acceptance by prompt category and by context length (requests.csv).
    pub slices: slices::RowSlices,
}

/// What the analysis concludes about a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// tau about 1: a configuration error, not a result.
    LikelyConfigError,
    /// No span timings (spans off): nothing to weigh tau against.
    NoTiming,
    /// A break-even tau below 1, which no undisturbed measurement gives: no verdict.
    ImplausibleTiming,
    /// tau below the break-even tau.
    NetLoss,
    /// tau at or above the break-even tau.
    Pays,
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

fn verdict(a: &RowAnalysis) -> (VerdictKind, String) {
    if a.likely_misconfigured {
        return (VerdictKind::LikelyConfigError, format!(
            "likely a configuration error, not a result: tau {:.2} means the draft is almost never accepted (draft fed other hidden states than it was trained on, or none): run `specula audit`",
            a.tau
        ));
    }
    let Some((be, cost)) = a.break_even_tau.zip(a.step_us) else {
        return (
            VerdictKind::NoTiming,
            format!(
                "tau {:.2}; no span timings to weigh it against (run with spans on)",
                a.tau
            ),
        );
    };
    if be < 1.0 {
        return (VerdictKind::ImplausibleTiming, format!(
            "no verdict: the measured break-even tau {be:.2} is below 1, which cannot be (a speculative step does a baseline step's work and drafts besides), so the span timings were disturbed, most likely by other jobs on the cores; rerun on a quiet machine"
        ));
    }
    let draft_share = 100.0 * cost.draft / cost.total();
    let (kind, mut text) = if a.tau < be {
        (VerdictKind::NetLoss, format!("speculation is a net loss: tau {:.2} < break-even {be:.2}; drafting is {draft_share:.0}% of the step", a.tau))
    } else {
        (VerdictKind::Pays, format!("speculation pays: tau {:.2} >= break-even {be:.2}; drafting is {draft_share:.0}% of the step", a.tau))
    };
    if a.contended {
        text.push_str(&format!(
            " (but the machine was contended: speedup {} against cpu_speedup {}, so these span timings are suspect)",
            a.speedup.map_or("-".into(), |x| format!("{x:.2}x")),
            a.cpu_speedup.map_or("-".into(), |x| format!("{x:.2}x"))
        ));
    }
    (kind, text)
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
    let mut by_row = slices::row_slices(&run.dir)?;
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
        let (speedup, cpu_speedup) = (row.num("speedup"), row.num("cpu_speedup"));
        let (wall_over_cpu, contended) = contention(speedup, cpu_speedup);
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
            speedup,
            cpu_speedup,
            wall_over_cpu,
            contended,
            likely_misconfigured: tau <= TAU_CONFIG_ERROR,
            status: VerdictKind::NoTiming,
            verdict: String::new(),
            slices: by_row.remove(key).unwrap_or_default(),
        };
        (a.status, a.verdict) = verdict(&a);
        out.push(a);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tau: f64, break_even: f64) -> RowAnalysis {
        RowAnalysis {
            row_key: "m.s3k1n4.b1.builtin.t0.r0".into(),
            tau,
            expected_tau: tau,
            per_position: Vec::new(),
            conditional: Vec::new(),
            trained_accuracy: None,
            step_us: Some(StepCost {
                draft: 100.0,
                verify: 500.0,
                overhead: 20.0,
            }),
            baseline_step_us: Some(620.0 / break_even),
            break_even_tau: Some(break_even),
            speedup: Some(2.19),
            cpu_speedup: Some(1.06),
            wall_over_cpu: Some(2.19 / 1.06),
            contended: true,
            likely_misconfigured: false,
            status: VerdictKind::NoTiming,
            verdict: String::new(),
            slices: Default::default(),
        }
    }

    /// Regression: analyze said "speculation pays" from a break-even tau of
    /// 0.73, which cannot be below 1.
    #[test]
    fn a_break_even_tau_below_one_gives_no_verdict() {
        let (kind, text) = verdict(&row(1.9, 0.73));
        assert_eq!(kind, VerdictKind::ImplausibleTiming);
        assert!(
            text.starts_with("no verdict") && !text.contains("pays"),
            "{text}"
        );
    }

    #[test]
    fn a_verdict_from_a_contended_machine_says_so() {
        let (kind, text) = verdict(&row(1.9, 1.4));
        assert_eq!(kind, VerdictKind::Pays);
        assert!(text.contains("contended"), "{text}");
        let (kind, _) = verdict(&row(1.2, 1.4));
        assert_eq!(kind, VerdictKind::NetLoss);
    }
}
