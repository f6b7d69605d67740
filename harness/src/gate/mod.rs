//! `specula gate`: a CI performance gate of a run against a baseline run
//! (docs/DESIGN.md, Gates).
//!
//! - [`check`]: one check, as numbers and as text;
//! - [`policy`]: what is checked and how strictly (TOML, with defaults);
//! - [`inputs`]: refusing unusable input (missing columns, other schemas, empty runs, unmatched rows);
//! - [`decision`]: deterministic measures exactly, speedup by a bootstrap interval;
//! - [`costs`]: instruction counts (costs.csv) within a small tolerance;
//! - [`gpu_spans`]: absolute CUDA-event step times per span, on GPU runs;
//! - [`pace`]: whether the machine ran the baselines at the same pace in both runs;
//! - [`summary`]: the Markdown summary for a CI job page.

pub mod check;
pub mod costs;
pub mod decision;
pub mod gpu_spans;
pub mod inputs;
pub mod pace;
pub mod policy;
pub mod summary;

pub use check::GateVerdict;
pub use decision::{decide, Decision};
pub use policy::{OnInconclusive, Policy};

use crate::doc::markdown::Markdown;
use crate::doc::Render;
use crate::run_folder::environment::{differences, Difference};
use crate::run_folder::{Run, RunFolderError};
use crate::Fault;
use check::{Check, Counts};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Why the gate cannot judge.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The policy file is unreadable or holds an unusable value.
    #[error("{}: {message}", path.display())]
    Policy {
        /// The policy file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A run cannot be read.
    #[error(transparent)]
    Run(#[from] RunFolderError),
    /// The runs cannot be judged against each other: other schemas, no
    /// positions, baseline rows without a match.
    #[error("{}: {message}", path.display())]
    Unjudgeable {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong, and what to do.
        message: String,
    },
}

impl GateError {
    /// A [`GateError::Unjudgeable`] naming `path`.
    pub fn unjudgeable(path: &Path, message: impl Into<String>) -> GateError {
        GateError::Unjudgeable {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    /// Whose fault it is: unusable input, whatever the cause.
    pub fn fault(&self) -> Fault {
        match self {
            GateError::Run(e) => e.fault(),
            GateError::Policy { .. } | GateError::Unjudgeable { .. } => Fault::Input,
        }
    }
}

/// A gate's judgement of one run against a baseline.
#[derive(Debug)]
pub struct Judgement {
    /// Every check.
    pub decision: Decision,
    /// Where the runs' build profile, CPU threads, CPU model or load differ.
    pub environment: Vec<Difference>,
    /// The summary for a CI job page.
    pub markdown: String,
}

impl Judgement {
    /// Whether a check regressed.
    pub fn regressed(&self) -> bool {
        self.decision.regressed()
    }

    /// The verdict: pass, regression or inconclusive.
    pub fn verdict(&self) -> GateVerdict {
        self.decision.verdict()
    }

    /// The judgement as `specula gate --json` prints it.
    pub fn report(&self) -> GateReport<'_> {
        GateReport {
            verdict: self.verdict(),
            counts: Counts::of(&self.decision.checks),
            checks: &self.decision.checks,
            notes: &self.decision.notes,
            environment: &self.environment,
        }
    }
}

/// What `specula gate --json` prints (docs/DESIGN.md, gate): one verdict,
/// the checks as numbers, the notes, and the environment warnings.
#[derive(Debug, Serialize)]
pub struct GateReport<'a> {
    /// `pass`, `regression` or `inconclusive` (exit 0, 1, or 3 unless the policy passes it).
    pub verdict: GateVerdict,
    /// Checks counted by status.
    pub counts: Counts,
    /// Every check, in the baseline's row order.
    pub checks: &'a [Check],
    /// Remarks: rows not in the baseline, flagged rows, timings not judged for pace.
    pub notes: &'a [String],
    /// Where the runs' build profile, CPU threads, CPU model or load differ.
    pub environment: &'a [Difference],
}

/// Reads both runs (see [`crate::run_folder::locate`] for what the paths may
/// name), checks that they can be judged against each other, and judges.
pub fn judge(baseline: &Path, current: &Path, policy: &Policy) -> Result<Judgement, GateError> {
    let b = Run::read(baseline)?;
    let c = Run::read(current)?;
    inputs::check(&b, &c, policy)?;
    let environment = differences(&b, &c, ["the baseline", "the current run"]);
    let mut decision = decide(&b, &c, policy, &environment);
    let (counts, notes) = costs::checks(&b, &c, policy)?;
    decision.checks.extend(counts);
    decision.notes.extend(notes);
    let markdown = Markdown.render(&summary::document(&b, &c, policy, &decision, &environment));
    Ok(Judgement {
        decision,
        environment,
        markdown,
    })
}
