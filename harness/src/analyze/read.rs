//! Reading what `specula analyze` needs from a run folder.

use crate::cli::CliError;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The fields of a runs.csv row the analysis uses.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Row key.
    pub row_key: String,
    /// Draft folder.
    pub draft: String,
    /// Draft depth (0 = baseline).
    pub steps: usize,
    /// Measured tau.
    pub tau: f64,
    /// Measured speedup.
    pub speedup: Option<f64>,
    /// The same-run baseline row's key.
    pub baseline_key: Option<String>,
}

/// A run folder's rows, per-position rates, span totals and training reports.
#[derive(Debug, Clone, Default)]
pub struct RunData {
    /// runs.csv rows.
    pub rows: Vec<RunRow>,
    /// row key -> a_1..a_steps.
    pub positions: HashMap<String, Vec<f64>>,
    /// row key -> span -> (count, total microseconds).
    pub spans: HashMap<String, BTreeMap<String, (f64, f64)>>,
    /// draft folder -> teacher-forced accuracy per unrolled step (from training_report.json).
    pub trained_accuracy: HashMap<String, Vec<f64>>,
}

fn records(path: &Path) -> Result<Vec<HashMap<String, String>>, CliError> {
    let bad = |e: String| CliError::Input(format!("{}: {e}", path.display()));
    let mut r = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    r.deserialize()
        .map(|rec| rec.map_err(|e| bad(e.to_string())))
        .collect()
}

fn field<'a>(
    rec: &'a HashMap<String, String>,
    name: &str,
    path: &Path,
) -> Result<&'a str, CliError> {
    rec.get(name)
        .map(String::as_str)
        .ok_or_else(|| CliError::Input(format!("{}: missing column `{name}`", path.display())))
}

fn number(rec: &HashMap<String, String>, name: &str, path: &Path) -> Result<f64, CliError> {
    let v = field(rec, name, path)?;
    v.parse().map_err(|_| {
        CliError::Input(format!(
            "{}: column `{name}`: {v:?} is not a number",
            path.display()
        ))
    })
}

/// The teacher-forced accuracy per unrolled step in `draft/training_report.json`
/// (`validation.<set>.acc`, averaged over sets weighted by `label_positions`).
fn trained_accuracy(draft: &Path) -> Option<Vec<f64>> {
    let text = std::fs::read_to_string(draft.join("training_report.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut sum: Vec<f64> = Vec::new();
    let mut weight = 0.0;
    for set in v.get("validation")?.as_object()?.values() {
        let acc: Vec<f64> = set
            .get("acc")?
            .as_array()?
            .iter()
            .filter_map(|x| x.as_f64())
            .collect();
        let w = set
            .get("label_positions")
            .and_then(|x| x.as_f64())
            .unwrap_or(1.0);
        if sum.is_empty() {
            sum = vec![0.0; acc.len()];
        }
        sum.iter_mut().zip(&acc).for_each(|(s, a)| *s += a * w);
        weight += w;
    }
    (weight > 0.0).then(|| sum.into_iter().map(|s| s / weight).collect())
}

/// Reads runs.csv, positions.csv and kernels.csv of `dir`.
pub fn read_run(dir: &Path) -> Result<RunData, CliError> {
    let runs_path = dir.join("runs.csv");
    if !runs_path.exists() {
        return Err(CliError::Input(format!(
            "{}: missing (is {} a run folder?)",
            runs_path.display(),
            dir.display()
        )));
    }
    let runs = records(&runs_path)?;
    let mut data = RunData::default();
    // Baseline of a row: same key with the config part replaced by `base`.
    for rec in &runs {
        let row_key = field(rec, "row_key", &runs_path)?.to_string();
        let steps = number(rec, "steps", &runs_path)? as usize;
        let parts: Vec<&str> = row_key.split('.').collect();
        let baseline_key = (steps > 0 && parts.len() >= 2).then(|| {
            let mut p = parts.clone();
            p[1] = "base";
            p.join(".")
        });
        let speedup = field(rec, "speedup", &runs_path)?.parse().ok();
        let draft = field(rec, "draft", &runs_path)?.to_string();
        if !draft.is_empty() && !data.trained_accuracy.contains_key(&draft) {
            if let Some(acc) = trained_accuracy(Path::new(&draft)) {
                data.trained_accuracy.insert(draft.clone(), acc);
            }
        }
        data.rows.push(RunRow {
            row_key,
            draft,
            steps,
            tau: number(rec, "tau", &runs_path)?,
            speedup,
            baseline_key,
        });
    }
    let pos_path = dir.join("positions.csv");
    if pos_path.exists() {
        for rec in records(&pos_path)? {
            let key = field(&rec, "row_key", &pos_path)?.to_string();
            let k = number(&rec, "position", &pos_path)? as usize;
            let rate = number(&rec, "acceptance_rate", &pos_path)?;
            let v = data.positions.entry(key).or_default();
            if v.len() < k {
                v.resize(k, 0.0);
            }
            v[k - 1] = rate;
        }
    }
    let ker_path = dir.join("kernels.csv");
    if ker_path.exists() {
        for rec in records(&ker_path)? {
            let key = field(&rec, "row_key", &ker_path)?.to_string();
            let span = field(&rec, "span", &ker_path)?.to_string();
            let count = number(&rec, "count", &ker_path)?;
            let mean = number(&rec, "mean_us", &ker_path)?;
            data.spans
                .entry(key)
                .or_default()
                .insert(span, (count, count * mean));
        }
    }
    Ok(data)
}
