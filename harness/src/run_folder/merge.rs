//! Merging run folders (the shards of one sweep, or runs with distinct rows)
//! into one. CSV rows are concatenated after bringing every input to this
//! version's columns (an earlier version's file gains the later columns,
//! empty: [`super::upgrade`]) and checking that no row key appears twice; histogram logs
//! are copied after checking that they decode (each row's log is whole in
//! one shard, and HDR histograms add exactly). The merged folder gets its
//! own meta.json and summary.json.

use super::csv_file::{AppendCsv, Table};
use super::histograms::read_log;
use super::meta::{rfc3339, Meta};
use super::requests_csv::{REQUESTS_COLUMNS, REQUESTS_CSV};
use super::schema::{
    HISTOGRAMS, KERNELS_COLUMNS, KERNELS_CSV, META_JSON, POSITIONS_COLUMNS, POSITIONS_CSV,
    RUNS_COLUMNS, RUNS_CSV, SPEC_TOML,
};
use super::summary::Summary;
use super::upgrade::to_current;
use super::{RunDir, RunFolderError};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a merge wrote.
#[derive(Debug)]
pub struct Merged {
    /// The merged folder.
    pub dir: PathBuf,
    /// runs.csv rows.
    pub rows: usize,
    /// Histogram logs copied.
    pub logs: usize,
    /// Things the user should know (different specs, missing shards).
    pub warnings: Vec<String>,
}

/// `dir/name` of every input, brought to this version's `columns` (an
/// earlier version's file padded with empty cells, any other header
/// refused); a missing file counts as empty.
fn gather(
    dirs: &[PathBuf],
    name: &str,
    columns: &[&str],
) -> Result<Vec<(PathBuf, Table)>, RunFolderError> {
    let mut out = Vec::new();
    for d in dirs {
        let path = d.join(name);
        let table = if path.exists() {
            Table::read(&path)?
        } else {
            Table::empty(columns)
        };
        let table = to_current(table, columns, &path)?;
        out.push((path, table));
    }
    Ok(out)
}

fn copy_rows(
    tables: &[(PathBuf, Table)],
    out: &Path,
    columns: &[&str],
) -> Result<usize, RunFolderError> {
    let mut w = AppendCsv::open(out, columns)?;
    let mut n = 0;
    for (_, t) in tables {
        w.append(&t.rows)?;
        n += t.rows.len();
    }
    Ok(n)
}

