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

use crate::doc::markdown::Markdown;
use crate::doc::{Block, Document, Render, Table};
use crate::report::plots::render;
use crate::report::{plot_dir, write_pages, ReportError};
use crate::run_folder::{Run, RunFolderError};
use crate::stats::{Bootstrap, Verdict};
use crate::Fault;
use matching::{compare_runs, Change};
use std::path::{Path, PathBuf};

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The settings are out of range.
    #[error("{0}")]
    Settings(String),
    /// A run cannot be read, or its pages not written.
    #[error(transparent)]
    Report(#[from] ReportError),
}

impl From<RunFolderError> for CompareError {
    fn from(e: RunFolderError) -> CompareError {
        CompareError::Report(ReportError::Run(e))
    }
}

impl CompareError {
    /// Whose fault it is.
    pub fn fault(&self) -> Fault {
        match self {
            CompareError::Settings(_) => Fault::Input,
            CompareError::Report(e) => e.fault(),
        }
    }
}

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

impl Settings {
    /// Checks the ranges: `alpha` in (0, 1), `noise` at least 0.
    pub fn check(&self) -> Result<(), CompareError> {
        if self.bootstrap.alpha > 0.0 && self.bootstrap.alpha < 1.0 && self.noise >= 0.0 {
            return Ok(());
        }
        Err(CompareError::Settings(
            "--alpha must be in (0, 1) and --noise-threshold >= 0".into(),
        ))
    }
}

/// Compares `a` and `b`, writing compare.html, compare.md and plots into `out`.
pub fn write(a: &Path, b: &Path, out: &Path, s: &Settings) -> Result<Compared, CompareError> {
    s.check()?;
    let (ra, rb) = (Run::read(a)?, Run::read(b)?);
    let cmp = compare_runs(&ra, &rb, s)?;
    let plot_dir = plot_dir(out)?;
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
        let scatter = render(&plots::Scatter(&cmp.rows), &plot_dir, "plots");
        doc.push(Block::Figure(scatter.map_err(ReportError::from)?));
        let changes = render(&plots::Changes(&cmp.rows), &plot_dir, "plots");
        doc.push(Block::Figure(changes.map_err(ReportError::from)?));
    }
    let files = write_pages(&doc, out, "compare")?;
    let markdown = Markdown.render(&doc);
    let table = markdown.split("## Plots").next().unwrap_or("").to_string();
    Ok(Compared { files, table })
}

/// What a comparison wrote, and its table as Markdown (the page without its plots).
#[derive(Debug)]
pub struct Compared {
    /// compare.html and compare.md.
    pub files: Vec<PathBuf>,
    /// The summary and the rows' table.
    pub table: String,
}
