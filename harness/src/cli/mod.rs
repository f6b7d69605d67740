//! The command line, and only it: one module per subcommand, each turning
//! its parsed flags into a call of the `specula` library (a sweep plan, a
//! report, a gate judgement, ...) and printing what comes back. Errors are
//! gathered in [`CliError`], whose `fault()` `main` turns into the exit code.

mod ab;
mod analyze;
mod audit;
mod capture;
mod compare;
mod cost;
mod datasets;
mod fixtures;
mod gate;
mod generate;
#[cfg(feature = "cuda")]
mod gpu;
mod merge;
mod nightly;
mod output;
mod report;
mod serve;
mod speculation;
mod sweep;

use clap::{Parser, Subcommand};
use specula::capture::CaptureError;
use specula::compare::CompareError;
use specula::gate::GateError;
use specula::nightly::NightlyError;
use specula::probe::ProbeError;
use specula::report::ReportError;
use specula::run_folder::RunFolderError;
use specula::serve::ServeError;
use specula::sweep::SweepError;
use specula::Fault;
use specula_engine::EngineError;
use std::path::PathBuf;

/// An error of a subcommand: a domain error of the library, or one of the
/// command line's own.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad model files or settings, or a failed fixture write.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A sweep problem.
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// A run folder problem (reading one, merging, writing).
    #[error(transparent)]
    RunFolder(#[from] RunFolderError),
    /// A report could not be made or written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A comparison could not be made or written.
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// The gate could not judge.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The nightly job stopped.
    #[error(transparent)]
    Nightly(#[from] NightlyError),
    /// The server could not start.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// A capture could not be made.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A served run could not be probed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// Instruction counts could not be made or read.
    #[error(transparent)]
    Cost(#[from] specula::cost::CostError),
    /// A flag or combination of flags that cannot be used.
    #[error("{0}")]
    Usage(String),
    /// An output file the command line names could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The GPU could not be used or a GPU check failed to run.
    #[cfg(feature = "cuda")]
    #[error("GPU: {0}")]
    Gpu(String),
    /// A check found a problem (already reported on stdout).
    #[error("{0} (see above)")]
    Found(String),
    /// A gate could not decide and its policy does not let that pass.
    #[error("{0}")]
    Inconclusive(String),
    /// A prompt set is unusable.
    #[error(transparent)]
    Dataset(#[from] specula_datasets::DatasetError),
}

impl CliError {
    /// Whose fault it is; `main` turns this into the exit code.
    pub fn fault(&self) -> Fault {
        match self {
            CliError::Engine(e) if e.is_write() => Fault::Failed,
            CliError::Engine(_) | CliError::Usage(_) | CliError::Dataset(_) => Fault::Input,
            #[cfg(feature = "cuda")]
            CliError::Gpu(_) => Fault::Input,
            CliError::Sweep(e) => e.fault(),
            CliError::RunFolder(e) => e.fault(),
            CliError::Report(e) => e.fault(),
            CliError::Compare(e) => e.fault(),
            CliError::Gate(e) => e.fault(),
            CliError::Nightly(e) => e.fault(),
            CliError::Serve(e) => e.fault(),
            CliError::Capture(e) => e.fault(),
            CliError::Probe(e) => e.fault(),
            CliError::Cost(e) => e.fault(),
            CliError::Write { .. } | CliError::Found(_) => Fault::Failed,
            CliError::Inconclusive(_) => Fault::Inconclusive,
        }
    }

    /// A failed write of `path`.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> CliError {
        CliError::Write {
            path: path.into(),
            source,
        }
    }
}

/// specula: benchmark EAGLE-3 speculative decoding and explain a bad draft.
#[derive(Parser, Debug)]
#[command(name = "specula", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Worker threads of the CPU engine's kernels. Default: a sweep spec's `threads`, else one
    /// per core. 1 steadies timings on cores shared with other jobs.
    #[arg(long, global = true, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    cpu_threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write model checkpoints for tests and quick starts.
    #[command(subcommand)]
    Fixtures(fixtures::FixturesCommand),
    /// The public prompt sets compiled into specula (MT-bench, Spec-Bench, GSM8K, HumanEval):
    /// list them, or write one out.
    #[command(subcommand)]
    Datasets(datasets::DatasetsCommand),
    /// Generate text from one prompt, speculatively or not, and report tau and span times.
    Generate(generate::GenerateArgs),
    /// Run a grid of model pairs x draft configs x batch sizes x prompt sets x temperatures
    /// into runs.csv, positions.csv, kernels.csv, histograms/ and meta.json.
    Sweep(sweep::SweepArgs),
    /// Merge run folders (shards of one sweep) into one, refusing duplicate rows.
    Merge(merge::MergeArgs),
    /// Check a draft against its target: static checks of the files, and which target
    /// hidden states the draft predicts best with (a capture-mapping mismatch is flagged).
    Audit(audit::AuditArgs),
    /// Record a target's hidden states and greedy tokens on a prompt set into a capture file,
    /// so `specula audit --states` can check a draft without loading the target.
    Capture(capture::CaptureArgs),
    /// Explain a run: expected vs measured tau, live vs trained acceptance, break-even tau, a verdict per row.
    Analyze(analyze::AnalyzeArgs),
    /// The engine on an NVIDIA GPU: agreement with the CPU engine, losslessness, decode
    /// bandwidth and synthetic-acceptance speedups (a build with `--features cuda`).
    #[cfg(feature = "cuda")]
    #[command(
        subcommand,
        after_help = "Environment, for measurement (each set one is recorded in meta.json \
            `engine_switches`; compare and gate warn when two runs differ in them; any other value \
            of a switch warns and leaves its default):\n  \
            SPECULA_LINEAR=fma          bf16 linears on the FMA kernel instead of tensor cores (slower,\n                              \
            the more so the more rows; either is batch-invariant, so every config\n                              \
            stays lossless)\n  \
            SPECULA_LINEAR_WG=0|1       warpgroup-mma linears never / past one token tile (default:\n                              \
            where faster)\n  \
            SPECULA_LINEAR_TILES=0|1|64 the tiled linear never (cuBLAS past the small-row kernel) / from\n                              \
            its tile rows / past the small-row kernel (default: per weight shape)\n  \
            SPECULA_WIDE_RULE=old       wide weights (gate|up, LM head) at 9-16 rows on wgmma, at 17-32 tiled\n                              \
            (default: the small-row kernel to 32 rows)\n  \
            SPECULA_WG_PRODUCER=0       wgmma linears transpose the next stage's tokens early, on the same\n                              \
            warps (default: a producer warpgroup streams and transposes them)\n  \
            SPECULA_QKV_ROPE=0          RoPE and the KV append as their own launch after the q|k|v projection\n  \
            SPECULA_MMA_PIPELINED=8|16|32  the pipelined small-row linear to 8 / 16 / 32 rows (default: to\n                              \
            32, and narrow weights at 33-64 rows in eight tiles)\n  \
            SPECULA_MMA_IN_ORDER=off|1|2|4  pipelined launches of that many token tiles or more start\n                              \
            in stream order (default 8: the eight-tile ones; off: none)\n  \
            SPECULA_MMA_EIGHT_TILES=all  every weight at 33-64 rows in eight token tiles (default: the\n                              \
            narrow ones where no wgmma layout is picked: o on an H100/H200)\n  \
            SPECULA_MMA_GROUPS=1|2      column tiles a block of the pipelined linear (default: two to 32\n                              \
            rows of weights with 4096 outputs or more, else one)\n  \
            SPECULA_ATTENTION=flash-prefill|split  decode and verify rows (or every row) on split-K\n  \
            SPECULA_TREE_EARLY=0        the tree attention waits before planning its split\n  \
            SPECULA_TREE_SHARE=0        one warp to each set of 16 query vectors, each row its own tail tiles\n  \
            SPECULA_TREE_STAGES=2|4     stages of tiles in the tree attention (default: 4 while a launch\n                              \
            has no more blocks than SMs, else 2)\n  \
            SPECULA_MLA=mma|fma         latent attention on tensor cores always / never (default: prefill\n                              \
            and decode or verify rows of at least SPECULA_MLA_LONG keys)\n  \
            SPECULA_MLA_LONG=64|256|512|1024|2048|4096|off  keys from which such a row takes tensor cores\n                              \
            (default 512)\n  \
            SPECULA_MLA_SPLITS=32|64|128|64x2|128x2|128x4  splits a row of the tensor-core latent attention\n                              \
            at most, one 32-key chunk a split or more (xN: at least N chunks; default 128)\n  \
            SPECULA_MLA_PAIRS=0         one row a block of the tensor-core latent attention (default two:\n                              \
            a verify's rows of one sequence read their cached prefix once a pair)\n  \
            SPECULA_MLA_PREP=two        the latent preparation and W_UK as two forked launches\n  \
            SPECULA_FORK=0              no side stream: every launch in order\n  \
            SPECULA_PDL=0|late          no programmatic dependent launches / the next one only as this ends\n  \
            SPECULA_IN_ORDER=tree|sliced|tree,sliced  the tree attention / the wgmma and tiled linears\n                              \
            start in stream order, not as programmatic dependents\n  \
            SPECULA_TIMER_HOLD=0        kernel timers without the stream hold before their start event\n  \
            SPECULA_KERNEL_CACHE=DIR    load (and keep) compiled kernels there instead of compiling\n  \
            SPECULA_GPU_PROFILE=1       per-operation CUDA-event breakdown of each forward (runs eagerly)"
    )]
    Gpu(gpu::GpuCommand),
    /// The engine on an NVIDIA GPU: this build has none (it says how to build one).
    #[cfg(not(feature = "cuda"))]
    #[command(disable_help_flag = true)]
    Gpu(NoGpuArgs),
    /// Serve the built-in engine over HTTP with the SGLang (/generate, /get_server_info) and
    /// vLLM (/v1/completions, /metrics) protocols, for the sweep's sglang and vllm backends.
    Serve(serve::ServeArgs),
    /// CI performance gate: deterministic measures exactly, speedup by a bootstrap
    /// interval over repeats; exit 0 pass, 1 regression, 2 unusable input, 3 inconclusive.
    Gate(gate::GateArgs),
    /// Deterministic cost: instruction counts (valgrind's callgrind) per prefill, draft
    /// forward, verify forward, decode step and token of every row of a spec, into costs.csv.
    Cost(cost::CostArgs),
    /// Paired, interleaved timing comparison of a control and variants (flags or builds):
    /// more rounds until each is decided; exit 0 pass, 1 regression, 3 inconclusive.
    Ab(ab::AbArgs),
    /// Plots (SVG, PNG), a self-contained report.html and a report.md of a run, with its acceptance analysis.
    Report(report::ReportArgs),
    /// Compare two runs row by row: changes with intervals, a verdict per row, A-vs-B plots.
    Compare(compare::CompareArgs),
    /// Sweep, report and gate against the newest baseline in one command (for cron),
    /// into results/nightly/<date>/.
    Nightly(nightly::NightlyArgs),
}

