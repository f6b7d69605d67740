//! `specula sweep`: run a grid from a TOML spec into a run folder.

use super::CliError;
use crate::backend::rows::ServedRunner;
use crate::backend::BackendKind;
use crate::export::histograms::{HistogramLogs, UNIT};
use crate::export::kernels_csv::{self, KernelsCsv};
use crate::export::meta::{self, compact_utc, rfc3339, Machine, Meta};
use crate::export::positions_csv::{self, PositionsCsv};
use crate::export::runs_csv::{self, RunsCsv};
use crate::export::{RowWriter, Table};
use crate::sweep::grid::{sanitize, Grid};
use crate::sweep::hooks::TestHooks;
use crate::sweep::progress::Progress;
use crate::sweep::run_dir::RunDir;
use crate::sweep::runner::{RunInfo, Runner};
use crate::sweep::shard::Shard;
use crate::sweep::spec::{Overrides, SpanMode, SpecSource, SweepSpec};
use crate::sweep::{interrupt, resume, summary, SweepError};
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  specula sweep bench/sweeps/default.toml
  specula sweep bench/sweeps/default.toml --batch-sizes 1,4 --max-new-tokens 32 --out results/runs/try
  specula sweep bench/sweeps/default.toml --shard 0/4 --run-id nightly --out results/runs/nightly/0
  specula sweep --resume results/runs/default-20260501T120000Z
  specula sweep bench/sweeps/default.toml --spans on,off --repeats 5   # span-recording overhead")]
pub struct SweepArgs {
    /// The sweep spec (TOML; see bench/sweeps/default.toml). Not given with --resume.
    #[arg(required_unless_present = "resume")]
    spec: Option<PathBuf>,
    /// Run folder to create (must not exist). Default: results/runs/<run-id>.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Continue an interrupted run in DIR with the spec saved there; finished rows are kept.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["spec", "out", "run_id", "shard"])]
    resume: Option<PathBuf>,
    /// Run only slice I of N of the grid (0-based), e.g. 2/4: whole baseline groups, round-robin.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// The run id written in every row. Default: <spec name>-<UTC time>. Give shards one id.
    #[arg(long)]
    run_id: Option<String>,
    /// No progress bar and no summary table (for CI).
    #[arg(long, short)]
    quiet: bool,
    /// List the grid (rows of this shard, skipped configs) and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Override `batch_sizes` (comma-separated).
    #[arg(long, value_delimiter = ',')]
    batch_sizes: Option<Vec<usize>>,
    /// Override `temperatures` (comma-separated).
    #[arg(long, value_delimiter = ',')]
    temperatures: Option<Vec<f64>>,
    /// Override `max_new_tokens`.
    #[arg(long)]
    max_new_tokens: Option<usize>,
    /// Override `repeats`.
    #[arg(long)]
    repeats: Option<usize>,
    /// Override `warmup`.
    #[arg(long)]
    warmup: Option<usize>,
    /// Override `seed`.
    #[arg(long)]
    seed: Option<u64>,
    /// Draw this many prompts from every prompt set (overrides each `sample`).
    #[arg(long)]
    sample: Option<usize>,
    /// Override `spans`: on, off, or on,off (measures the recording overhead).
    #[arg(long, value_delimiter = ',')]
    spans: Option<Vec<SpanMode>>,
    /// Same as --spans off: no span recording, no kernels.csv rows or histograms.
    #[arg(long, conflicts_with = "spans")]
    no_spans: bool,
    /// Override `ignore_eos` to true.
    #[arg(long)]
    ignore_eos: bool,
    /// Replace the spec's model pairs with this target...
    #[arg(long)]
    target: Option<PathBuf>,
    /// ...and this EAGLE-3 draft.
    #[arg(long)]
    draft: Option<PathBuf>,
    /// TEST HOOK (plants a regression): busy-wait this percentage of every verify
    /// span inside it, on speculative rows only. Recorded in meta.json.
    #[arg(long, hide = true, value_name = "PCT", conflicts_with = "resume")]
    inject_verify_delay_pct: Option<f64>,
    /// TEST HOOK (plants a regression): draft at most N steps whatever the row's
    /// config says. Recorded in meta.json.
    #[arg(long, hide = true, value_name = "N", conflicts_with = "resume")]
    inject_draft_steps: Option<usize>,
}

