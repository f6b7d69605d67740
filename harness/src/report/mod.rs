//! `specula report RUN_DIR`: plots (SVG and PNG), one self-contained
//! report.html (inline SVG, tables), a report.md and the run's
//! summary.json ([`crate::run_folder::summary`]), with the acceptance
//! analysis of [`crate::analyze`] and rows flagged `likely_config_error`
//! set apart as configuration errors rather than results.
//!
//! - [`data`]: the rows as the report sees them;
//! - [`plots`]: one [`plots::Chart`] per plot;
//! - [`sections`]: the document's tables and the analysis section.

pub mod data;
pub mod plots;
pub mod sections;
pub mod tiers;

use crate::analyze::{analyze, RowAnalysis};
use crate::doc::html::Html;
use crate::doc::markdown::Markdown;
use crate::doc::{Block, Document, Render};
use crate::run_folder::row_key::without_config;
use crate::run_folder::summary::Summary;
use crate::run_folder::{Run, RunFolderError};
use crate::Fault;
use data::{views, RowView};
use plots::kernels::{Bar, Kernels, SPANS};
use plots::render;
pub use plots::PlotError;
use std::path::{Path, PathBuf};

/// Why a report (or a comparison's pages) could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The run cannot be read.
    #[error(transparent)]
    Run(#[from] RunFolderError),
    /// A plot could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A page or folder could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

impl ReportError {
    /// Whose fault it is: an unreadable run is unusable input, a failed write a failure.
    pub fn fault(&self) -> Fault {
        match self {
            ReportError::Run(e) => e.fault(),
            ReportError::Plot(_) | ReportError::Write { .. } => Fault::Failed,
        }
    }
}

/// Writes `doc` as `out/<stem>.html` and `out/<stem>.md`; returns both paths.
pub fn write_pages(doc: &Document, out: &Path, stem: &str) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    for format in [&Html as &dyn Render, &Markdown] {
        let path = out.join(format!("{stem}.{}", format.extension()));
        std::fs::write(&path, format.render(doc)).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// Creates `out/plots` (and `out`).
pub fn plot_dir(out: &Path) -> Result<PathBuf, ReportError> {
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir).map_err(|source| ReportError::Write {
        path: dir.clone(),
        source,
    })?;
    Ok(dir)
}

/// The columns a report needs.
const COLUMNS: [&str; 9] = [
    "row_key",
    "steps",
    "topk",
    "batch_size",
    "prompt_set",
    "temperature",
    "tau",
    "throughput_tok_s",
    "repeat",
];

/// Step costs of one baseline group (the first: smallest batch, first prompt set, repeat 0).
fn kernel_bars(rows: &[&RowView], run: &Run, an: &[RowAnalysis]) -> Kernels {
    let Some(first) = rows.iter().min_by_key(|r| r.batch) else {
        return Kernels {
            bars: Vec::new(),
            scope: String::new(),
        };
    };
    let scope = format!(
        "{}, batch {}, prompt set {}, T={}, repeat {}",
        first.model, first.batch, first.prompt_set, first.temperature, first.repeat
    );
    let g = without_config(&first.key);
    let mut bars = Vec::new();
    for r in rows.iter().filter(|r| without_config(&r.key) == g) {
        let Some(spans) = run.spans.get(&r.key) else {
            continue;
        };
        let steps = spans.get("verify").map_or(0.0, |s| s.count);
        if steps <= 0.0 {
            continue;
        }
        let mut us = [0.0; 6];
        for (i, s) in SPANS.iter().enumerate() {
            us[i] = spans.get(s.name()).map_or(0.0, |v| v.total_us / steps);
        }
        let a = an.iter().find(|a| a.row_key == r.key);
        bars.push(Bar {
            label: r.config.clone(),
            us,
            tau: a.and_then(|a| a.break_even_tau.map(|be| (a.tau, be))),
            baseline_step: a.and_then(|a| a.baseline_step_us),
        });
    }
    Kernels { bars, scope }
}

/// Writes the report of `run_dir` into `out`; returns the files written.
pub fn write(run_dir: &Path, out: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let run = Run::read(run_dir)?;
    run.require(&COLUMNS)?;
    let analysis = analyze(&run)?;
    let all = views(&run);
    let results: Vec<&RowView> = all.iter().filter(|r| !r.flagged).collect();
    let speculative: Vec<&RowView> = results.iter().copied().filter(|r| r.steps > 0).collect();
    let plot_dir = plot_dir(out)?;
    let mut figures = vec![render(
        &plots::throughput::Throughput(&results),
        &plot_dir,
        "plots",
    )?];
    let mut missing = Vec::new();
    if speculative.is_empty() {
        missing.push(
            "no speculative rows that are results: no tau, acceptance or speedup plots".to_string(),
        );
    } else {
        figures.push(render(
            &plots::tau_spread::TauSpread(&speculative),
            &plot_dir,
            "plots",
        )?);
        let curves = plots::positions::Positions {
            rows: &speculative,
            positions: &run.positions,
        };
        if !curves.curves().is_empty() {
            figures.push(render(&curves, &plot_dir, "plots")?);
        }
        figures.push(render(
            &plots::histogram::TauHistogram(&speculative),
            &plot_dir,
            "plots",
        )?);
    }
    let kernels = kernel_bars(&results, &run, &analysis);
    if kernels.bars.is_empty() {
        missing.push("no span timings (spans off): no per-span breakdown".to_string());
    } else {
        figures.push(render(&kernels, &plot_dir, "plots")?);
    }
    if speculative.iter().any(|r| r.speedup.is_some()) {
        figures.push(render(
            &plots::heatmap::Heatmap(&speculative),
            &plot_dir,
            "plots",
        )?);
    }
    let mut doc = Document::new(format!("specula report: {}", run.rows[0].text("run_id")));
    sections::overview(&mut doc, &run, &all);
    sections::results(&mut doc, &all);
    sections::analysis(&mut doc, &analysis);
    let tiers_view = crate::analyze::context_tiers::context_tiers(&run)?;
    tiers::context_tiers(&mut doc, &tiers_view);
    doc.heading(2, "Plots");
    if !missing.is_empty() {
        doc.push(Block::List(missing));
    }
    for f in figures {
        doc.push(Block::Figure(f));
    }
    let mut written = write_pages(&doc, out, "report")?;
    written.push(Summary::of_run(&run).with_serving(&run.dir).write(out)?);
    Ok(written)
}