/// Whatever follows `specula gpu` in a build without CUDA.
#[cfg(not(feature = "cuda"))]
#[derive(clap::Args, Debug)]
pub struct NoGpuArgs {
    /// Ignored: the command cannot run in this build.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Runs the parsed command: `Ok` exits 0.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let threads = cli.cpu_threads;
    let done = match threads {
        // A sweep's threads come from its spec unless the flag is given.
        None if matches!(cli.command, Command::Sweep(_)) => command(cli.command, None),
        // The server's engine thread makes its own pool; HTTP runs beside it.
        _ if matches!(cli.command, Command::Serve(_)) => command(cli.command, threads),
        _ => specula_kernels::cpu::with_cpu_threads(threads, || command(cli.command, threads))
            .map_err(CliError::Usage)
            .and_then(|done| done),
    };
    done.and(output::finish())
}

fn command(command: Command, cpu_threads: Option<usize>) -> Result<(), CliError> {
    match command {
        Command::Fixtures(c) => fixtures::run(c),
        Command::Datasets(c) => datasets::run(c),
        Command::Generate(a) => generate::run(a),
        Command::Sweep(a) => sweep::run(a, cpu_threads),
        Command::Merge(a) => merge::run(a),
        Command::Analyze(a) => analyze::run(a),
        #[cfg(feature = "cuda")]
        Command::Gpu(c) => gpu::run(c),
        #[cfg(not(feature = "cuda"))]
        Command::Gpu(_) => Err(CliError::Usage(
            "this specula was built without CUDA, so it has no `specula gpu`. Build one with \
             `cargo build --release -p specula --features cuda` (it loads the CUDA driver and \
             NVRTC at run time; see the README, \"The GPU backend\")"
                .into(),
        )),
        Command::Serve(a) => serve::run(a, cpu_threads),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Nightly(a) => gate_outcome(nightly::run(a)?),
        Command::Gate(a) => gate_outcome(gate::run(a)?),
        Command::Cost(a) => cost::run(a),
        Command::Ab(a) => ab::run(a),
        Command::Capture(a) => capture::run(a),
        Command::Audit(a) => found(audit::run(a)?, "the audit found a problem"),
    }
}

/// A gate's exit: 1 for a regression, 3 for an inconclusive run unless its
/// policy lets that pass, else 0.
fn gate_outcome(
    (verdict, on_inconclusive): (specula::gate::GateVerdict, specula::gate::OnInconclusive),
) -> Result<(), CliError> {
    use specula::gate::{GateVerdict, OnInconclusive};
    match (verdict, on_inconclusive) {
        (GateVerdict::Regression, _) => found(true, "the gate found a regression"),
        (GateVerdict::Inconclusive, OnInconclusive::Fail) => Err(CliError::Inconclusive(
            "the gate is inconclusive: nothing regressed, but some timings could not be judged \
             (see the summary for what to do; a policy with on_inconclusive = \"pass\" exits 0)"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// `Err(Found(what))` when a check found something: exit 1.
fn found(yes: bool, what: &str) -> Result<(), CliError> {
    if yes {
        Err(CliError::Found(what.to_string()))
    } else {
        Ok(())
    }
}