/// Refuses a row key that two inputs hold.
fn refuse_duplicates(runs: &[(PathBuf, Table)]) -> Result<(), RunFolderError> {
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for (path, t) in runs {
        let key = t.require("row_key", path)?;
        for r in &t.rows {
            if let Some(first) = seen.insert(&r[key], path) {
                return Err(RunFolderError::unusable(
                    path,
                    format!(
                        "row `{}` is also in {}: refusing to merge a row twice (merge each shard once)",
                        r[key],
                        first.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The decodable histogram logs of every input.
fn logs_of(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, RunFolderError> {
    let mut logs = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(d.join(HISTOGRAMS)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "hlog") {
                read_log(&p)?;
                logs.push(p);
            }
        }
    }
    Ok(logs)
}

/// Warnings about the inputs: specs that differ, shards not among them.
fn warnings(metas: &[Meta]) -> Vec<String> {
    let mut out = Vec::new();
    let spec_differs = metas.iter().any(|m| m.spec != metas[0].spec);
    if spec_differs {
        out.push("the inputs ran different specs; speedups stay valid (each is against its own group's baseline)".into());
    }
    let shards: BTreeSet<&str> = metas.iter().map(|m| m.shard.as_str()).collect();
    let counts: BTreeSet<&str> = shards.iter().filter_map(|s| s.split('/').nth(1)).collect();
    if let [n] = counts.iter().copied().collect::<Vec<_>>()[..] {
        let n: usize = n.parse().unwrap_or(0);
        let missing: Vec<String> = (0..n)
            .map(|i| format!("{i}/{n}"))
            .filter(|s| !shards.contains(s.as_str()))
            .collect();
        if !missing.is_empty() && !spec_differs {
            out.push(format!(
                "shards {} are not among the inputs",
                missing.join(", ")
            ));
        }
    }
    out
}

/// The merged meta.json: the first input's, with the ids, times, status and inputs of all.
fn merged_meta(metas: &[Meta], dirs: &[PathBuf], rows: usize) -> Meta {
    let ids: BTreeSet<&str> = metas.iter().map(|m| m.run_id.as_str()).collect();
    let mut merged = metas[0].clone();
    merged.run_id = ids.iter().copied().collect::<Vec<_>>().join("+");
    merged.shard = "merged".into();
    // Every input was brought to this version's columns.
    merged.columns = super::schema::columns();
    merged.status = if metas.iter().all(|m| m.status == "finished") {
        "finished"
    } else {
        "partial"
    }
    .into();
    merged.started_at = metas
        .iter()
        .map(|m| m.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.finished_at = Some(rfc3339(SystemTime::now()));
    merged.rows_written = rows;
    merged.shard_rows = rows;
    merged.merged_from = metas
        .iter()
        .zip(dirs)
        .map(|(m, d)| {
            let mut v = serde_json::to_value(m).expect("meta serialises");
            v["folder"] = serde_json::Value::String(d.display().to_string());
            v
        })
        .collect();
    merged
}

/// Merges the run folders `dirs` into the new folder `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, RunFolderError> {
    let mut metas = Vec::new();
    for d in dirs {
        if !d.join(META_JSON).is_file() {
            return Err(RunFolderError::unusable(
                d,
                "not a sweep run folder (no meta.json)",
            ));
        }
        metas.push(Meta::read(&d.join(META_JSON))?);
    }
    let runs = gather(dirs, RUNS_CSV, &RUNS_COLUMNS)?;
    refuse_duplicates(&runs)?;
    let positions = gather(dirs, POSITIONS_CSV, &POSITIONS_COLUMNS)?;
    let kernels = gather(dirs, KERNELS_CSV, &KERNELS_COLUMNS)?;
    let requests = gather(dirs, REQUESTS_CSV, &REQUESTS_COLUMNS)?;
    let logs = logs_of(dirs)?;
    let dir = RunDir::create(out)?;
    let rows = copy_rows(&runs, &dir.file(RUNS_CSV), &RUNS_COLUMNS)?;
    copy_rows(&positions, &dir.file(POSITIONS_CSV), &POSITIONS_COLUMNS)?;
    copy_rows(&kernels, &dir.file(KERNELS_CSV), &KERNELS_COLUMNS)?;
    copy_rows(&requests, &dir.file(REQUESTS_CSV), &REQUESTS_COLUMNS)?;
    let hist = dir.file(HISTOGRAMS);
    std::fs::create_dir_all(&hist).map_err(|e| RunFolderError::write(&hist, e))?;
    for p in &logs {
        let to = hist.join(p.file_name().expect("a log file has a name"));
        if to.exists() {
            return Err(RunFolderError::unusable(
                &to,
                "a histogram log of that name came from another input",
            ));
        }
        std::fs::copy(p, &to).map_err(|e| RunFolderError::write(&to, e))?;
    }
    if let Ok(spec) = std::fs::read(dirs[0].join(SPEC_TOML)) {
        let to = dir.file(SPEC_TOML);
        std::fs::write(&to, spec).map_err(|e| RunFolderError::write(&to, e))?;
    }
    merged_meta(&metas, dirs, rows).write(&dir.file(META_JSON))?;
    Summary::of(&Table::read(&dir.file(RUNS_CSV))?)
        .with_serving(dir.path())
        .write(dir.path())?;
    Ok(Merged {
        dir: dir.path().to_path_buf(),
        rows,
        logs: logs.len(),
        warnings: warnings(&metas),
    })
}
