//! The gate's inputs, checked before anything is judged: both runs have
//! the columns the policy needs and the same columns as each other, the
//! per-position file when positions are checked, and every baseline row
//! has its match in the current run. Any failure is unusable input (exit 2)
//! with one line naming the file and the column or row.

use super::policy::{Measure, Policy};
use super::GateError;
use crate::run_folder::schema::IDENTITY;
use crate::run_folder::{by_identity, row_identity, Run};

/// Columns every gate needs besides the identity columns, whatever the policy.
const ALSO_ALWAYS: [&str; 2] = ["row_key", "flag"];

fn needed(policy: &Policy) -> Vec<&str> {
    let mut cols: Vec<&str> = IDENTITY.iter().chain(&ALSO_ALWAYS).copied().collect();
    for m in &policy.measures {
        match m {
            Measure::Tau => cols.push("tau"),
            Measure::AcceptRate => cols.push("accept_rate"),
            Measure::Lossless => cols.push("lossless"),
            Measure::Speedup => {
                cols.push(policy.timing_column.as_str());
                cols.push(if policy.timing_column == "speedup" {
                    "throughput_tok_s"
                } else {
                    "cpu_tok_s"
                });
            }
            Measure::Positions | Measure::Cost | Measure::GpuSpans => {}
        }
    }
    cols
}

/// Checks both runs against the policy and each other.
pub fn check(baseline: &Run, current: &Run, policy: &Policy) -> Result<(), GateError> {
    let cols = needed(policy);
    for run in [baseline, current] {
        run.require(&cols)?;
        run.require_numbers(&policy.timing_column)?;
    }
    for (a, b) in [(baseline, current), (current, baseline)] {
        if let Some(c) = a.header.iter().find(|c| !b.header.contains(c)) {
            return Err(GateError::unjudgeable(
                &b.runs_path,
                format!(
                    "mismatched schemas: no column `{c}`, which {} has",
                    a.runs_path.display()
                ),
            ));
        }
    }
    if policy.checks(Measure::Positions) {
        for r in [baseline, current] {
            if !r.has_positions {
                return Err(GateError::unjudgeable(
                    &r.dir.join("positions.csv"),
                    "missing (positions are checked; drop `positions` from the policy's measures to skip them)",
                ));
            }
        }
    }
    let cur = by_identity(current)?;
    by_identity(baseline)?;
    let missing: Vec<&str> = baseline
        .rows
        .iter()
        .filter(|r| !cur.contains_key(&row_identity(r)))
        .map(|r| r.text("row_key"))
        .collect();
    if let Some(first) = missing.first() {
        return Err(GateError::unjudgeable(
            &current.runs_path,
            format!(
                "{} of {} baseline rows have no match (same config, batch, prompts, temperature, repeat), e.g. `{first}` of {}; run the baseline's spec, or refresh the baseline",
                missing.len(),
                baseline.rows.len(),
                baseline.runs_path.display()
            ),
        ));
    }
    Ok(())
}
