//! `positions.csv`: per-position acceptance a_k of every speculative row
//! (the fraction of verify steps whose accepted path reaches depth k),
//! keyed by `run_id` + `row_key` (the key of runs.csv).

use super::csv_file::AppendCsv;
use super::schema::POSITIONS_COLUMNS;
use super::{Row, RowWriter, RunFolderError};
use std::path::Path;

/// The positions.csv writer.
#[derive(Debug)]
pub struct PositionsCsv(AppendCsv);

impl PositionsCsv {
    /// Opens (or creates) `path`.
    pub fn open(path: &Path) -> Result<PositionsCsv, RunFolderError> {
        AppendCsv::open(path, &POSITIONS_COLUMNS).map(PositionsCsv)
    }
}

impl RowWriter for PositionsCsv {
    fn write(&mut self, row: &Row) -> Result<(), RunFolderError> {
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
