//! `specula compare RUN_A RUN_B [--out DIR]`.

use super::output::{errln, out, outln};
use super::CliError;
use clap::Args;
use specula::compare::{write, Settings};
use specula::stats::Bootstrap;
use std::path::PathBuf;

/// Arguments of `specula compare`.
#[derive(Args, Debug)]
#[command(
    after_help = "Rows are matched by their identity columns (model pair, dtype, capture points, steps, topk,
num_draft_tokens, temperature, batch size, prompt set and count, max_new_tokens, id convention,
spans; not run id, git revision, start time, machine or device); repeats are pooled per row.
For tau, accept_rate, throughput_tok_s, speedup and cpu_speedup: the change mean(B)/mean(A) - 1,
with a bootstrap interval where both runs have repeats, and a verdict (improved / regressed /
within noise) as criterion reads a change. Writes DIR/compare.html, DIR/compare.md and
DIR/plots/ and prints the table (or, with --json, the comparison as one JSON object).
Warns when the runs differ in build profile, CPU threads, CPU model, or in whether the
machine was saturated when they started: their timings are then not comparable.
Exit code 0, or 2 for unusable input (including runs without one matched row).

Example:
  specula compare results/runs/before results/runs/after --out results/runs/after/compare"
)]
pub struct CompareArgs {
    /// Run A (the reference): a run folder or its runs.csv.
    run_a: PathBuf,
    /// Run B (compared with A).
    run_b: PathBuf,
    /// Output folder. Default: RUN_B/compare.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Significance level of the intervals.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// A relative change within this is noise.
    #[arg(long, default_value_t = 0.05)]
    noise_threshold: f64,
    /// Print the comparison as one JSON object (fields: a, b, settings, counts, environment, rows, only_a, only_b, files) instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs `specula compare`.
pub fn run(a: CompareArgs) -> Result<(), CliError> {
    let settings = Settings {
        bootstrap: Bootstrap {
            alpha: a.alpha,
            ..Bootstrap::default()
        },
        noise: a.noise_threshold,
    };
    let out = a.out.unwrap_or_else(|| a.run_b.join("compare"));
    let compared = write(&a.run_a, &a.run_b, &out, &settings)?;
    for d in &compared.report.environment {
        errln!("warning: {d}");
    }
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&compared.report).expect("serialisable")
        );
        return Ok(());
    }
    out!("{}", compared.table);
    for f in &compared.files {
        outln!("wrote {}", f.display());
    }
    Ok(())
}
