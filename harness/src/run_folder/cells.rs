//! What the cells of a run folder can hold, checked once by the reader.
//! A number no run can produce (NaN or infinity; a negative count, time,
//! rate or tau; a fraction of a count; an accept rate or a_k outside
//! [0, 1]; a tau outside what one verify step can emit) and a row written
//! twice are refused, naming the file, line and column: a baseline with
//! tau NaN once passed the gate, and report and analyze took a duplicated
//! runs.csv row and tau -5 for results.

use super::schema::{NUMERIC_COLUMNS, WHOLE_COLUMNS};
use super::RunFolderError;
use std::collections::HashMap;
use std::path::Path;

/// The file line of data row `row` (0-based; the header is line 1).
pub fn line(row: usize) -> usize {
    row + 2
}

/// The number in `cell`, column `col` of data row `row` (0-based): a
/// finite number, never negative, or an error naming the line and column.
pub fn number(path: &Path, row: usize, col: &str, cell: &str) -> Result<f64, RunFolderError> {
    let bad = |why: &str| {
        RunFolderError::malformed(
            path,
            format!("line {}: column `{col}`: {cell:?} {why}", line(row)),
        )
    };
    let v: f64 = cell.parse().map_err(|_| bad("is not a number"))?;
    if !v.is_finite() {
        return Err(bad("is not a finite number"));
    }
    if v < 0.0 {
        return Err(bad("is negative (no count, time, rate or ratio is)"));
    }
    Ok(v)
}

/// A whole number ([`number`], without a fraction).
pub fn whole(path: &Path, row: usize, col: &str, cell: &str) -> Result<f64, RunFolderError> {
    let v = number(path, row, col, cell)?;
    if v.fract() != 0.0 {
        return Err(RunFolderError::malformed(
            path,
            format!(
                "line {}: column `{col}`: {cell:?} is not a whole number (it counts)",
                line(row)
            ),
        ));
    }
    Ok(v)
}

/// A fraction in [0, 1] ([`number`], at most 1).
pub fn fraction(path: &Path, row: usize, col: &str, cell: &str) -> Result<f64, RunFolderError> {
    let v = number(path, row, col, cell)?;
    if v > 1.0 {
        return Err(RunFolderError::malformed(
            path,
            format!(
                "line {}: column `{col}`: {cell:?} is above 1 (a fraction)",
                line(row)
            ),
        ));
    }
    Ok(v)
}

/// Why `tau` cannot be a row's acceptance length (docs/DESIGN.md 7.1:
/// tokens emitted by verify steps / verify steps), given its draft depth,
/// tokens verified per step and verify steps where runs.csv has them.
pub fn impossible_tau(
    tau: f64,
    steps: Option<f64>,
    num_draft_tokens: Option<f64>,
    verify_steps: Option<f64>,
) -> Option<String> {
    if verify_steps == Some(0.0) {
        return (tau != 0.0).then(|| format!("{tau} with 0 verify steps (tau is 0 then)"));
    }
    if tau == 0.0 && verify_steps.is_none() {
        return None;
    }
    if tau < 1.0 {
        return Some(format!(
            "{tau} is below 1 (every verify step emits at least the target's token)"
        ));
    }
    let steps = steps?;
    // One verify step emits its accepted drafts (at most the depth and at
    // most the drafted tokens) plus the target's token.
    let drafted = num_draft_tokens.map_or(steps, |n| (n - 1.0).max(0.0));
    let longest = steps.min(drafted) + 1.0;
    (tau > longest).then(|| {
        format!("{tau} is above {longest}, the most one verify step emits at steps {steps}")
    })
}

/// Checks every runs.csv row (cells by `columns`, the header's indices):
/// numbers as [`number`], counts as [`whole`], `accept_rate` as
/// [`fraction`], `tau` as [`impossible_tau`], and no row key twice.
pub fn check_runs(
    path: &Path,
    columns: &HashMap<String, usize>,
    rows: &[Vec<String>],
) -> Result<(), RunFolderError> {
    let mut keys: HashMap<&str, usize> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        let mut values: HashMap<&str, f64> = HashMap::new();
        for col in NUMERIC_COLUMNS {
            let Some(cell) = columns.get(col).map(|&c| row[c].as_str()) else {
                continue;
            };
            if cell.is_empty() {
                continue;
            }
            let v = if WHOLE_COLUMNS.contains(&col) {
                whole(path, i, col, cell)?
            } else if col == "accept_rate" {
                fraction(path, i, col, cell)?
            } else {
                number(path, i, col, cell)?
            };
            values.insert(col, v);
        }
        if let Some(&tau) = values.get("tau") {
            let v = |c: &str| values.get(c).copied();
            if let Some(why) =
                impossible_tau(tau, v("steps"), v("num_draft_tokens"), v("verify_steps"))
            {
                return Err(RunFolderError::malformed(
                    path,
                    format!("line {}: column `tau`: {why}", line(i)),
                ));
            }
        }
        if let Some(&c) = columns.get("row_key") {
            let key = row[c].as_str();
            if let Some(first) = keys.insert(key, i).filter(|_| !key.is_empty()) {
                return Err(RunFolderError::malformed(
                    path,
                    format!(
                        "line {}: column `row_key`: `{key}` is line {}'s too (a row written twice)",
                        line(i),
                        line(first)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses a second line `row` (0-based) for one (row key, `what`) pair of
/// positions.csv or kernels.csv; `seen` holds the earlier ones.
pub fn once(
    path: &Path,
    seen: &mut HashMap<(String, String), usize>,
    row: usize,
    key: &str,
    what: &str,
) -> Result<(), RunFolderError> {
    match seen.insert((key.to_string(), what.to_string()), row) {
        Some(first) => Err(RunFolderError::malformed(
            path,
            format!(
                "line {}: row `{key}`, {what}: line {} has it already (a line written twice)",
                line(row),
                line(first)
            ),
        )),
        None => Ok(()),
    }
}
