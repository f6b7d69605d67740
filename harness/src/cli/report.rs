//! `specula report RUN_DIR [--out DIR]`: plots, report.html and report.md.

use super::output::outln;
use super::CliError;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `specula report`.
#[derive(Args, Debug)]
#[command(
    after_help = "Writes DIR/report.html (self-contained: inline SVG plots and tables, no scripts, no external files), DIR/report.md (PNG plots in DIR/plots/) and DIR/plots/*.svg|png:
  throughput vs batch size per draft config; tau per config and prompt set with its spread;
  per-position acceptance curves; a tau histogram; time per decode step by span with the
  break-even line; a speedup heatmap over steps x topk; and the acceptance analysis
  (`specula analyze`). Rows flagged likely_config_error are listed as configuration errors,
  not as results. Also DIR/summary.json: every row's numbers as JSON numbers (both speedups,
  whether the machine was contended), as the sweep writes it beside runs.csv.

Example:
  specula report results/runs/default-20261129T120000Z   # -> results/runs/default-.../report/"
)]
pub struct ReportArgs {
    /// A run folder written by `specula sweep`.
    run_dir: PathBuf,
    /// Output folder. Default: RUN_DIR/report.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Runs `specula report`.
pub fn run(a: ReportArgs) -> Result<(), CliError> {
    let out = a.out.unwrap_or_else(|| a.run_dir.join("report"));
    for f in specula::report::write(&a.run_dir, &out)? {
        outln!("wrote {}", f.display());
    }
    Ok(())
}
