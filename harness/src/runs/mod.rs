//! A run folder read back for reports, comparisons and gates: every
//! runs.csv row with its cells by column name, per-position acceptance from
//! positions.csv, and the folder's meta.json. Every problem is one message
//! naming the file and the column (exit code 2).

mod identity;

pub use identity::{group_key, group_label, row_identity, IDENTITY};

use crate::cli::CliError;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One runs.csv row: cells by column name.
#[derive(Debug, Clone)]
pub struct Record {
    cells: BTreeMap<String, String>,
}

impl Record {
    /// The cell of `col` (empty when the column is absent).
    pub fn text(&self, col: &str) -> &str {
        self.cells.get(col).map_or("", String::as_str)
    }

    /// The cell of `col` as a number (`None` when empty or not a number).
    pub fn num(&self, col: &str) -> Option<f64> {
        self.text(col).parse().ok()
    }

    /// Whether this is a speculative row (steps > 0).
    pub fn speculative(&self) -> bool {
        self.num("steps").is_some_and(|s| s > 0.0)
    }

    /// Whether runs.csv flags the row as a likely configuration error.
    pub fn likely_config_error(&self) -> bool {
        self.text("flag") == "likely_config_error"
    }
}

/// A run folder's rows and per-position acceptance.
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
    /// meta.json, if present and readable.
    pub meta: Option<serde_json::Value>,
}

fn bad(path: &Path, msg: impl std::fmt::Display) -> CliError {
    CliError::Input(format!("{}: {msg}", path.display()))
}

/// The runs.csv a path names: the file itself, or `runs.csv` in a run
/// folder, or the newest run folder (by name) of a folder of run folders.
pub fn locate(path: &Path) -> Result<PathBuf, CliError> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if !path.is_dir() {
        return Err(bad(path, "no such file or folder"));
    }
    let direct = path.join("runs.csv");
    if direct.is_file() {
        return Ok(direct);
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| bad(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path().join("runs.csv")))
        .filter(|p| p.is_file())
        .collect();
    runs.sort();
    runs.pop().ok_or_else(|| {
        bad(
            path,
            "missing runs.csv (not a run folder, and no run folder inside)",
        )
    })
}

impl Run {
    /// Reads the run `path` names (see [`locate`]), refusing a run without rows.
    pub fn read(path: &Path) -> Result<Run, CliError> {
        let runs_path = locate(path)?;
        let dir = runs_path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let mut r = csv::Reader::from_path(&runs_path).map_err(|e| bad(&runs_path, e))?;
        let header: Vec<String> = r
            .headers()
            .map_err(|e| bad(&runs_path, e))?
            .iter()
            .map(str::to_owned)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| bad(&runs_path, e))?;
            let cells = header
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_owned))
                .collect();
            rows.push(Record { cells });
        }
        if rows.is_empty() {
            return Err(bad(&runs_path, "no rows (an empty run)"));
        }
        let pos_path = dir.join("positions.csv");
        let has_positions = pos_path.is_file();
        let positions = if has_positions {
            read_positions(&pos_path)?
        } else {
            HashMap::new()
        };
        let meta = std::fs::read_to_string(dir.join("meta.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        Ok(Run {
            dir,
            runs_path,
            header,
            rows,
            positions,
            has_positions,
            meta,
        })
    }

    /// Refuses a run that lacks one of `columns`, or has a row whose column
    /// in `numeric` holds something other than a number (empty cells pass).
    pub fn require(&self, columns: &[&str], numeric: &[&str]) -> Result<(), CliError> {
        for c in columns {
            if !self.header.iter().any(|h| h == c) {
                return Err(bad(&self.runs_path, format!("missing column `{c}`")));
            }
        }
        for (i, row) in self.rows.iter().enumerate() {
            for c in numeric {
                let v = row.text(c);
                if !v.is_empty() && v.parse::<f64>().is_err() {
                    return Err(bad(
                        &self.runs_path,
                        format!("row {}: column `{c}`: {v:?} is not a number", i + 2),
                    ));
                }
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
}

fn read_positions(path: &Path) -> Result<HashMap<String, Vec<f64>>, CliError> {
    let mut r = csv::Reader::from_path(path).map_err(|e| bad(path, e))?;
    let header: Vec<String> = r
        .headers()
        .map_err(|e| bad(path, e))?
        .iter()
        .map(str::to_owned)
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| bad(path, format!("missing column `{name}`")))
    };
    let (key, pos, rate) = (col("row_key")?, col("position")?, col("acceptance_rate")?);
    let mut out: HashMap<String, Vec<f64>> = HashMap::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| bad(path, e))?;
        let number = |c: usize, name: &str| {
            rec[c].parse::<f64>().map_err(|_| {
                bad(
                    path,
                    format!(
                        "row {}: column `{name}`: {:?} is not a number",
                        i + 2,
                        &rec[c]
                    ),
                )
            })
        };
        let k = number(pos, "position")? as usize;
        let a = number(rate, "acceptance_rate")?;
        if k == 0 {
            return Err(bad(
                path,
                format!("row {}: position 0 (they start at 1)", i + 2),
            ));
        }
        let v = out.entry(rec[key].to_string()).or_default();
        if v.len() < k {
            v.resize(k, f64::NAN);
        }
        v[k - 1] = a;
    }
    Ok(out)
}
