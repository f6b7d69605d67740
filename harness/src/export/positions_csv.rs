//! `positions.csv`: per-position acceptance a_k of every speculative row
//! (the fraction of verify steps whose accepted path reaches depth k),
//! keyed by `run_id` + `row_key` (the key of runs.csv).

use super::{AppendCsv, Row, RowWriter};
use crate::sweep::SweepError;
use std::path::Path;

/// The header.
pub const HEADER: [&str; 4] = ["run_id", "row_key", "position", "acceptance_rate"];

/// The positions.csv writer.
#[derive(Debug)]
pub struct PositionsCsv(AppendCsv);

impl PositionsCsv {
    /// Opens (or creates) `path`.
    pub fn open(path: &Path) -> Result<PositionsCsv, SweepError> {
        AppendCsv::open(path, &HEADER).map(PositionsCsv)
    }
}

impl RowWriter for PositionsCsv {
    fn write(&mut self, row: &Row) -> Result<(), SweepError> {
        let records: Vec<Vec<String>> = row
            .positions
            .iter()
            .enumerate()
            .map(|(k, a)| {
                vec![
                    row.run_id.clone(),
                    row.row_key.clone(),
                    (k + 1).to_string(),
                    a.to_string(),
                ]
            })
            .collect();
        if records.is_empty() {
            return Ok(());
        }
        self.0.append(&records)
    }
}
