//! `specula gate --baseline FILE_OR_DIR --current RUN_DIR [--policy FILE]`.

use super::output::{errln, out, outln};
use super::CliError;
use clap::Args;
use specula::gate::{judge, GateVerdict, OnInconclusive, Policy};
use std::path::PathBuf;

/// Arguments of `specula gate`.
#[derive(Args, Debug)]
#[command(after_help = "Checks (policy `measures`, default all):
  tau, accept_rate, positions (a_k)  deterministic at temperature 0 and fixed seeds: a drop beyond
                                     the tolerance regresses (default tolerance 0: exact)
  lossless                           must stay true
  speedup                            the same-run timing ratio (`timing_column`), over repeats: the
                                     change of its mean with a bootstrap interval; regressed only when
                                     the whole interval is below -noise_threshold (as criterion does)

Policy file (TOML, every field optional; the defaults):
  measures = [\"tau\", \"accept_rate\", \"positions\", \"lossless\", \"speedup\"]
  tau_tolerance = 0.0          accept_rate_tolerance = 0.0     position_tolerance = 0.0
  alpha = 0.05                 # significance level: a 95% interval
  noise_threshold = 0.05       # a change of the mean speedup within 5% is noise
  resamples = 10000            seed = 0   # the gate is deterministic for given inputs
  min_repeats = 3              # fewer repeats: speedup is reported as not judged
  timing_column = \"cpu_speedup\" # decode tokens per CPU second over the same-run baseline's
                               # (steady on shared cores); \"speedup\" = the wall-clock ratio
  pace_tolerance = 0.10        # speedup is not judged when the same-run baselines' tokens per
                               # CPU second differ by more between the runs (another machine state)

Warns when the runs differ in build profile, CPU threads, CPU model, or in whether the
machine was saturated when they started: timings are then not comparable.

  on_inconclusive = \"fail\"    # timings not judged and nothing regressed: exit 3 (\"pass\": exit 0);
                               # the summary says INCONCLUSIVE and what to do either way

Exit codes: 0 pass, 1 regression, 2 unusable input (missing columns, mismatched schemas,
empty runs, baseline rows without a match), 3 inconclusive (some timing not judged).

Example:
  specula gate --baseline results/baselines/ci --current results/runs/gate-20261129T120000Z")]
pub struct GateArgs {
    /// The baseline: a runs.csv, a run folder, or a folder of run folders (the newest by name is used).
    #[arg(long, value_name = "FILE_OR_DIR")]
    baseline: PathBuf,
    /// The run to judge (a run folder or its runs.csv).
    #[arg(long, value_name = "RUN_DIR")]
    current: PathBuf,
    /// Policy file (TOML); without it the defaults above.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Also write the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Print the judgement as one JSON object instead of the Markdown summary
    /// (fields: verdict, counts, checks with numbers, notes, environment).
    #[arg(long)]
    json: bool,
}

/// Runs the gate: its verdict, and what the policy does with an inconclusive one.
pub fn run(a: GateArgs) -> Result<(GateVerdict, OnInconclusive), CliError> {
    let policy = match &a.policy {
        Some(p) => Policy::read(p)?,
        None => Policy::default(),
    };
    let judgement = judge(&a.baseline, &a.current, &policy)?;
    if let Some(path) = &a.markdown {
        std::fs::write(path, &judgement.markdown).map_err(|e| CliError::write(path, e))?;
    }
    for d in &judgement.environment {
        errln!("warning: {d}");
    }
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&judgement.report()).expect("serialisable")
        );
    } else {
        out!("{}", judgement.markdown);
    }
    Ok((judgement.verdict(), policy.on_inconclusive))
}
