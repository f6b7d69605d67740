//! A sweep as a value: a [`SweepPlan`] built from a spec file (and the
//! command line's overrides) or from an interrupted run folder, started into
//! a run folder, and executed by [`Sweep::run`]. `specula sweep`, `specula
//! nightly` and the tests all go through here.

use super::grid::Grid;
use super::overrides::Overrides;
use super::progress::{stderr_line, Progress};
use super::runner::{RunInfo, Runner};
use super::shard::Shard;
use super::spec::{SpecSource, SweepSpec};
use super::{interrupt, summary, SweepError};
use crate::remote::rows::RemoteRunner;
use crate::remote::EngineKind;
use crate::run_folder::environment;
use crate::run_folder::histograms::UNIT;
use crate::run_folder::meta::{self, compact_utc, rfc3339, Machine, Meta};
use crate::run_folder::row_key::sanitize;
use crate::run_folder::schema::{self, FAILURES_CSV, META_JSON, RUNS_CSV, SPEC_TOML};
use crate::run_folder::summary::Summary;
use crate::run_folder::{
    repair, Finished, RunDir, RunFolderError, SkippedConfig, Table, TestHooks,
};
use specula_kernels::cpu::{current_cpu_threads, with_cpu_threads};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a sweep runs: the resolved spec and its expanded grid.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// The spec after overrides.
    pub spec: SweepSpec,
    /// Its grid.
    pub grid: Grid,
    /// The folder the spec's relative paths were resolved against.
    pub base: PathBuf,
}

/// Where and how a fresh sweep writes.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// The run folder to create (must not exist); default `results/runs/<run id>`.
    pub out: Option<PathBuf>,
    /// The run id of every row; default `<spec name>-<UTC time>`.
    pub run_id: Option<String>,
    /// The slice of the grid to run; default the whole grid.
    pub shard: Option<Shard>,
    /// Regressions planted on purpose (tests of the gate); none by default.
    pub hooks: TestHooks,
}

/// A sweep with its run folder, ready to run (fresh, or resumed with the
/// rows it already holds).
#[derive(Debug)]
pub struct Sweep {
    plan: SweepPlan,
    meta: Meta,
    dir: RunDir,
    done: Finished,
}

/// What a sweep wrote.
#[derive(Debug, Clone)]
pub struct SweepReport {
    /// The run folder.
    pub dir: PathBuf,
    /// Rows in runs.csv now.
    pub rows: usize,
    /// Rows this process wrote.
    pub written: usize,
    /// The summary table of runs.csv (every row, also those of an earlier
    /// process), as summary.json holds it.
    pub summary: String,
}

impl SweepPlan {
    /// Reads the spec at `path`, applies `overrides`, and expands the grid.
    /// Relative paths in the spec (and in `overrides`) are read from the
    /// spec file's folder.
    pub fn from_spec(path: &Path, overrides: &Overrides) -> Result<SweepPlan, SweepError> {
        let src = SpecSource::read(path)?;
        let mut spec = src.parse()?;
        spec.apply(overrides, &src)?;
        let base = std::fs::canonicalize(path)
            .map_err(|e| RunFolderError::read(path, e))?
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
        let grid = Grid::expand(&spec, &base)?;
        Ok(SweepPlan { spec, grid, base })
    }

    /// The draft configs that will not run, with reasons.
    pub fn skipped(&self) -> &[SkippedConfig] {
        &self.grid.skipped
    }

    /// Refuses a plan in which every draft config the spec asks for was
    /// refused ([`Grid::every_draft_config_refused`]), listing why each
    /// config was skipped; `kept` is the run folder holding the baselines
    /// that ran (`None`: nothing ran).
    pub fn check_drafts(&self, kept: Option<&Path>) -> Result<(), SweepError> {
        if !self.grid.every_draft_config_refused() {
            return Ok(());
        }
        let why: Vec<String> = self.grid.skipped.iter().map(|s| s.to_string()).collect();
        let baselines = match kept {
            Some(dir) => format!("only baselines ran (kept in {})", dir.display()),
            None => "only baselines would run".into(),
        };
        Err(SweepError::NoDraftConfig(format!(
            "no draft config of the spec runs: {}; {baselines}",
            why.join("; ")
        )))
    }

