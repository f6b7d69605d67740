//! Command-line interface: one module per subcommand.

mod analyze;
mod audit;
mod compare;
mod fixtures;
mod gate;
mod generate;
#[cfg(feature = "cuda")]
mod gpu;
mod merge;
mod nightly;
mod report;
mod serve;
mod sweep;

use crate::sweep::SweepError;
use clap::{Parser, Subcommand};
use specula_engine::EngineError;

/// Exit code for unusable input (bad files, fields, settings).
pub const EXIT_BAD_INPUT: u8 = 2;

/// Exit code of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Exit code when writing results fails or a run folder is damaged.
pub const EXIT_FAILED: u8 = 1;

/// An error of a subcommand, with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad model files or settings.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A sweep or merge problem.
    #[error(transparent)]
    Sweep(SweepError),
    /// Anything else the user supplied that cannot be used.
    #[error("{0}")]
    Input(String),
    /// An audit found a problem (already reported on stdout).
    #[error("the audit found a problem (see above)")]
    Findings,
    /// The gate found a regression (already reported on stdout).
    #[error("the gate found a regression (see above)")]
    Regressed,
}

impl From<SweepError> for CliError {
    fn from(e: SweepError) -> CliError {
        match e {
            SweepError::Engine(e) => CliError::Engine(e),
            e => CliError::Sweep(e),
        }
    }
}

impl CliError {
    /// The process exit code: 2 for unusable input, 130 when interrupted, 1 when writing failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Sweep(SweepError::Interrupted(_)) => EXIT_INTERRUPTED,
            CliError::Sweep(SweepError::Io { .. })
            | CliError::Sweep(SweepError::RowsFailed(_))
            | CliError::Findings
            | CliError::Regressed => EXIT_FAILED,
            _ => EXIT_BAD_INPUT,
        }
    }
}

/// specula: benchmark EAGLE-3 speculative decoding and explain a bad draft.
#[derive(Parser, Debug)]
#[command(name = "specula", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write model checkpoints for tests and quick starts.
    #[command(subcommand)]
    Fixtures(fixtures::FixturesCommand),
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
    /// Explain a run: expected vs measured tau, live vs trained acceptance, break-even tau, a verdict per row.
    Analyze(analyze::AnalyzeArgs),
    /// The engine on an NVIDIA GPU: agreement with the CPU engine, losslessness, decode
    /// bandwidth and synthetic-acceptance speedups (a build with `--features cuda`).
    #[cfg(feature = "cuda")]
    #[command(
        subcommand,
        after_help = "Environment, for measurement:\n  \
            SPECULA_LINEAR=fma     bf16 linears on the FMA kernel instead of tensor cores (slower, the more\n                         \
            so the more rows; either is batch-invariant, so every config stays lossless)\n  \
            SPECULA_PDL=0          no programmatic dependent launches\n  \
            SPECULA_GPU_PROFILE=1  per-operation CUDA-event breakdown of each forward (runs eagerly)"
    )]
    Gpu(gpu::GpuCommand),
    /// Serve the built-in engine over HTTP with the SGLang (/generate, /get_server_info) and
    /// vLLM (/v1/completions, /metrics) protocols, for the sweep's sglang and vllm backends.
    Serve(serve::ServeArgs),
    /// CI performance gate: deterministic measures exactly, speedup by a bootstrap
    /// interval over repeats; exit 0 pass, 1 regression, 2 unusable input.
    Gate(gate::GateArgs),
    /// Plots (SVG, PNG), a self-contained report.html and a report.md of a run, with its acceptance analysis.
    Report(report::ReportArgs),
    /// Compare two runs row by row: changes with intervals, a verdict per row, A-vs-B plots.
    Compare(compare::CompareArgs),
    /// Sweep, report and gate against the newest baseline in one command (for cron),
    /// into results/nightly/<date>/.
    Nightly(nightly::NightlyArgs),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Fixtures(c) => fixtures::run(c),
        Command::Generate(a) => generate::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Analyze(a) => analyze::run(a),
        #[cfg(feature = "cuda")]
        Command::Gpu(c) => gpu::run(c),
        Command::Serve(a) => serve::run(a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Nightly(a) => {
            if nightly::run(a)? {
                return Err(CliError::Regressed);
            }
            Ok(())
        }
        Command::Gate(a) => {
            if gate::run(a)? {
                return Err(CliError::Regressed);
            }
            Ok(())
        }
        Command::Audit(a) => {
            if audit::run(a)? {
                return Err(CliError::Findings);
            }
            Ok(())
        }
    }
}
