//! `specula nightly`: sweep, report and gate against the newest baseline of
//! the same sweep, in one command for a cron job, into results/nightly/<date>/.

use super::output::{out, outln};
use super::CliError;
use clap::Args;
use specula::gate::Policy;
use specula::nightly::Nightly;
use std::path::PathBuf;

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

/// Runs `specula nightly`: the gate's verdict, and what its policy does with an inconclusive one.
pub fn run(
    a: NightlyArgs,
) -> Result<(specula::gate::GateVerdict, specula::gate::OnInconclusive), CliError> {
    let policy = match &a.policy {
        Some(p) => Policy::read(p)?,
        None => Policy::default(),
    };
    let n = specula::nightly::run(&Nightly {
        spec: a.spec,
        baselines: a.baselines,
        out: a.out,
        policy,
    })?;
    outln!(
        "wrote {} rows ({} this time) to {}",
        n.sweep.rows,
        n.sweep.written,
        n.sweep.dir.display()
    );
    for f in &n.report {
        outln!("wrote {}", f.display());
    }
    out!("{}", n.markdown);
    outln!("wrote {}", n.gate_md.display());
    Ok((n.verdict, n.on_inconclusive))
}