    /// Every row key in run order, and whether `shard` runs it.
    pub fn listing(&self, shard: Shard) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        for (gi, g) in self.grid.groups.iter().enumerate() {
            for &p in &g.points {
                out.push((shard.owns(gi), self.grid.points[p].key.as_str()));
            }
        }
        out
    }

    /// Creates the run folder and its meta.json: the sweep is ready to run.
    pub fn start(self, start: Start) -> Result<Sweep, SweepError> {
        let now = SystemTime::now();
        let shard = start.shard.unwrap_or(Shard::ALL);
        let run_id = start
            .run_id
            .unwrap_or_else(|| format!("{}-{}", sanitize(&self.spec.name), compact_utc(now)));
        let out = start
            .out
            .unwrap_or_else(|| Path::new("results/runs").join(&run_id));
        let dir = RunDir::create(&out)?;
        let spec_text = toml::to_string(&self.spec).expect("a spec serialises to TOML");
        let spec_file = dir.file(SPEC_TOML);
        std::fs::write(
            &spec_file,
            format!(
                "# resolved spec of run {run_id} (after command-line overrides)\n{spec_text}\n"
            ),
        )
        .map_err(|e| RunFolderError::write(&spec_file, e))?;
        let shard_rows = self
            .grid
            .groups
            .iter()
            .enumerate()
            .filter(|(gi, _)| shard.owns(*gi))
            .map(|(_, g)| g.points.len())
            .sum();
        let meta = Meta {
            tool: "specula".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            crate_versions: meta::crate_versions(),
            run_id,
            git_rev: meta::git_rev(),
            started_at: rfc3339(now),
            finished_at: None,
            status: "running".into(),
            machine: Machine::describe(),
            cpu_threads: None,
            build_profile: Some(environment::build_profile().into()),
            load_average_start: environment::load_average(),
            load_average_end: None,
            engine_switches: Some(environment::engine_switches()),
            backend: match self.spec.backend {
                EngineKind::Engine => self.spec.device.name().into(),
                b => b.name().into(),
            },
            base_dir: self.base.display().to_string(),
            shard: shard.to_string(),
            histogram_unit: UNIT.into(),
            grid_rows: self.grid.points.len(),
            shard_rows,
            rows_written: 0,
            skipped: self.grid.skipped.clone(),
            spec: serde_json::to_value(&self.spec).expect("a spec serialises to JSON"),
            columns: schema::columns(),
            merged_from: Vec::new(),
            test_hooks: Some(start.hooks).filter(TestHooks::any),
            engine_version: None,
            model_loads: Vec::new(),
            past_trained_context: self.grid.past_trained_context(),
        };
        Ok(Sweep {
            plan: self,
            meta,
            dir,
            done: Finished::default(),
        })
    }
}

impl Sweep {
    /// The interrupted (or failed) run in `dir`, with the spec saved there;
    /// what a kill left half-written is repaired, finished rows are kept.
    pub fn resume(dir: &Path) -> Result<Sweep, SweepError> {
        let dir = RunDir::open(dir)?;
        let mut meta = Meta::read(&dir.file(META_JSON))?;
        let src = SpecSource::read(&dir.file(SPEC_TOML))?;
        let spec = src.parse()?;
        let base = PathBuf::from(&meta.base_dir);
        let grid = Grid::expand(&spec, &base)?;
        let done = repair(dir.path())?;
        // repair brought an earlier version's files to this version's columns.
        meta.columns = schema::columns();
        meta.past_trained_context = grid.past_trained_context();
        Ok(Sweep {
            plan: SweepPlan { spec, grid, base },
            meta,
            dir,
            done,
        })
    }

    /// The plan being run.
    pub fn plan(&self) -> &SweepPlan {
        &self.plan
    }

    /// The run folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs every row of the shard not yet in runs.csv, with a progress bar
    /// on stderr unless `quiet`. Every finished row is kept whatever happens;
    /// meta.json says how the run ended.
    pub fn run(mut self, quiet: bool) -> Result<SweepReport, SweepError> {
        let threads = self.plan.spec.threads;
        with_cpu_threads(threads, move || {
            self.meta.cpu_threads = Some(current_cpu_threads());
            self.run_here(quiet)
        })
        .map_err(SweepError::Input)?
    }

