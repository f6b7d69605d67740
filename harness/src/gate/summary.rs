//! The gate's summary for a CI job page: the verdict first, then the
//! failing checks, then every check folded away, the policy, and notes.

use super::check::{Check, GateVerdict, Status};
use super::decision::Decision;
use super::policy::{OnInconclusive, Policy};
use crate::doc::{Block, Document, Table};
use crate::run_folder::environment::Difference;
use crate::run_folder::Run;

fn table(checks: &[&Check]) -> Table {
    let mut t = Table::new(&["row", "measure", "baseline", "current", "change", "status"]);
    for c in checks {
        t.push(vec![
            c.row.clone(),
            c.measure.clone(),
            c.shown.baseline.clone(),
            c.shown.current.clone(),
            c.shown.change.clone(),
            c.status.words().to_string(),
        ]);
    }
    t
}

/// The summary as a document; `environment` lists where the runs' build,
/// threads, CPU or load differ.
pub fn document(
    baseline: &Run,
    current: &Run,
    policy: &Policy,
    d: &Decision,
    environment: &[Difference],
) -> Document {
    let count = |s: Status| d.checks.iter().filter(|c| c.status == s).count();
    let verdict = d.verdict();
    let mut doc = Document::new(format!("specula gate: {}", verdict.title()));
    doc.para(format!(
        "{} checks: {} regressed, {} improved, {} passed, {} not judged.",
        d.checks.len(),
        count(Status::Regressed),
        count(Status::Improved),
        count(Status::Pass),
        count(Status::NotJudged)
    ));
    if verdict == GateVerdict::Inconclusive {
        doc.para(format!(
            "**Inconclusive**: nothing regressed, but {} checks could not be judged \
             (the reason is in each row's change column). What to do: for timings, rerun the \
             current run when the machine is as loaded as when the baseline was made, or with \
             more `--repeats`; or make a new baseline on this machine; for instruction counts, \
             run `specula cost` with the baseline's spec and settings. This policy {} \
             (`on_inconclusive`).",
            count(Status::NotJudged),
            match policy.on_inconclusive {
                OnInconclusive::Fail => "fails the job on it (exit 3)",
                OnInconclusive::Pass => "lets it pass (exit 0)",
            }
        ));
    }
    let measures: Vec<&str> = policy.measures.iter().map(|m| m.name()).collect();
    doc.push(Block::List(vec![
        format!("baseline: {}", baseline.describe()),
        format!("measures checked: {}", measures.join(", ")),
        format!("current: {}", current.describe()),
        format!(
            "deterministic measures: tau, accept_rate and a_k may drop by at most {}, {}, {}; lossless must stay true",
            policy.tau_tolerance, policy.accept_rate_tolerance, policy.position_tolerance
        ),
        format!(
            "{} (same-run ratio over repeats): change of the mean with its {:.0}% bootstrap interval ({} resamples, seed {}); regressed when the whole interval is below -{:.0}%",
            policy.timing_column,
            100.0 * (1.0 - policy.alpha),
            policy.resamples,
            policy.seed,
            100.0 * policy.noise_threshold
        ),
        format!(
            "instructions (costs.csv, `specula cost`): the count per call may rise by at most {:.1}%, whatever the load",
            100.0 * policy.cost_tolerance
        ),
    ]));
    if !environment.is_empty() {
        doc.heading(2, "Warnings");
        doc.push(Block::List(
            environment
                .iter()
                .map(|e| format!("warning: {e}"))
                .collect(),
        ));
    }
    let failing: Vec<_> = d
        .checks
        .iter()
        .filter(|c| c.status == Status::Regressed)
        .collect();
    if !failing.is_empty() {
        doc.heading(2, "Regressions");
        doc.push(Block::Table(table(&failing)));
    }
    let all: Vec<_> = d.checks.iter().collect();
    doc.push(Block::Details(
        format!("All {} checks", all.len()),
        vec![Block::Table(table(&all))],
    ));
    if !d.notes.is_empty() {
        doc.heading(2, "Notes");
        doc.push(Block::List(d.notes.clone()));
    }
    doc
}
