//! The gate's instruction counts (costs.csv, written by `specula cost`):
//! per row group and measure (prefill, draft, verify, step, token), the
//! current count per call against the baseline's, within `cost_tolerance`
//! (relative; default 0.5%). The counts do not move with the machine's
//! load, so they are judged exactly where timings cannot be.

use super::check::{Check, NotJudged, Shown, Status, Values};
use super::policy::{Measure, Policy};
use super::GateError;
use crate::cost::{self, CostError};
use crate::run_folder::Run;
use std::path::Path;

fn unusable(e: CostError, dir: &Path) -> GateError {
    GateError::unjudgeable(&dir.join(cost::table::COSTS_CSV), e.to_string())
}

/// A check of one count that could not be judged, saying why in `change`.
fn not_judged(row: &str, measure: &str, why: NotJudged, change: String) -> Check {
    Check {
        row: row.to_string(),
        measure: measure.to_string(),
        status: Status::NotJudged,
        baseline: Values::Numbers(Vec::new()),
        current: Values::Numbers(Vec::new()),
        change: None,
        interval: None,
        tolerance: None,
        not_judged: Some(why),
        shown: Shown {
            baseline: "-".into(),
            current: "-".into(),
            change,
        },
    }
}

/// Status of a count: more instructions beyond `tol` regress, fewer improve.
pub fn cost_status(baseline: f64, current: f64, tol: f64) -> Status {
    let change = current / baseline - 1.0;
    if !change.is_finite() || change > tol {
        Status::Regressed
    } else if change < -tol {
        Status::Improved
    } else {
        Status::Pass
    }
}

/// The count checks of `current` against `baseline`, and notes.
pub fn checks(
    baseline: &Run,
    current: &Run,
    policy: &Policy,
) -> Result<(Vec<Check>, Vec<String>), GateError> {
    if !policy.checks(Measure::Cost) {
        return Ok((Vec::new(), Vec::new()));
    }
    let Some((base, base_settings)) =
        cost::read(&baseline.dir).map_err(|e| unusable(e, &baseline.dir))?
    else {
        return Ok((
            Vec::new(),
            vec!["the baseline has no costs.csv: instruction counts were not judged (`specula cost SPEC --out RUN_DIR` makes one)".into()],
        ));
    };
    let Some((cur, cur_settings)) =
        cost::read(&current.dir).map_err(|e| unusable(e, &current.dir))?
    else {
        return Ok((
            vec![not_judged(
                "(all rows)",
                "instructions/all",
                NotJudged::NoCosts,
                "the current run has no costs.csv: run `specula cost SPEC --out RUN_DIR` with the baseline's spec".into(),
            )],
            Vec::new(),
        ));
    };
    let differ = base_settings.differences(&cur_settings);
    if !differ.is_empty() {
        return Ok((
            vec![not_judged(
                "(all rows)",
                "instructions/all",
                NotJudged::CostSettingsDiffer,
                format!("counted under other settings: {}", differ.join("; ")),
            )],
            Vec::new(),
        ));
    }
    let tol = policy.cost_tolerance;
    let mut out = Vec::new();
    for b in &base {
        let measure = format!("instructions/{}", b.measure);
        let Some(c) = cur
            .iter()
            .find(|c| c.row == b.row && c.measure == b.measure)
        else {
            out.push(not_judged(
                &b.row,
                &measure,
                NotJudged::NoCosts,
                "no count in the current run's costs.csv".into(),
            ));
            continue;
        };
        let change = c.per_call / b.per_call - 1.0;
        out.push(Check {
            row: b.row.clone(),
            measure,
            status: cost_status(b.per_call, c.per_call, tol),
            baseline: Values::Numbers(vec![b.per_call]),
            current: Values::Numbers(vec![c.per_call]),
            change: Some(change),
            interval: None,
            tolerance: Some(tol),
            not_judged: None,
            shown: Shown {
                baseline: format!("{:.0} (n={})", b.per_call, b.calls),
                current: format!("{:.0} (n={})", c.per_call, c.calls),
                change: format!("{:+.3}% (tolerance {:.1}%)", 100.0 * change, 100.0 * tol),
            },
        });
    }
    Ok((out, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_instructions_beyond_the_tolerance_regress() {
        assert_eq!(cost_status(100.0, 100.4, 0.005), Status::Pass);
        assert_eq!(cost_status(100.0, 101.0, 0.005), Status::Regressed);
        assert_eq!(cost_status(100.0, 99.0, 0.005), Status::Improved);
        assert_eq!(cost_status(0.0, 1.0, 0.005), Status::Regressed);
    }
}
