//! `specula compare RUN_A RUN_B`: rows matched by their identity columns
//! (everything but run id, git revision, start time, machine and device),
//! repeats pooled per row group; per measure the change from A to B with a
//! bootstrap interval where both sides have repeats, and a verdict per row
//! (improved, regressed, within noise); A-vs-B plots.
//!
//! - [`matching`]: the row groups of both runs and their changes;
//! - [`plots`]: the A-vs-B plots.

pub mod matching;
pub mod plots;

use crate::cli::CliError;
use crate::doc::html::Html;
use crate::doc::markdown::Markdown;
use crate::doc::{Block, Document, Render, Table};
use crate::report::plots::render;
use crate::runs::Run;
use crate::stats::{Bootstrap, Verdict};
use matching::{compare_runs, Change};
use std::path::{Path, PathBuf};

/// How changes are judged.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Bootstrap settings (significance level, resamples, seed).
    pub bootstrap: Bootstrap,
    /// A relative change within this is noise.
    pub noise: f64,
}

fn change_text(c: &Change) -> String {
    match c.interval {
        Some(i) => format!(
            "{:+.1}% [{:+.1}%, {:+.1}%]",
            100.0 * i.estimate,
            100.0 * i.lower,
            100.0 * i.upper
        ),
        None => format!("{:+.1}%", 100.0 * c.relative),
    }
}

/// Compares `a` and `b`, writing compare.html, compare.md and plots into `out`.
pub fn write(a: &Path, b: &Path, out: &Path, s: &Settings) -> Result<Vec<PathBuf>, CliError> {
    let (ra, rb) = (Run::read(a)?, Run::read(b)?);
    let cmp = compare_runs(&ra, &rb, s)?;
    let plot_dir = out.join("plots");
    std::fs::create_dir_all(&plot_dir)
        .map_err(|e| CliError::Input(format!("{}: {e}", plot_dir.display())))?;
    let mut doc = Document::new("specula compare: A vs B");
    doc.push(Block::List(vec![
        format!("A: {}", ra.describe()),
        format!("B: {}", rb.describe()),
        format!(
            "change = mean(B) / mean(A) - 1 per row group (repeats pooled); with repeats on both sides, a {:.0}% bootstrap interval ({} resamples, seed {}); a change counts only when the whole interval lies beyond +-{:.0}% (without repeats: when the change itself does)",
            100.0 * (1.0 - s.bootstrap.alpha),
            s.bootstrap.resamples,
            s.bootstrap.seed,
            100.0 * s.noise
        ),
        format!(
            "rows: {} matched groups; {} only in A; {} only in B",
            cmp.rows.len(),
            cmp.only_a.len(),
            cmp.only_b.len()
        ),
    ]));
    let count = |v: Verdict| cmp.rows.iter().filter(|r| r.verdict == v).count();
    doc.para(format!(
        "Verdicts (speedup for speculative rows, throughput for baselines): {} improved, {} regressed, {} within noise.",
        count(Verdict::Improved),
        count(Verdict::Regressed),
        count(Verdict::WithinNoise)
    ));
    let mut t = Table::new(&[
        "row",
        "verdict",
        "measure",
        "A",
        "B",
        "change",
        "measure verdict",
    ]);
    for r in &cmp.rows {
        for (i, c) in r.changes.iter().enumerate() {
            t.push(vec![
                if i == 0 {
                    r.label.clone()
                } else {
                    String::new()
                },
                if i == 0 {
                    r.verdict.words().into()
                } else {
                    String::new()
                },
                c.measure.to_string(),
                format!("{:.4} (n={})", c.a, c.n_a),
                format!("{:.4} (n={})", c.b, c.n_b),
                change_text(c),
                c.verdict.words().into(),
            ]);
        }
    }
    doc.heading(2, "Rows");
    doc.push(Block::Table(t));
    for (name, keys) in [("Only in A", &cmp.only_a), ("Only in B", &cmp.only_b)] {
        if !keys.is_empty() {
            doc.heading(2, name);
            doc.push(Block::List(keys.clone()));
        }
    }
    doc.heading(2, "Plots");
    if !cmp.rows.is_empty() {
        doc.push(Block::Figure(render(
            &plots::Scatter(&cmp.rows),
            &plot_dir,
            "plots",
        )?));
        doc.push(Block::Figure(render(
            &plots::Changes(&cmp.rows),
            &plot_dir,
            "plots",
        )?));
    }
    let mut written = Vec::new();
    for format in [&Html as &dyn Render, &Markdown] {
        let path = out.join(format!("compare.{}", format.extension()));
        std::fs::write(&path, format.render(&doc))
            .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
        written.push(path);
    }
    print!(
        "{}",
        Markdown.render(&doc).split("## Plots").next().unwrap_or("")
    );
    Ok(written)
}
