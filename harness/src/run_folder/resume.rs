//! `--resume DIR`: what a run folder already holds, and its repair.
//!
//! A row is finished exactly when its line is in runs.csv (written last, in
//! one append). After a kill, the folder may hold a partial last line, or
//! positions/kernels/requests lines and a histogram log of the row that was
//! in flight; repair drops all of those, so the resumed run appends each
//! remaining row once and no finished row is lost or duplicated. A folder
//! an earlier version wrote is first brought to this version's columns
//! (the later columns empty in its lines: [`super::upgrade`]).

use super::csv_file::{AppendCsv, Table};
use super::requests_csv::{REQUESTS_COLUMNS, REQUESTS_CSV};
use super::schema::{
    HISTOGRAMS, KERNELS_COLUMNS, KERNELS_CSV, POSITIONS_COLUMNS, POSITIONS_CSV, RUNS_COLUMNS,
    RUNS_CSV,
};
use super::upgrade::upgrade_file;
use super::RunFolderError;
use std::collections::HashMap;
use std::path::Path;

/// The rows a folder already holds: row key -> throughput (tok/s), for the speedups of later rows.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// Finished rows by key.
    pub throughput: HashMap<String, f64>,
    /// Finished rows' output tokens per CPU second, by key.
    pub cpu_throughput: HashMap<String, f64>,
}

impl Finished {
    /// Whether row `key` is finished.
    pub fn contains(&self, key: &str) -> bool {
        self.throughput.contains_key(key)
    }
}

/// Cuts a partial last line (a write cut short by a kill).
fn drop_partial_line(path: &Path) -> Result<(), RunFolderError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| RunFolderError::write(path, e))?;
    f.set_len(keep as u64)
        .map_err(|e| RunFolderError::write(path, e))
}

/// Rewrites `path` keeping only lines whose `row_key` is finished.
fn keep_finished(path: &Path, header: &[&str], done: &Finished) -> Result<(), RunFolderError> {
    if !path.exists() {
        return Ok(());
    }
    drop_partial_line(path)?;
    let t = Table::read(path)?;
    let k = t.require("row_key", path)?;
    let keep: Vec<Vec<String>> = t
        .rows
        .iter()
        .filter(|r| done.contains(&r[k]))
        .cloned()
        .collect();
    if keep.len() == t.rows.len() {
        return Ok(());
    }
    let tmp = path.with_extension("csv.tmp");
    let _ = std::fs::remove_file(&tmp);
    AppendCsv::open(&tmp, header)?.append(&keep)?;
    std::fs::rename(&tmp, path).map_err(|e| RunFolderError::write(path, e))
}

/// Reads the finished rows of `dir` and repairs what a kill may have left.
pub fn repair(dir: &Path) -> Result<Finished, RunFolderError> {
    let runs = dir.join(RUNS_CSV);
    let mut done = Finished::default();
    for (name, columns) in [
        (RUNS_CSV, &RUNS_COLUMNS[..]),
        (POSITIONS_CSV, &POSITIONS_COLUMNS[..]),
        (KERNELS_CSV, &KERNELS_COLUMNS[..]),
        (REQUESTS_CSV, &REQUESTS_COLUMNS[..]),
    ] {
        let path = dir.join(name);
        if path.exists() {
            drop_partial_line(&path)?;
            upgrade_file(&path, columns)?;
        }
    }
    if runs.exists() {
        let t = Table::read(&runs)?;
        let (k, tp, cpu) = (
            t.require("row_key", &runs)?,
            t.require("throughput_tok_s", &runs)?,
            t.require("cpu_tok_s", &runs)?,
        );
        for r in &t.rows {
            let v = r[tp].parse().unwrap_or(0.0);
            done.cpu_throughput
                .insert(r[k].clone(), r[cpu].parse().unwrap_or(0.0));
            if done.throughput.insert(r[k].clone(), v).is_some() {
                return Err(RunFolderError::malformed(
                    &runs,
                    format!("row `{}` appears twice", r[k]),
                ));
            }
        }
    }
    keep_finished(&dir.join(POSITIONS_CSV), &POSITIONS_COLUMNS, &done)?;
    keep_finished(&dir.join(KERNELS_CSV), &KERNELS_COLUMNS, &done)?;
    keep_finished(&dir.join(REQUESTS_CSV), &REQUESTS_COLUMNS, &done)?;
    let hist = dir.join(HISTOGRAMS);
    if let Ok(entries) = std::fs::read_dir(&hist) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let finished = name
                .strip_suffix(".hlog")
                .is_some_and(|key| done.contains(key));
            if !finished {
                let p = e.path();
                std::fs::remove_file(&p).map_err(|err| RunFolderError::write(&p, err))?;
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_line_is_dropped() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.csv");
        std::fs::write(&p, "a,b\n1,2\n3,").unwrap();
        drop_partial_line(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a,b\n1,2\n");
    }

    /// Regression: requests.csv lines of the row in flight at a kill
    /// survived the repair, so the resumed row wrote them a second time.
    #[test]
    fn requests_lines_of_an_unfinished_row_are_dropped() {
        let t = tempfile::tempdir().unwrap();
        let row = |key: &str| -> Vec<String> {
            RUNS_COLUMNS
                .iter()
                .map(|c| match *c {
                    "row_key" => key.to_string(),
                    "throughput_tok_s" | "cpu_tok_s" => "1".to_string(),
                    _ => String::new(),
                })
                .collect()
        };
        AppendCsv::open(&t.path().join(RUNS_CSV), &RUNS_COLUMNS)
            .unwrap()
            .append(&[row("done")])
            .unwrap();
        let request = |key: &str| -> Vec<String> {
            REQUESTS_COLUMNS
                .iter()
                .map(|c| if *c == "row_key" { key } else { "" }.to_string())
                .collect()
        };
        let requests = t.path().join(REQUESTS_CSV);
        AppendCsv::open(&requests, &REQUESTS_COLUMNS)
            .unwrap()
            .append(&[request("done"), request("done"), request("in-flight")])
            .unwrap();
        repair(t.path()).unwrap();
        let kept = Table::read(&requests).unwrap();
        let k = kept.require("row_key", &requests).unwrap();
        let keys: Vec<&str> = kept.rows.iter().map(|r| r[k].as_str()).collect();
        assert_eq!(keys, ["done", "done"]);
    }
}
