//! `specula compare RUN_A RUN_B`: rows matched by their identity columns
//! (everything but run id, git revision, start time, machine and device),
//! repeats pooled per row group; per measure the change from A to B with a
//! bootstrap interval where both sides have repeats, and a verdict per row
//! (improved, regressed, within noise); A-vs-B plots; warnings where the
//! runs' build profile, threads, CPU or load differ; the same as JSON
//! ([`CompareReport`]). Runs without one matched row group are refused.
//!
//! - [`matching`]: the row groups of both runs and their changes;
//! - [`plots`]: the A-vs-B plots.

pub mod matching;
pub mod plots;

use crate::doc::markdown::Markdown;
use crate::doc::{Block, Document, Render, Table};
use crate::report::plots::render;
use crate::report::{plot_dir, write_pages, ReportError};
use crate::run_folder::environment::{differences, Difference};
use crate::run_folder::{Run, RunFolderError};
use crate::stats::{Bootstrap, Verdict};
use crate::Fault;
use matching::{compare_runs, Change, Comparison};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The settings are out of range.
    #[error("{0}")]
    Settings(String),
    /// No row group of one run matches one of the other: nothing to compare.
    #[error("{}: no row group matches one of {} ({only_a} only in A, {only_b} only in B): compare runs of the same spec", b.display(), a.display())]
    NothingMatched {
        /// Run A's runs.csv.
        a: PathBuf,
        /// Run B's runs.csv.
        b: PathBuf,
        /// Row groups only in A.
        only_a: usize,
        /// Row groups only in B.
        only_b: usize,
    },
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
            CompareError::Settings(_) | CompareError::NothingMatched { .. } => Fault::Input,
            CompareError::Report(e) => e.fault(),
        }
    }
}

/// How changes are judged.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Settings {
    /// Bootstrap settings (significance level, resamples, seed).
    pub bootstrap: Bootstrap,
    /// A relative change within this is noise.
    #[serde(rename = "noise_threshold")]
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
    if cmp.rows.is_empty() {
        return Err(CompareError::NothingMatched {
            a: ra.runs_path.clone(),
            b: rb.runs_path.clone(),
            only_a: cmp.only_a.len(),
            only_b: cmp.only_b.len(),
        });
    }
    let environment = differences(&ra, &rb, ["A", "B"]);
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
    if !environment.is_empty() {
        doc.heading(2, "Warnings");
        doc.push(Block::List(
            environment
                .iter()
                .map(|d| format!("warning: {d}"))
                .collect(),
        ));
    }
    let counts = Counts::of(&cmp);
    doc.para(format!(
        "Verdicts (speedup for speculative rows, throughput for baselines): {} improved, {} regressed, {} within noise.",
        counts.improved, counts.regressed, counts.within_noise
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
        let (rows, settings) = (&cmp.rows, s);
        let scatter = render(&plots::Scatter { rows, settings }, &plot_dir, "plots");
        doc.push(Block::Figure(scatter.map_err(ReportError::from)?));
        let changes = render(&plots::Changes { rows, settings }, &plot_dir, "plots");
        doc.push(Block::Figure(changes.map_err(ReportError::from)?));
    }
    let files = write_pages(&doc, out, "compare")?;
    let markdown = Markdown.render(&doc);
    let table = markdown.split("## Plots").next().unwrap_or("").to_string();
    let report = CompareReport {
        a: RunRef::of(&ra),
        b: RunRef::of(&rb),
        settings: *s,
        counts,
        environment,
        rows: cmp.rows,
        only_a: cmp.only_a,
        only_b: cmp.only_b,
        files: files.clone(),
    };
    Ok(Compared {
        files,
        table,
        report,
    })
}

/// What a comparison wrote, its table as Markdown (the page without its
/// plots), and the whole comparison as data.
#[derive(Debug)]
pub struct Compared {
    /// compare.html and compare.md.
    pub files: Vec<PathBuf>,
    /// The summary and the rows' table.
    pub table: String,
    /// The comparison (`specula compare --json` prints it).
    pub report: CompareReport,
}

/// A compared run, as `--json` names it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    /// Its runs.csv.
    pub runs_csv: PathBuf,
    /// The run id of its first row.
    pub run_id: String,
    /// The git revision of its first row.
    pub git_rev: String,
}

impl RunRef {
    fn of(run: &Run) -> RunRef {
        let first = &run.rows[0];
        RunRef {
            runs_csv: run.runs_path.clone(),
            run_id: first.text("run_id").to_string(),
            git_rev: first.text("git_rev").to_string(),
        }
    }
}

/// Row verdicts counted.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Counts {
    /// Rows improved.
    pub improved: usize,
    /// Rows regressed.
    pub regressed: usize,
    /// Rows within noise.
    pub within_noise: usize,
}

impl Counts {
    fn of(cmp: &Comparison) -> Counts {
        let count = |v: Verdict| cmp.rows.iter().filter(|r| r.verdict == v).count();
        Counts {
            improved: count(Verdict::Improved),
            regressed: count(Verdict::Regressed),
            within_noise: count(Verdict::WithinNoise),
        }
    }
}

/// The comparison as `specula compare --json` prints it (docs/DESIGN.md, compare).
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// Run A, the reference.
    pub a: RunRef,
    /// Run B.
    pub b: RunRef,
    /// How changes were judged.
    pub settings: Settings,
    /// Row verdicts counted.
    pub counts: Counts,
    /// Where the runs' build profile, CPU threads, CPU model or load differ (timings not comparable).
    pub environment: Vec<Difference>,
    /// Matched row groups, in A's order.
    pub rows: Vec<matching::RowChange>,
    /// Row groups only in A.
    pub only_a: Vec<String>,
    /// Row groups only in B.
    pub only_b: Vec<String>,
    /// The pages written.
    pub files: Vec<PathBuf>,
}