impl SweepArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            batch_sizes: self.batch_sizes.clone(),
            temperatures: self.temperatures.clone(),
            max_new_tokens: self.max_new_tokens,
            repeats: self.repeats,
            warmup: self.warmup,
            seed: self.seed,
            sample: self.sample,
            spans: if self.no_spans {
                Some(vec![SpanMode::Off])
            } else {
                self.spans.clone()
            },
            ignore_eos: self.ignore_eos,
            target: self.target.clone(),
            draft: self.draft.clone(),
        }
    }
}

/// Everything a run needs, fresh or resumed.
struct Plan {
    spec: SweepSpec,
    grid: Grid,
    meta: Meta,
    dir: RunDir,
    done: resume::Finished,
}

fn columns() -> BTreeMap<String, Vec<String>> {
    let v = |h: &[&str]| h.iter().map(|s| s.to_string()).collect();
    BTreeMap::from([
        ("runs.csv".to_string(), v(&runs_csv::HEADER)),
        ("positions.csv".to_string(), v(&positions_csv::HEADER)),
        ("kernels.csv".to_string(), v(&kernels_csv::HEADER)),
    ])
}

fn print_skipped(grid: &Grid) {
    for s in &grid.skipped {
        eprintln!("{s}");
    }
}

fn fresh(a: &SweepArgs, spec_path: &Path) -> Result<Option<Plan>, CliError> {
    let src = SpecSource::read(spec_path).map_err(SweepError::from)?;
    let mut spec = src.parse().map_err(SweepError::from)?;
    spec.apply(&a.overrides(), &src).map_err(SweepError::from)?;
    let base = std::env::current_dir().map_err(|e| SweepError::io(".", e))?;
    let grid = Grid::expand(&spec, &base)?;
    let shard = a.shard.unwrap_or(Shard::ALL);
    print_skipped(&grid);
    if a.dry_run {
        for (gi, g) in grid.groups.iter().enumerate() {
            let mark = if shard.owns(gi) { "run" } else { "skip" };
            for &p in &g.points {
                println!("{mark} {}", grid.points[p].key);
            }
        }
        return Ok(None);
    }
    let now = SystemTime::now();
    let run_id = a
        .run_id
        .clone()
        .unwrap_or_else(|| format!("{}-{}", sanitize(&spec.name), compact_utc(now)));
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results/runs").join(&run_id));
    let dir = RunDir::create(&out)?;
    let spec_text = toml::to_string(&spec).expect("a spec serialises to TOML");
    let spec_file = dir.file("spec.toml");
    std::fs::write(
        &spec_file,
        format!("# resolved spec of run {run_id} (after command-line overrides)\n{spec_text}\n"),
    )
    .map_err(|e| SweepError::io(&spec_file, e))?;
    let machine = Machine::describe();
    let shard_rows = grid
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
        machine,
        backend: match spec.backend {
            BackendKind::Engine => spec.device.name().into(),
            b => b.name().into(),
        },
        base_dir: base.display().to_string(),
        shard: shard.to_string(),
        histogram_unit: UNIT.into(),
        grid_rows: grid.points.len(),
        shard_rows,
        rows_written: 0,
        skipped: grid.skipped.clone(),
        spec: serde_json::to_value(&spec).expect("a spec serialises to JSON"),
        columns: columns(),
        merged_from: Vec::new(),
        test_hooks: Some(TestHooks {
            verify_delay_pct: a.inject_verify_delay_pct,
            draft_steps: a.inject_draft_steps,
        })
        .filter(TestHooks::any),
    };
    Ok(Some(Plan {
        spec,
        grid,
        meta,
        dir,
        done: resume::Finished::default(),
    }))
}

