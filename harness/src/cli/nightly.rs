//! `specula nightly`: sweep, report and gate against the newest baseline of
//! the same sweep, in one command for a cron job, into results/nightly/<date>/.

use super::sweep::SweepArgs;
use super::CliError;
use crate::doc::markdown::Markdown;
use crate::doc::Render;
use crate::export::meta::rfc3339;
use crate::gate::{decide, summary, Policy};
use crate::sweep::spec::SpecSource;
use crate::sweep::SweepError;
use clap::{Args, Parser};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Arguments of `specula nightly`.
#[derive(Args, Debug)]
#[command(
    after_help = "Writes OUT/<UTC date>/ (OUT/<date>-2/ and so on when it exists):
  run/         the sweep (runs.csv, positions.csv, kernels.csv, histograms/, meta.json)
  report/      report.html, report.md, plots/
  gate.md      the gate's summary against the baseline
The baseline is the newest run folder under --baselines (by its meta.json start time) whose
sweep has the spec's `name`. Exit codes as `specula gate`: 0 pass, 1 regression, 2 unusable
input (no baseline, a bad spec).

Example (crontab, 02:00 every night):
  0 2 * * * cd /path/to/specula && ./target/release/specula nightly >> results/nightly/cron.log 2>&1"
)]
pub struct NightlyArgs {
    /// The sweep spec.
    #[arg(long, value_name = "FILE", default_value = "bench/sweeps/gate.toml")]
    spec: PathBuf,
    /// Folder of baseline run folders.
    #[arg(long, value_name = "DIR", default_value = "results/baselines")]
    baselines: PathBuf,
    /// Folder of nightly results.
    #[arg(long, value_name = "DIR", default_value = "results/nightly")]
    out: PathBuf,
    /// Gate policy (TOML; see `specula gate --help`).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

/// The newest run folder in `dir` (or `dir` itself) whose sweep is named `name`.
pub fn newest_baseline(dir: &Path, name: &str) -> Result<PathBuf, CliError> {
    let mut candidates = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        candidates.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
    }
    let mut best: Option<(String, PathBuf)> = None;
    for c in candidates {
        let Ok(text) = std::fs::read_to_string(c.join("meta.json")) else {
            continue;
        };
        let Ok(meta) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let spec_name = meta.pointer("/spec/name").and_then(|v| v.as_str());
        let started = meta
            .get("started_at")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        if spec_name == Some(name)
            && c.join("runs.csv").is_file()
            && best.as_ref().is_none_or(|b| started > b.0.as_str())
        {
            best = Some((started.to_string(), c));
        }
    }
    best.map(|b| b.1).ok_or_else(|| {
        CliError::Input(format!(
            "{}: no baseline of sweep `{name}` (a run folder whose meta.json names that sweep); make one with `specula sweep SPEC --out {}/NAME`",
            dir.display(),
            dir.display()
        ))
    })
}

/// A new folder `out/<date>` (or `<date>-N`).
fn dated(out: &Path) -> Result<PathBuf, CliError> {
    let date = rfc3339(SystemTime::now())[..10].to_string();
    std::fs::create_dir_all(out).map_err(|e| SweepError::io(out, e))?;
    for n in 1.. {
        let name = if n == 1 {
            date.clone()
        } else {
            format!("{date}-{n}")
        };
        let dir = out.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(SweepError::io(&dir, e).into()),
        }
    }
    unreachable!("some suffix is free")
}

#[derive(Parser)]
struct SweepCommand {
    #[command(flatten)]
    args: SweepArgs,
}

/// Runs `specula nightly`; `Ok(true)` when the gate found a regression.
pub fn run(a: NightlyArgs) -> Result<bool, CliError> {
    let policy = match &a.policy {
        Some(p) => Policy::read(p)?,
        None => Policy::default(),
    };
    let src = SpecSource::read(&a.spec).map_err(SweepError::from)?;
    let name = src.parse().map_err(SweepError::from)?.name;
    let baseline = newest_baseline(&a.baselines, &name)?;
    let dir = dated(&a.out)?;
    let run_dir = dir.join("run");
    let sweep = SweepCommand::try_parse_from([
        "sweep".as_ref(),
        a.spec.as_os_str(),
        "--quiet".as_ref(),
        "--out".as_ref(),
        run_dir.as_os_str(),
    ])
    .map_err(|e| CliError::Input(e.to_string()))?;
    super::sweep::run(sweep.args)?;
    for f in crate::report::write(&run_dir, &dir.join("report"))? {
        println!("wrote {}", f.display());
    }
    let (b, c) = super::gate::judge_inputs(&baseline, &run_dir, &policy)?;
    let decision = decide(&b, &c, &policy);
    let md = Markdown.render(&summary::document(&b, &c, &policy, &decision));
    let gate_md = dir.join("gate.md");
    std::fs::write(&gate_md, &md).map_err(|e| SweepError::io(&gate_md, e))?;
    print!("{md}");
    println!("wrote {}", gate_md.display());
    Ok(decision.regressed())
}
