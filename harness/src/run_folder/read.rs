//! The one reader of a run folder, for reports, analyses, comparisons,
//! gates, merges, resumed sweeps' summaries and the tests: every runs.csv
//! row with its cells by column name (numeric columns checked once, here),
//! per-position acceptance from positions.csv, per-span totals from
//! kernels.csv and the folder's meta.json. Every problem is one
//! [`RunFolderError`] naming the file, and the row and column where there is one.

use super::cells::{self, fraction, number, once, whole};
use super::csv_file::Table;
use super::schema::{KERNELS_CSV, LIKELY_CONFIG_ERROR, META_JSON, POSITIONS_CSV, RUNS_CSV};
use super::RunFolderError;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One runs.csv row: cells by column name.
#[derive(Debug, Clone)]
pub struct Record {
    columns: Arc<HashMap<String, usize>>,
    cells: Vec<String>,
}

impl Record {
    /// The cell of `col` (empty when the column is absent).
    pub fn text(&self, col: &str) -> &str {
        self.columns
            .get(col)
            .map_or("", |&i| self.cells[i].as_str())
    }

    /// The cell of `col` as a number (`None` when empty or absent; a numeric
    /// column holds nothing else once read).
    pub fn num(&self, col: &str) -> Option<f64> {
        self.text(col).parse().ok()
    }

    /// The cells in the file's column order.
    pub fn cells(&self) -> &[String] {
        &self.cells
    }

    /// The row key.
    pub fn key(&self) -> &str {
        self.text("row_key")
    }

    /// Draft depth (0 for a baseline, or when the column is absent).
    pub fn steps(&self) -> usize {
        self.num("steps").map_or(0, |s| s as usize)
    }

    /// Whether this is a speculative row (steps > 0).
    pub fn speculative(&self) -> bool {
        self.steps() > 0
    }

    /// Whether runs.csv flags the row as a likely configuration error.
    pub fn likely_config_error(&self) -> bool {
        self.text("flag") == LIKELY_CONFIG_ERROR
    }
}

/// A span's totals over a row: how many samples, and their sum in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanTotal {
    /// Samples (spans recorded).
    pub count: f64,
    /// Their summed duration, microseconds.
    pub total_us: f64,
}

/// A run folder's rows, per-position acceptance, span totals and meta.json.
#[derive(Debug, Clone)]
pub struct Run {
    /// The run folder.
    pub dir: PathBuf,
    /// Its runs.csv.
    pub runs_path: PathBuf,
    /// Column names of runs.csv, in order.
    pub header: Vec<String>,
    /// Its rows.
    pub rows: Vec<Record>,
    /// row key -> a_1..a_steps (empty when positions.csv is absent).
    pub positions: HashMap<String, Vec<f64>>,
    /// Whether positions.csv exists.
    pub has_positions: bool,
    /// row key -> span -> totals (empty when kernels.csv is absent or spans were off).
    pub spans: HashMap<String, BTreeMap<String, SpanTotal>>,
    /// meta.json, if present and readable.
    pub meta: Option<serde_json::Value>,
}

/// The runs.csv a path names: the file itself, or `runs.csv` in a run
/// folder, or the newest run folder (by name) of a folder of run folders.
pub fn locate(path: &Path) -> Result<PathBuf, RunFolderError> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if !path.is_dir() {
        return Err(RunFolderError::unusable(path, "no such file or folder"));
    }
    let direct = path.join(RUNS_CSV);
    if direct.is_file() {
        return Ok(direct);
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| RunFolderError::read(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path().join(RUNS_CSV)))
        .filter(|p| p.is_file())
        .collect();
    runs.sort();
    runs.pop().ok_or_else(|| {
        RunFolderError::unusable(
            path,
            "missing runs.csv (not a run folder, and no run folder inside)",
        )
    })
}

