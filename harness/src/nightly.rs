//! The nightly job in one call: sweep, report, and gate against the newest
//! baseline of the same sweep, into `OUT/<UTC date>/` (`run/`, `report/`,
//! `gate.md`), for a cron job.

use crate::gate::{judge, GateError, GateVerdict, OnInconclusive, Policy};
use crate::report::ReportError;
use crate::run_folder::meta::rfc3339;
use crate::run_folder::schema::{META_JSON, RUNS_CSV};
use crate::run_folder::RunFolderError;
use crate::sweep::overrides::Overrides;
use crate::sweep::plan::{Start, SweepPlan, SweepReport};
use crate::sweep::spec::SpecSource;
use crate::sweep::SweepError;
use crate::Fault;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a nightly run needs.
#[derive(Debug, Clone)]
pub struct Nightly {
    /// The sweep spec.
    pub spec: PathBuf,
    /// The folder of baseline run folders.
    pub baselines: PathBuf,
    /// The folder of nightly results.
    pub out: PathBuf,
    /// How the gate judges.
    pub policy: Policy,
}

/// What a nightly run wrote and found.
#[derive(Debug)]
pub struct NightlyOutcome {
    /// `OUT/<date>`.
    pub dir: PathBuf,
    /// The baseline the gate judged against.
    pub baseline: PathBuf,
    /// What the sweep wrote (into `dir/run`).
    pub sweep: SweepReport,
    /// The report's pages.
    pub report: Vec<PathBuf>,
    /// The gate's summary, also in `gate.md`.
    pub markdown: String,
    /// `gate.md`.
    pub gate_md: PathBuf,
    /// The gate's verdict.
    pub verdict: GateVerdict,
    /// What the policy does with an inconclusive verdict.
    pub on_inconclusive: OnInconclusive,
}

/// Why the nightly job stopped.
#[derive(Debug, thiserror::Error)]
pub enum NightlyError {
    /// No baseline of the sweep to judge against.
    #[error("{}: no baseline of sweep `{name}` (a run folder whose meta.json names that sweep); make one with `specula sweep SPEC --out {}/NAME`", dir.display(), dir.display())]
    NoBaseline {
        /// The folder of baselines.
        dir: PathBuf,
        /// The sweep's name.
        name: String,
    },
    /// The sweep stopped.
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// The report could not be made.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The gate could not judge.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The dated folder or gate.md could not be written.
    #[error(transparent)]
    RunFolder(#[from] RunFolderError),
}

impl NightlyError {
    /// Whose fault it is.
    pub fn fault(&self) -> Fault {
        match self {
            NightlyError::NoBaseline { .. } => Fault::Input,
            NightlyError::Sweep(e) => e.fault(),
            NightlyError::Report(e) => e.fault(),
            NightlyError::Gate(e) => e.fault(),
            NightlyError::RunFolder(e) => e.fault(),
        }
    }
}

/// The newest run folder in `dir` (or `dir` itself), by its meta.json start
/// time, whose sweep is named `name`.
pub fn newest_baseline(dir: &Path, name: &str) -> Result<PathBuf, NightlyError> {
    let mut candidates = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        candidates.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
    }
    let mut best: Option<(String, PathBuf)> = None;
    for c in candidates {
        let Ok(text) = std::fs::read_to_string(c.join(META_JSON)) else {
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
            && c.join(RUNS_CSV).is_file()
            && best.as_ref().is_none_or(|b| started > b.0.as_str())
        {
            best = Some((started.to_string(), c));
        }
    }
    best.map(|b| b.1).ok_or_else(|| NightlyError::NoBaseline {
        dir: dir.to_path_buf(),
        name: name.to_string(),
    })
}

/// A new folder `out/<date>` (or `<date>-N` when that exists).
fn dated(out: &Path) -> Result<PathBuf, RunFolderError> {
    let date = rfc3339(SystemTime::now())[..10].to_string();
    std::fs::create_dir_all(out).map_err(|e| RunFolderError::write(out, e))?;
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
            Err(e) => return Err(RunFolderError::write(&dir, e)),
        }
    }
    unreachable!("some suffix is free")
}

/// Runs the nightly job: the sweep (quiet), its report, the gate.
pub fn run(n: &Nightly) -> Result<NightlyOutcome, NightlyError> {
    let name = SpecSource::read(&n.spec)
        .and_then(|src| src.parse())
        .map_err(SweepError::from)?
        .name;
    let baseline = newest_baseline(&n.baselines, &name)?;
    let plan = SweepPlan::from_spec(&n.spec, &Overrides::default())?;
    let dir = dated(&n.out)?;
    let run_dir = dir.join("run");
    let sweep = plan
        .start(Start {
            out: Some(run_dir.clone()),
            ..Start::default()
        })?
        .run(true)?;
    let report = crate::report::write(&run_dir, &dir.join("report"))?;
    let judgement = judge(&baseline, &run_dir, &n.policy)?;
    let gate_md = dir.join("gate.md");
    std::fs::write(&gate_md, &judgement.markdown)
        .map_err(|e| RunFolderError::write(&gate_md, e))?;
    Ok(NightlyOutcome {
        dir,
        baseline,
        sweep,
        report,
        verdict: judgement.verdict(),
        on_inconclusive: n.policy.on_inconclusive,
        markdown: judgement.markdown,
        gate_md,
    })
}
