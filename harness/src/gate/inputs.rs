//! The gate's inputs, checked before anything is judged: both runs have
//! the columns the policy needs and the same columns as each other, the
//! per-position file when positions are checked, and every baseline row
//! has its match in the current run. Any failure is unusable input (exit 2)
//! with one line naming the file and the column or row.

use super::policy::{Measure, Policy};
use crate::cli::CliError;
use crate::runs::{row_identity, Run, IDENTITY};
use std::collections::BTreeMap;

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
            Measure::Positions => {}
        }
    }
    cols
}

/// The rows of a run by identity, refusing two rows with one identity.
pub fn by_identity(run: &Run) -> Result<BTreeMap<String, usize>, CliError> {
    let mut out = BTreeMap::new();
    for (i, r) in run.rows.iter().enumerate() {
        if let Some(j) = out.insert(row_identity(r), i) {
            return Err(CliError::Input(format!(
                "{}: rows {} and {} have the same identity ({}); give each run its own file",
                run.runs_path.display(),
                j + 2,
                i + 2,
                r.text("row_key")
            )));
        }
    }
    Ok(out)
}

/// Checks both runs against the policy and each other.
pub fn check(baseline: &Run, current: &Run, policy: &Policy) -> Result<(), CliError> {
    let cols = needed(policy);
    let numeric = [
        "steps",
        "repeat",
        "tau",
        "accept_rate",
        policy.timing_column.as_str(),
    ];
    baseline.require(&cols, &numeric)?;
    current.require(&cols, &numeric)?;
    for (a, b) in [(baseline, current), (current, baseline)] {
        if let Some(c) = a.header.iter().find(|c| !b.header.contains(c)) {
            return Err(CliError::Input(format!(
                "{}: mismatched schemas: no column `{c}`, which {} has",
                b.runs_path.display(),
                a.runs_path.display()
            )));
        }
    }
    if policy.checks(Measure::Positions) {
        for r in [baseline, current] {
            if !r.has_positions {
                return Err(CliError::Input(format!(
                    "{}: missing (positions are checked; drop `positions` from the policy's measures to skip them)",
                    r.dir.join("positions.csv").display()
                )));
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
        return Err(CliError::Input(format!(
            "{}: {} of {} baseline rows have no match (same config, batch, prompts, temperature, repeat), e.g. `{first}` of {}; run the baseline's spec, or refresh the baseline",
            current.runs_path.display(),
            missing.len(),
            baseline.rows.len(),
            baseline.runs_path.display()
        )));
    }
    Ok(())
}