impl Run {
    /// Reads the run `path` names (see [`locate`]), refusing a run without
    /// rows, a cell no run can hold and a row written twice (`cells`).
    pub fn read(path: &Path) -> Result<Run, RunFolderError> {
        let runs_path = locate(path)?;
        let dir = runs_path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let table = Table::read(&runs_path)?;
        let columns: Arc<HashMap<String, usize>> = Arc::new(
            table
                .header
                .iter()
                .enumerate()
                .map(|(i, h)| (h.clone(), i))
                .collect(),
        );
        cells::check_runs(&runs_path, &columns, &table.rows)?;
        if table.rows.is_empty() {
            return Err(RunFolderError::malformed(
                &runs_path,
                "no rows (an empty run)",
            ));
        }
        let rows = table
            .rows
            .into_iter()
            .map(|cells| Record {
                columns: columns.clone(),
                cells,
            })
            .collect();
        let pos_path = dir.join(POSITIONS_CSV);
        let has_positions = pos_path.is_file();
        let positions = if has_positions {
            read_positions(&pos_path)?
        } else {
            HashMap::new()
        };
        let ker_path = dir.join(KERNELS_CSV);
        let spans = if ker_path.is_file() {
            read_spans(&ker_path)?
        } else {
            HashMap::new()
        };
        let meta = std::fs::read_to_string(dir.join(META_JSON))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        Ok(Run {
            dir,
            runs_path,
            header: table.header,
            rows,
            positions,
            has_positions,
            spans,
            meta,
        })
    }

    /// Refuses a run that lacks one of `columns`.
    pub fn require(&self, columns: &[&str]) -> Result<(), RunFolderError> {
        match columns
            .iter()
            .find(|c| !self.header.iter().any(|h| h == *c))
        {
            Some(c) => Err(RunFolderError::malformed(
                &self.runs_path,
                format!("missing column `{c}`"),
            )),
            None => Ok(()),
        }
    }

    /// Refuses a row whose column `col` (one a policy names, say) holds
    /// something other than a finite number of at least 0; empty cells pass.
    pub fn require_numbers(&self, col: &str) -> Result<(), RunFolderError> {
        for (i, row) in self.rows.iter().enumerate() {
            let v = row.text(col);
            if !v.is_empty() {
                number(&self.runs_path, i, col, v)?;
            }
        }
        Ok(())
    }

    /// A short description: run id, git revision, machine.
    pub fn describe(&self) -> String {
        let first = &self.rows[0];
        format!(
            "{} (run {}, rev {}, {})",
            self.dir.display(),
            first.text("run_id"),
            first.text("git_rev").chars().take(10).collect::<String>(),
            first.text("machine")
        )
    }

    /// The row with key `key`.
    pub fn row(&self, key: &str) -> Option<&Record> {
        self.rows.iter().find(|r| r.key() == key)
    }
}

/// positions.csv: row key -> a_1..a_k, every position from 1 present.
fn read_positions(path: &Path) -> Result<HashMap<String, Vec<f64>>, RunFolderError> {
    let t = Table::read(path)?;
    let (key, pos, rate) = (
        t.require("row_key", path)?,
        t.require("position", path)?,
        t.require("acceptance_rate", path)?,
    );
    let mut out: HashMap<String, Vec<f64>> = HashMap::new();
    let mut seen = HashMap::new();
    for (i, r) in t.rows.iter().enumerate() {
        let k = whole(path, i, "position", &r[pos])?;
        let a = fraction(path, i, "acceptance_rate", &r[rate])?;
        if k < 1.0 {
            return Err(RunFolderError::malformed(
                path,
                format!(
                    "line {}: position {k} (they are whole numbers from 1)",
                    cells::line(i)
                ),
            ));
        }
        once(path, &mut seen, i, &r[key], &format!("position {k}"))?;
        let v = out.entry(r[key].clone()).or_default();
        let k = k as usize;
        if v.len() < k {
            v.resize(k, f64::NAN);
        }
        v[k - 1] = a;
    }
    for (k, v) in &out {
        if let Some(gap) = v.iter().position(|a| a.is_nan()) {
            return Err(RunFolderError::malformed(
                path,
                format!(
                    "row `{k}` has positions up to {} but not {}",
                    v.len(),
                    gap + 1
                ),
            ));
        }
    }
    Ok(out)
}

/// kernels.csv: row key -> span -> totals (count x mean).
fn read_spans(path: &Path) -> Result<HashMap<String, BTreeMap<String, SpanTotal>>, RunFolderError> {
    let t = Table::read(path)?;
    let (key, span, count, mean) = (
        t.require("row_key", path)?,
        t.require("span", path)?,
        t.require("count", path)?,
        t.require("mean_us", path)?,
    );
    let mut out: HashMap<String, BTreeMap<String, SpanTotal>> = HashMap::new();
    let mut seen = HashMap::new();
    for (i, r) in t.rows.iter().enumerate() {
        once(path, &mut seen, i, &r[key], &format!("span `{}`", r[span]))?;
        let count = whole(path, i, "count", &r[count])?;
        let mean = number(path, i, "mean_us", &r[mean])?;
        out.entry(r[key].clone()).or_default().insert(
            r[span].clone(),
            SpanTotal {
                count,
                total_us: count * mean,
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