    /// [`Sweep::run`] on the CPU threads it was given.
    fn run_here(self, quiet: bool) -> Result<SweepReport, SweepError> {
        let Sweep {
            plan,
            mut meta,
            dir,
            done,
        } = self;
        let (spec, grid) = (&plan.spec, &plan.grid);
        let shard: Shard = meta
            .shard
            .parse()
            .map_err(|e: String| RunFolderError::malformed(&dir.file(META_JSON), e))?;
        let info = RunInfo {
            run_id: meta.run_id.clone(),
            git_rev: meta::git_rev(),
            machine: meta.machine.hostname.clone(),
            backend: meta.backend.clone(),
            device: meta.machine.cpu.clone(),
            shard,
            seed: spec.seed,
            max_new_tokens: spec.max_new_tokens,
            ignore_eos: spec.ignore_eos,
            allow_past_context: spec.allow_past_context,
            warmup: spec.warmup,
            hooks: meta.test_hooks.unwrap_or_default(),
            interleave: spec.interleave,
        };
        let switches = environment::engine_switches();
        if let Some(line) = environment::switches_line(&switches) {
            stderr_line(&line);
        }
        if info.hooks.any() {
            stderr_line(&format!(
                "warning: test hooks plant a regression in this run: {}",
                serde_json::to_string(&info.hooks).expect("serialisable")
            ));
        }
        let already = done.throughput.len();
        let writers = dir.row_writers()?;
        meta.status = "running".into();
        meta.write(&dir.file(META_JSON))?;
        interrupt::install();
        let progress = Progress::new(0, quiet);
        if already > 0 {
            progress.note(&format!(
                "resuming {}: {already} rows already finished",
                dir.path().display()
            ));
            let changed = meta
                .engine_switches
                .as_ref()
                .map(|then| environment::switch_changes(then, &switches))
                .unwrap_or_default();
            for (then, now) in changed {
                progress.note(&format!(
                    "warning: the run started with {then}, this resume runs with {now}: the rows from here on ran with other engine switches"
                ));
            }
        }
        let (result, written) = match (&spec.server, spec.backend) {
            (Some(server), kind) if kind != EngineKind::Engine => {
                let mut runner = RemoteRunner::new(
                    grid,
                    &info,
                    kind,
                    server.get_ref().clone(),
                    &plan.base,
                    writers,
                    dir.path(),
                    &progress,
                    done,
                )?;
                runner.load = spec.load.clone();
                progress.set_total(runner.pending_rows());
                let mut result = runner.run();
                if result.is_ok() && runner.failed > 0 {
                    result = Err(SweepError::RowsFailed(format!(
                        "points failed: {} (see {}); every finished row is kept",
                        runner.failed,
                        dir.file(FAILURES_CSV).display()
                    )));
                }
                if !runner.engine_versions.is_empty() {
                    meta.engine_version = Some(runner.engine_versions.join("; "));
                }
                (result, runner.written)
            }
            _ => {
                let mut runner = Runner::new(grid, &info, writers, &progress, done);
                progress.set_total(runner.pending_batches());
                let result = runner.run();
                meta.model_loads.extend(runner.loads.iter().cloned());
                (result, runner.written)
            }
        };
        progress.finish();
        meta.rows_written = already + written;
        meta.finished_at = Some(rfc3339(SystemTime::now()));
        meta.load_average_end = environment::load_average();
        meta.status = match &result {
            Ok(()) => "finished",
            Err(SweepError::Interrupted(_)) => "interrupted",
            Err(SweepError::RowsFailed(_)) => "finished_with_failures",
            Err(_) => "failed",
        }
        .into();
        meta.write(&dir.file(META_JSON))?;
        // summary.json covers the finished rows however the sweep stopped.
        let summary = Table::read(&dir.file(RUNS_CSV))
            .map(|t| Summary::of(&t).with_serving(dir.path()))
            .and_then(|s| s.write(dir.path()).map(|_| s));
        if let Err(e) = result {
            if matches!(e, SweepError::Interrupted(_)) {
                stderr_line(&format!(
                    "{} rows kept in {}; continue with: specula sweep --resume {}",
                    meta.rows_written,
                    dir.path().display(),
                    dir.path().display()
                ));
            }
            return Err(e);
        }
        plan.check_drafts(Some(dir.path()))?;
        Ok(SweepReport {
            dir: dir.path().to_path_buf(),
            rows: meta.rows_written,
            written,
            summary: summary::render(&summary?),
        })
    }
}
