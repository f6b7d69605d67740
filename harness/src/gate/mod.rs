//! `specula gate`: a CI performance gate of a run against a baseline run
//! (docs/DESIGN.md, Gates).
//!
//! - [`policy`]: what is checked and how strictly (TOML, with defaults);
//! - [`inputs`]: refusing unusable input (missing columns, other schemas, empty runs, unmatched rows);
//! - [`decision`]: deterministic measures exactly, speedup by a bootstrap interval;
//! - [`pace`]: whether the machine ran the baselines at the same pace in both runs;
//! - [`summary`]: the Markdown summary for a CI job page.

pub mod decision;
pub mod inputs;
pub mod pace;
pub mod policy;
pub mod summary;

pub use decision::{decide, Decision};
pub use policy::Policy;

use crate::doc::markdown::Markdown;
use crate::doc::Render;
use crate::run_folder::{Run, RunFolderError};
use crate::Fault;
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
    /// The summary for a CI job page.
    pub markdown: String,
}

impl Judgement {
    /// Whether a check regressed.
    pub fn regressed(&self) -> bool {
        self.decision.regressed()
    }
}

/// Reads both runs (see [`crate::run_folder::locate`] for what the paths may
/// name), checks that they can be judged against each other, and judges.
pub fn judge(baseline: &Path, current: &Path, policy: &Policy) -> Result<Judgement, GateError> {
    let b = Run::read(baseline)?;
    let c = Run::read(current)?;
    inputs::check(&b, &c, policy)?;
    let decision = decide(&b, &c, policy);
    let markdown = Markdown.render(&summary::document(&b, &c, policy, &decision));
    Ok(Judgement { decision, markdown })
}
