//! `specula analyze RUN_DIR`: why a run's speculation pays or does not.

use super::output::outln;
use super::CliError;
use clap::Args;
use specula::analyze::analyze;
use specula::analyze::context_tiers::{context_tiers, ContextTiers};
use specula::analyze::slices::AcceptanceSlice;
use specula::run_folder::summary::CONTENTION_RATIO;
use specula::run_folder::Run;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "For every speculative row: measured tau beside the tau its per-position acceptance implies (1 + sum a_k), live acceptance per depth beside the draft's teacher-forced training accuracy (from training_report.json beside the draft), the break-even tau from the measured span costs, both speedups (rows where they disagree by more than 25% are marked contended: other jobs took the cores), and a verdict (none when the break-even tau is below 1, which only disturbed timings give). Where requests.csv splits a row's requests into several prompt categories or context lengths (prompt tokens <512, 512-2k, 2k-8k, 8k-32k, 32k+), tau and a_1 per category and per context length. Across rows, where one setting ran several prompt sets (a context-tier sweep), tau and a_1 per prompt set ordered by mean prompt tokens, and the prompt sets skipped because they do not fit the model's context, with the reason; a prompt set run past the model's context (allow_past_context) is marked `past trained context: K of N requests over L positions`.\n\nExample:\n  specula analyze results/runs/default-20261129T120000Z"
)]
pub struct AnalyzeArgs {
    /// A run folder written by `specula sweep` (runs.csv, positions.csv, kernels.csv).
    run_dir: PathBuf,
    /// Print one JSON array of row analyses instead of text.
    #[arg(long)]
    json: bool,
}

/// `name: tau 2.31, a_1 71% (12 requests)`.
fn describe_slice(s: &AcceptanceSlice) -> String {
    format!(
        "{}: tau {}, a_1 {} ({} requests)",
        s.slice,
        s.tau.map_or("-".into(), |t| format!("{t:.2}")),
        s.per_position
            .first()
            .map_or("-".into(), |a| format!("{:.0}%", a * 100.0)),
        s.requests
    )
}

/// Runs `specula analyze`.
pub fn run(a: AnalyzeArgs) -> Result<(), CliError> {
    let run = Run::read(&a.run_dir)?;
    let rows = analyze(&run)?;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("serialisable")
        );
        return Ok(());
    }
    if rows.is_empty() {
        outln!("{}: no speculative rows to analyse", a.run_dir.display());
        return Ok(());
    }
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    outln!(
        "{:<44} {:>6} {:>8} {:>10} {:>8} {:>11}",
        "row",
        "tau",
        "1+sum a",
        "break-even",
        "speedup",
        "cpu_speedup"
    );
    for r in &rows {
        outln!(
            "{:<44} {:>6.2} {:>8.2} {:>10} {:>8} {:>11}{}",
            r.row_key,
            r.tau,
            r.expected_tau,
            fmt(r.break_even_tau),
            fmt(r.speedup),
            fmt(r.cpu_speedup),
            if r.contended { "  contended" } else { "" }
        );
    }
    if rows.iter().any(|r| r.contended) {
        outln!("contended: speedup (wall clock) and cpu_speedup (CPU time) differ by more than {:.0}%: other jobs took the cores while the row or its baseline ran", 100.0 * (CONTENTION_RATIO - 1.0));
    }
    for r in &rows {
        outln!("\n{}", r.row_key);
        outln!("  {}", r.verdict);
        if let Some(c) = r.step_us {
            outln!(
                "  step: draft {:.0} us, verify {:.0} us, overhead {:.0} us; baseline step {} us",
                c.draft,
                c.verify,
                c.overhead,
                r.baseline_step_us.map_or("-".into(), |b| format!("{b:.0}"))
            );
        }
        let depth: Vec<String> = r
            .conditional
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let trained = r
                    .trained_accuracy
                    .as_ref()
                    .and_then(|t| t.get(k))
                    .map_or(String::new(), |t| format!(" (trained {:.0}%)", t * 100.0));
                format!("depth {}: {:.0}%{trained}", k + 1, c * 100.0)
            })
            .collect();
        outln!(
            "  live acceptance given the previous depth: {}",
            depth.join(", ")
        );
        for (what, slices) in [
            ("category", &r.slices.by_category),
            ("context length", &r.slices.by_context),
        ] {
            if slices.len() > 1 {
                let parts: Vec<String> = slices.iter().map(describe_slice).collect();
                outln!("  by {what}: {}", parts.join("; "));
            }
        }
    }
    print_context_tiers(&context_tiers(&run)?);
    Ok(())
}

/// The cross-row view: per setting, each prompt set's (tier's) tau and a_1,
/// shortest first; then the tiers skipped for not fitting the context.
fn print_context_tiers(view: &ContextTiers) {
    if view.rows.is_empty() && view.skipped.is_empty() {
        return;
    }
    let past = |setting: &str, t: &specula::analyze::context_tiers::Tier| {
        let note = view.past_note(setting, t);
        if note.is_empty() {
            note
        } else {
            format!("  [{note}]")
        }
    };
    outln!(
        "
acceptance by context tier (each prompt set's requests; mean prompt tokens):"
    );
    for r in &view.rows {
        outln!("  {}", r.setting);
        for t in &r.tiers {
            let s = &t.acceptance;
            outln!(
                "    {:<12} {:>7} tokens  {}{}",
                s.slice,
                s.prompt_tokens_mean
                    .map_or("-".into(), |p| format!("{p:.0}")),
                describe_slice(s)
                    .split_once(": ")
                    .map_or(String::new(), |x| x.1.to_string()),
                past(&r.setting, t)
            );
        }
    }
    for s in &view.skipped {
        outln!("  skipped {} {}: {}", s.model, s.prompt_set, s.reason);
    }
}
