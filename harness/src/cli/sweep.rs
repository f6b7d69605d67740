//! `specula sweep`: run a grid from a TOML spec into a run folder.

use super::output::{errln, out, outln};
use super::CliError;
use clap::Args;
use specula::run_folder::{SkippedConfig, SpanMode, TestHooks};
use specula::sweep::context_fit::past_reason;
use specula::sweep::grid::Grid;
use specula::sweep::overrides::Overrides;
use specula::sweep::plan::{Start, Sweep, SweepPlan};
use specula::sweep::shard::Shard;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  specula sweep bench/sweeps/default.toml
  specula sweep bench/sweeps/default.toml --batch-sizes 1,4 --max-new-tokens 32 --out results/runs/try
  specula sweep bench/sweeps/default.toml --shard 0/4 --run-id nightly --out results/runs/nightly/0
  specula sweep --resume results/runs/default-20260501T120000Z
  specula sweep bench/sweeps/default.toml --spans on,off --repeats 5   # span-recording overhead
  specula sweep bench/sweeps/context-tiers.toml --allow-past-context   # tiers past the model's context too")]
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
    /// Override `allow_past_context` to true: run prompt sets whose prompts need
    /// more positions than the target's max_position_embeddings (skipped by
    /// default), marked past_trained_context in meta.json, requests.csv,
    /// analyze and the report.
    #[arg(long)]
    allow_past_context: bool,
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
    /// The global `--cpu-threads` (set by [`run`]).
    #[arg(skip)]
    cpu_threads: Option<usize>,
    /// TEST HOOK (plants a regression): draft at most N steps whatever the row's
    /// config says. Recorded in meta.json.
    #[arg(long, hide = true, value_name = "N", conflicts_with = "resume")]
    inject_draft_steps: Option<usize>,
    /// TEST HOOK (plants a regression): run PCT% of the speculative rows' verify
    /// forwards twice (the repeat discarded: same tokens, PCT% more work). Recorded in meta.json.
    #[arg(long, hide = true, value_name = "PCT", conflicts_with = "resume", value_parser = work_pct)]
    inject_verify_work_pct: Option<f64>,
    /// TEST HOOK (plants a regression): run draft forwards twice until the repeats
    /// took PCT% of the forwards' own time (thread CPU clock).
    #[arg(long, hide = true, value_name = "PCT", conflicts_with = "resume", value_parser = work_pct)]
    inject_draft_work_pct: Option<f64>,
    /// TEST HOOK (plants a regression): run PCT% of every row's target
    /// forwards twice (the baseline's included).
    #[arg(long, hide = true, value_name = "PCT", conflicts_with = "resume", value_parser = work_pct)]
    inject_target_work_pct: Option<f64>,
    /// Internal (`specula cost`): count the recorded calls' spans through
    /// callgrind client requests; only under valgrind.
    #[arg(long, hide = true, conflicts_with = "resume")]
    cost_probe: bool,
    /// Clock of recorded CPU spans: `host` (wall, the default) or
    /// `thread-cpu` (the thread's CPU time: preemption left out; `specula ab`).
    #[arg(long, value_name = "CLOCK", default_value = "host", value_parser = ["host", "thread-cpu"])]
    span_clock: String,
}

/// A share of calls in percent: a number in (0, 100].
fn work_pct(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("{s:?}: a percentage in (0, 100]")),
    }
}

impl SweepArgs {
    /// The test hooks these flags plant.
    pub fn hooks(&self) -> TestHooks {
        TestHooks {
            verify_delay_pct: self.inject_verify_delay_pct,
            draft_steps: self.inject_draft_steps,
            verify_work_pct: self.inject_verify_work_pct,
            draft_work_pct: self.inject_draft_work_pct,
            target_work_pct: self.inject_target_work_pct,
        }
    }
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
            // Paths on the command line are read from where it runs; the
            // spec's own paths from the spec's folder.
            target: self.target.as_deref().map(from_here),
            draft: self.draft.as_deref().map(from_here),
            threads: self.cpu_threads,
            allow_past_context: self.allow_past_context,
        }
    }

    /// The sweep these flags ask for, or `None` for a dry run (listed here).
    fn sweep(&self) -> Result<Option<Sweep>, CliError> {
        let spec = match (&self.resume, &self.spec) {
            (Some(dir), _) => {
                if self.overrides().any() {
                    return Err(CliError::Usage(
                        "--resume continues a run with the spec saved in its folder: it takes no overriding flags".into(),
                    ));
                }
                let sweep = Sweep::resume(dir)?;
                print_skipped(sweep.plan().skipped());
                print_past(&sweep.plan().grid);
                return Ok(Some(sweep));
            }
            (None, Some(spec)) => spec,
            (None, None) => unreachable!("clap requires a spec without --resume"),
        };
        let plan = SweepPlan::from_spec(spec, &self.overrides())?;
        print_skipped(plan.skipped());
        print_past(&plan.grid);
        if self.dry_run {
            for (runs, key) in plan.listing(self.shard.unwrap_or(Shard::ALL)) {
                outln!("{} {key}", if runs { "run" } else { "skip" });
            }
            plan.check_drafts(None)?;
            return Ok(None);
        }
        let start = Start {
            out: self.out.clone(),
            run_id: self.run_id.clone(),
            shard: self.shard,
            hooks: self.hooks(),
        };
        Ok(Some(plan.start(start)?))
    }
}

/// `path` as an absolute path from the current folder (as given when that fails).
fn from_here(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn print_skipped(skipped: &[SkippedConfig]) {
    for s in skipped {
        errln!("{s}");
    }
}

/// Says which prompt sets run past a model's trained context (`allow_past_context`).
fn print_past(grid: &Grid) {
    for p in grid.past_trained_context() {
        errln!(
            "past trained context {} {}: {} (run anyway: allow_past_context)",
            p.model,
            p.prompt_set,
            past_reason(&p)
        );
    }
}

/// Runs `specula sweep`.
/// Runs the sweep; `cpu_threads` is the global `--cpu-threads` flag.
pub fn run(mut a: SweepArgs, cpu_threads: Option<usize>) -> Result<(), CliError> {
    a.cpu_threads = cpu_threads;
    if a.span_clock == "thread-cpu" {
        specula::sweep::thread_clock::use_thread_cpu_clock();
    }
    if a.cost_probe {
        if !specula::cost::client_request::running_on_valgrind() {
            return Err(CliError::Usage(
                "--cost-probe counts through valgrind: run `specula cost` instead".into(),
            ));
        }
        specula::cost::recorder::set_probing();
    }
    let Some(sweep) = a.sweep()? else {
        return Ok(());
    };
    let report = sweep.run(a.quiet)?;
    if !a.quiet {
        out!("{}", report.summary);
    }
    outln!(
        "wrote {} rows ({} this time) to {}",
        report.rows,
        report.written,
        report.dir.display()
    );
    Ok(())
}
