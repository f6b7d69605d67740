//! A row's identity across runs (the values of the [`IDENTITY`] columns),
//! its group (the identity without [`REPEAT_COLUMNS`]: its repeats) and the
//! index of a run's rows by identity.

use super::row_key::without_repeat;
use super::schema::{IDENTITY, REPEAT_COLUMNS};
use super::{Record, Run, RunFolderError};
use std::collections::BTreeMap;

fn key(r: &Record, skip: &[&str]) -> String {
    IDENTITY
        .iter()
        .filter(|c| !skip.contains(c))
        .map(|c| r.text(c))
        .collect::<Vec<_>>()
        .join("|")
}

/// The row's identity (repeat and seed included).
pub fn row_identity(r: &Record) -> String {
    key(r, &[])
}

/// The row's group: its identity without `repeat` and `seed`.
pub fn group_key(r: &Record) -> String {
    key(r, &REPEAT_COLUMNS)
}

/// A readable name of the row's group: its row key without the `.rN` repeat part.
pub fn group_label(r: &Record) -> String {
    without_repeat(r.key(), r.text("repeat"))
}

/// The rows of a run by identity (index into `run.rows`), refusing two rows
/// with one identity.
pub fn by_identity(run: &Run) -> Result<BTreeMap<String, usize>, RunFolderError> {
    let mut out = BTreeMap::new();
    for (i, r) in run.rows.iter().enumerate() {
        if let Some(j) = out.insert(row_identity(r), i) {
            return Err(RunFolderError::malformed(
                &run.runs_path,
                format!(
                    "rows {} and {} have the same identity ({}); give each run its own file",
                    j + 2,
                    i + 2,
                    r.key()
                ),
            ));
        }
    }
    Ok(out)
}
