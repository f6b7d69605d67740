//! Run folders written by an earlier version: their CSV files hold the
//! columns of that version, which are this version's first ones (columns
//! are only ever added at the end: docs/DESIGN.md 8). `--resume` and
//! `specula merge` bring such a file to this version's columns, each added
//! column empty in every older line (unknown: never a value made up for
//! it), and refuse any other header, naming the file.

use super::csv_file::{AppendCsv, Table};
use super::RunFolderError;
use std::path::Path;

/// `table` (read from `path`) with this version's `columns`: unchanged when
/// it has them, its lines padded with empty cells when its header is their
/// first ones (an earlier version's file), an error otherwise.
pub fn to_current(
    mut table: Table,
    columns: &[&str],
    path: &Path,
) -> Result<Table, RunFolderError> {
    if table.has_header(columns) {
        return Ok(table);
    }
    let older =
        table.header.len() < columns.len() && table.header.iter().zip(columns).all(|(a, b)| a == b);
    if !older {
        return Err(RunFolderError::malformed(
            path,
            format!(
                "its columns are not this version's, nor an earlier version's (found {}; expected {} \
                 or a first part of them)",
                table.header.join(","),
                columns.join(",")
            ),
        ));
    }
    for row in &mut table.rows {
        row.resize(columns.len(), String::new());
    }
    table.header = columns.iter().map(|c| c.to_string()).collect();
    Ok(table)
}

/// Rewrites the file at `path` with this version's `columns` when it was
/// written by an earlier version ([`to_current`]); says whether it did.
pub fn upgrade_file(path: &Path, columns: &[&str]) -> Result<bool, RunFolderError> {
    if !path.exists() {
        return Ok(false);
    }
    let table = Table::read(path)?;
    if table.has_header(columns) {
        return Ok(false);
    }
    let table = to_current(table, columns, path)?;
    let tmp = path.with_extension("csv.upgrade");
    let _ = std::fs::remove_file(&tmp);
    AppendCsv::open(&tmp, columns)?.append(&table.rows)?;
    std::fs::rename(&tmp, path).map_err(|e| RunFolderError::write(path, e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_header_is_padded_with_empty_cells_and_any_other_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("requests.csv");
        std::fs::write(&p, "a,b\n1,2\n3,4\n").unwrap();
        assert!(upgrade_file(&p, &["a", "b", "c"]).unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a,b,c\n1,2,\n3,4,\n");
        assert!(
            !upgrade_file(&p, &["a", "b", "c"]).unwrap(),
            "already current"
        );
        let err = upgrade_file(&p, &["a", "x", "c", "d"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("requests.csv") && err.contains("found a,b,c"),
            "{err}"
        );
        let newer = to_current(Table::read(&p).unwrap(), &["a", "b"], &p);
        assert!(newer.is_err(), "a later version's file is not cut down");
    }
}