fn resumed(a: &SweepArgs, path: &Path) -> Result<Plan, CliError> {
    if a.overrides().any() {
        return Err(CliError::Input(
            "--resume continues a run with the spec saved in its folder: it takes no overriding flags".into(),
        ));
    }
    let dir = RunDir::open(path)?;
    let meta = Meta::read(&dir.file("meta.json"))?;
    let src = SpecSource::read(&dir.file("spec.toml")).map_err(SweepError::from)?;
    let spec = src.parse().map_err(SweepError::from)?;
    let grid = Grid::expand(&spec, Path::new(&meta.base_dir))?;
    print_skipped(&grid);
    let done = resume::repair(dir.path())?;
    Ok(Plan {
        spec,
        grid,
        meta,
        dir,
        done,
    })
}

/// Runs `specula sweep`.
pub fn run(a: SweepArgs) -> Result<(), CliError> {
    let plan = match (&a.resume, &a.spec) {
        (Some(dir), _) => resumed(&a, dir)?,
        (None, Some(spec)) => match fresh(&a, spec)? {
            Some(p) => p,
            None => return Ok(()),
        },
        (None, None) => unreachable!("clap requires a spec without --resume"),
    };
    let Plan {
        spec,
        grid,
        mut meta,
        dir,
        done,
    } = plan;
    if let Some(n) = spec.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| CliError::Input(format!("threads = {n}: {e}")))?;
    }
    let shard: Shard = meta
        .shard
        .parse()
        .map_err(|e: String| SweepError::Corrupt {
            path: dir.file("meta.json"),
            message: e,
        })?;
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
        warmup: spec.warmup,
        hooks: meta.test_hooks.unwrap_or_default(),
        interleave: spec.interleave,
    };
    if info.hooks.any() {
        eprintln!(
            "warning: test hooks plant a regression in this run: {}",
            serde_json::to_string(&info.hooks).expect("serialisable")
        );
    }
    let already = done.throughput.len();
    let writers: Vec<Box<dyn RowWriter>> = vec![
        Box::new(PositionsCsv::open(&dir.file("positions.csv"))?),
        Box::new(KernelsCsv::open(&dir.file("kernels.csv"))?),
        Box::new(HistogramLogs::open(&dir.file("histograms"))?),
        Box::new(RunsCsv::open(&dir.file("runs.csv"))?),
    ];
    meta.status = "running".into();
    meta.write(&dir.file("meta.json"))?;
    interrupt::install();
    let progress = Progress::new(0, a.quiet);
    if already > 0 {
        progress.note(&format!(
            "resuming {}: {already} rows already finished",
            dir.path().display()
        ));
    }
    let (result, written) = match (&spec.server, spec.backend) {
        (Some(server), kind) if kind != BackendKind::Engine => {
            let base = PathBuf::from(&meta.base_dir);
            let mut runner = ServedRunner::new(
                &grid,
                &info,
                kind,
                server.get_ref().clone(),
                &base,
                writers,
                dir.path(),
                &progress,
                done,
            )?;
            progress.set_total(runner.pending_rows());
            let mut result = runner.run();
            if result.is_ok() && runner.failed > 0 {
                result = Err(SweepError::RowsFailed(format!(
                    "points failed: {} (see {}); every finished row is kept",
                    runner.failed,
                    dir.file("failures.csv").display()
                )));
            }
            (result, runner.written)
        }
        _ => {
            let mut runner = Runner::new(&grid, &info, writers, &progress, done);
            progress.set_total(runner.pending_batches());
            (runner.run(), runner.written)
        }
    };
    progress.finish();
    meta.rows_written = already + written;
    meta.finished_at = Some(rfc3339(SystemTime::now()));
    meta.status = match &result {
        Ok(()) => "finished",
        Err(SweepError::Interrupted(_)) => "interrupted",
        Err(SweepError::RowsFailed(_)) => "finished_with_failures",
        Err(_) => "failed",
    }
    .into();
    meta.write(&dir.file("meta.json"))?;
    if let Err(e) = result {
        if matches!(e, SweepError::Interrupted(_)) {
            eprintln!(
                "{} rows kept in {}; continue with: specula sweep --resume {}",
                meta.rows_written,
                dir.path().display(),
                dir.path().display()
            );
        }
        return Err(e.into());
    }
    if !a.quiet {
        let table = Table::read(&dir.file("runs.csv"))?;
        print!("{}", summary::render(&table));
    }
    println!(
        "wrote {} rows ({} this time) to {}",
        meta.rows_written,
        written,
        dir.path().display()
    );
    Ok(())
}
