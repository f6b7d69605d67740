//! `specula merge DIR... --out DIR`: shards of one sweep (or runs with
//! distinct rows) into one run folder. CSV rows are concatenated after
//! checking that every input has the same columns and that no row key
//! appears twice; histogram logs are copied after checking that they decode
//! (each row's log is whole in one shard, and HDR histograms add exactly).

use super::CliError;
use crate::export::histograms::read_log;
use crate::export::meta::{rfc3339, Meta};
use crate::export::{kernels_csv, positions_csv, runs_csv, AppendCsv, Table};
use crate::sweep::run_dir::RunDir;
use crate::sweep::SweepError;
use clap::Args;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Args, Debug)]
#[command(after_help = "Example (the shards of a Slurm job array):
  specula merge results/runs/nightly/shard-* --out results/runs/nightly/all")]
pub struct MergeArgs {
    /// Run folders to merge (each with meta.json and runs.csv).
    #[arg(required = true, num_args = 1..)]
    dirs: Vec<PathBuf>,
    /// The merged run folder (must not exist).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Reads `dir/name` from every input, requiring one header; a missing file counts as empty.
fn gather(
    dirs: &[PathBuf],
    name: &str,
    header: &[&str],
) -> Result<Vec<(PathBuf, Table)>, CliError> {
    let mut out = Vec::new();
    for d in dirs {
        let path = d.join(name);
        let table = if path.exists() {
            Table::read(&path)?
        } else {
            Table {
                header: header.iter().map(|s| s.to_string()).collect(),
                rows: Vec::new(),
            }
        };
        if table.header != header {
            return Err(CliError::Input(format!(
                "{}: columns differ from this version's {name} (found {}; expected {}): merge only runs of one schema",
                path.display(),
                table.header.join(","),
                header.join(",")
            )));
        }
        out.push((path, table));
    }
    Ok(out)
}

fn copy_rows(tables: &[(PathBuf, Table)], out: &Path, header: &[&str]) -> Result<usize, CliError> {
    let mut w = AppendCsv::open(out, header)?;
    let mut n = 0;
    for (_, t) in tables {
        w.append(&t.rows)?;
        n += t.rows.len();
    }
    Ok(n)
}

/// Runs `specula merge`.
pub fn run(a: MergeArgs) -> Result<(), CliError> {
    let mut metas = Vec::new();
    for d in &a.dirs {
        if !d.join("meta.json").is_file() {
            return Err(CliError::Input(format!(
                "{}: not a sweep run folder (no meta.json)",
                d.display()
            )));
        }
        metas.push(Meta::read(&d.join("meta.json"))?);
    }
    let runs = gather(&a.dirs, "runs.csv", &runs_csv::HEADER)?;
    let key = runs_csv::HEADER
        .iter()
        .position(|h| *h == "row_key")
        .expect("runs.csv has row_key");
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for (path, t) in &runs {
        for r in &t.rows {
            if let Some(first) = seen.insert(r[key].clone(), path.clone()) {
                return Err(CliError::Input(format!(
                    "row `{}` is in both {} and {}: refusing to merge a row twice (merge each shard once)",
                    r[key],
                    first.display(),
                    path.display()
                )));
            }
        }
    }
    let positions = gather(&a.dirs, "positions.csv", &positions_csv::HEADER)?;
    let kernels = gather(&a.dirs, "kernels.csv", &kernels_csv::HEADER)?;
    let mut logs = Vec::new();
    for d in &a.dirs {
        let Ok(entries) = std::fs::read_dir(d.join("histograms")) else {
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
    let first = &metas[0];
    let spec_differs = metas.iter().any(|m| m.spec != first.spec);
    if spec_differs {
        eprintln!("warning: the inputs ran different specs; speedups stay valid (each is against its own group's baseline)");
    }
    let shards: BTreeSet<String> = metas.iter().map(|m| m.shard.clone()).collect();
    let counts: BTreeSet<&str> = shards.iter().filter_map(|s| s.split('/').nth(1)).collect();
    if let [n] = counts.iter().copied().collect::<Vec<_>>()[..] {
        let n: usize = n.parse().unwrap_or(0);
        let missing: Vec<String> = (0..n)
            .map(|i| format!("{i}/{n}"))
            .filter(|s| !shards.contains(s))
            .collect();
        if !missing.is_empty() && !spec_differs {
            eprintln!(
                "warning: shards {} are not among the inputs",
                missing.join(", ")
            );
        }
    }
    let dir = RunDir::create(&a.out)?;
    let rows = copy_rows(&runs, &dir.file("runs.csv"), &runs_csv::HEADER)?;
    copy_rows(
        &positions,
        &dir.file("positions.csv"),
        &positions_csv::HEADER,
    )?;
    copy_rows(&kernels, &dir.file("kernels.csv"), &kernels_csv::HEADER)?;
    let hist = dir.file("histograms");
    std::fs::create_dir_all(&hist).map_err(|e| SweepError::io(&hist, e))?;
    for p in &logs {
        let to = hist.join(p.file_name().expect("a log file has a name"));
        if to.exists() {
            return Err(CliError::Input(format!(
                "{}: a histogram log of that name came from another input",
                to.display()
            )));
        }
        std::fs::copy(p, &to).map_err(|e| SweepError::io(&to, e))?;
    }
    if let Ok(spec) = std::fs::read(a.dirs[0].join("spec.toml")) {
        let _ = std::fs::write(dir.file("spec.toml"), spec);
    }
    let ids: BTreeSet<&str> = metas.iter().map(|m| m.run_id.as_str()).collect();
    let mut merged = first.clone();
    merged.run_id = ids.iter().copied().collect::<Vec<_>>().join("+");
    merged.shard = "merged".into();
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
        .zip(&a.dirs)
        .map(|(m, d)| {
            let mut v = serde_json::to_value(m).expect("meta serialises");
            v["folder"] = serde_json::Value::String(d.display().to_string());
            v
        })
        .collect();
    merged.write(&dir.file("meta.json"))?;
    println!(
        "merged {rows} rows and {} histogram logs from {} folders into {}",
        logs.len(),
        a.dirs.len(),
        dir.path().display()
    );
    Ok(())
}
