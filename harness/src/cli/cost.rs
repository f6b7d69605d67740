//! `specula cost SPEC --out RUN_DIR`: instruction counts of a few steps of
//! every row of a sweep spec, under valgrind's callgrind, into costs.csv.

use super::output::outln;
use super::CliError;
use clap::Args;
use specula::cost::{measure, Probe};
use specula::run_folder::TestHooks;
use std::path::PathBuf;

/// Arguments of `specula cost`.
#[derive(Args, Debug)]
#[command(
    after_help = "Runs `specula sweep SPEC` cut short (SAMPLE prompts, MAX_NEW_TOKENS tokens,
one repeat, no warm-up, one kernel thread) under valgrind --tool=callgrind, counting the
instructions of every prefill, draft forward, verify forward and decode step through client
requests at span boundaries. Writes RUN_DIR/costs.csv (row, measure, calls, instructions,
per_call; measures prefill, draft, verify, step, token) and RUN_DIR/costs.json (valgrind
version, build profile, sample, tokens). `specula gate` judges costs.csv exactly (within
`cost_tolerance`, default 0.5%) whatever the machine's load. Needs valgrind on PATH; about
50x slower than a native run, so keep the probe small (the defaults take about a minute on
bench/sweeps/gate.toml with the debug build).

Example:
  specula sweep bench/sweeps/gate.toml --out results/runs/gate
  specula cost bench/sweeps/gate.toml --out results/runs/gate"
)]
pub struct CostArgs {
    /// The sweep spec whose rows are counted.
    spec: PathBuf,
    /// The run folder to write costs.csv and costs.json into (created if missing).
    #[arg(long, value_name = "RUN_DIR")]
    out: PathBuf,
    /// Prompts per row.
    #[arg(long, default_value_t = 1)]
    sample: usize,
    /// Tokens per prompt at most.
    #[arg(long, default_value_t = 16)]
    max_new_tokens: usize,
    /// TEST HOOK: as `specula sweep --inject-verify-work-pct`.
    #[arg(long, hide = true, value_name = "PCT")]
    inject_verify_work_pct: Option<f64>,
    /// TEST HOOK: as `specula sweep --inject-draft-work-pct`.
    #[arg(long, hide = true, value_name = "PCT")]
    inject_draft_work_pct: Option<f64>,
    /// TEST HOOK: as `specula sweep --inject-target-work-pct`.
    #[arg(long, hide = true, value_name = "PCT")]
    inject_target_work_pct: Option<f64>,
}

/// Runs `specula cost`.
pub fn run(a: CostArgs) -> Result<(), CliError> {
    let mut inject = Vec::new();
    for (flag, v) in [
        ("--inject-verify-work-pct", a.inject_verify_work_pct),
        ("--inject-draft-work-pct", a.inject_draft_work_pct),
        ("--inject-target-work-pct", a.inject_target_work_pct),
    ] {
        if let Some(v) = v {
            inject.extend([flag.to_string(), v.to_string()]);
        }
    }
    let probe = Probe {
        spec: a.spec,
        sample: a.sample,
        max_new_tokens: a.max_new_tokens,
        inject,
        hooks: TestHooks {
            verify_work_pct: a.inject_verify_work_pct,
            draft_work_pct: a.inject_draft_work_pct,
            target_work_pct: a.inject_target_work_pct,
            ..TestHooks::default()
        },
    };
    let rows = measure(&probe, &a.out)?;
    outln!(
        "{} counts written to {}",
        rows.len(),
        a.out.join(specula::cost::table::COSTS_CSV).display()
    );
    Ok(())
}
