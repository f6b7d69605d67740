//! Which mapping is a live server feeding its draft? The first-position
//! acceptance a_1 that a served sweep measured (sglang or vllm rows, greedy)
//! is set against the audit's teacher-forced first-step accuracy of each
//! capture mapping on generated tokens, which is what a_1 estimates
//! (docs/DESIGN.md 5.4).

use crate::run_folder::read::Run;
use crate::run_folder::RunFolderError;
use crate::Fault;
use specula_engine::audit::{Candidate, MappingAudit};
use std::path::{Path, PathBuf};

/// Why a run could not be probed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The run folder is unreadable.
    #[error(transparent)]
    RunFolder(#[from] RunFolderError),
    /// The run has no row to probe.
    #[error("{0}: no sglang or vllm row at temperature 0 with per-position acceptance (a_1) to probe; sweep a served backend with steps >= 1")]
    NoServedRows(PathBuf),
}

impl ProbeError {
    /// Whose fault it is.
    pub fn fault(&self) -> Fault {
        match self {
            ProbeError::RunFolder(e) => e.fault(),
            ProbeError::NoServedRows(_) => Fault::Input,
        }
    }
}

/// One mapping and the a_1 it predicts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Predicted {
    /// Capture points.
    pub points: Vec<usize>,
    /// Where the mapping comes from.
    pub label: String,
    /// The first-step accuracy on generated tokens: the a_1 it predicts.
    pub a1: f64,
}

impl From<&Candidate> for Predicted {
    fn from(c: &Candidate) -> Predicted {
        Predicted {
            points: c.points.clone(),
            label: c.label.clone(),
            a1: c.continuation_accuracy,
        }
    }
}

/// What a served row says about the mapping its server feeds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeRow {
    /// The row probed.
    pub row_key: String,
    /// Its backend (`sglang`, `vllm`).
    pub backend: String,
    /// The a_1 it measured.
    pub a1: f64,
    /// The configured mapping and its prediction.
    pub configured: Predicted,
    /// Whether the measured a_1 is within the tolerance of the configured mapping's prediction.
    pub feeds_configured: bool,
    /// The mapping whose prediction is nearest the measured a_1: the one the server most likely feeds.
    pub closest: Predicted,
    /// Every mapping within the tolerance, nearest first.
    pub consistent: Vec<Predicted>,
}

/// Probes every greedy sglang or vllm row of the run in `dir` that has a_1,
/// against `audit`'s predictions; a prediction within `tolerance` of the
/// measured a_1 is consistent with it.
pub fn probe_run(
    dir: &Path,
    audit: &MappingAudit,
    tolerance: f64,
) -> Result<Vec<ProbeRow>, ProbeError> {
    let run = Run::read(dir)?;
    let configured = Predicted::from(&audit.configured);
    let mut out = Vec::new();
    for r in &run.rows {
        let backend = r.text("backend");
        let a1 = run.positions.get(r.key()).and_then(|p| p.first().copied());
        let (Some(a1), true, true) = (
            a1,
            matches!(backend, "sglang" | "vllm"),
            r.num("temperature") == Some(0.0),
        ) else {
            continue;
        };
        let mut by_distance: Vec<Predicted> =
            audit.candidates.iter().map(Predicted::from).collect();
        by_distance.sort_by(|a, b| (a.a1 - a1).abs().total_cmp(&(b.a1 - a1).abs()));
        out.push(ProbeRow {
            row_key: r.key().to_string(),
            backend: backend.to_string(),
            a1,
            feeds_configured: (configured.a1 - a1).abs() <= tolerance,
            closest: by_distance[0].clone(),
            consistent: by_distance
                .into_iter()
                .filter(|p| (p.a1 - a1).abs() <= tolerance)
                .collect(),
            configured: configured.clone(),
        });
    }
    if out.is_empty() {
        return Err(ProbeError::NoServedRows(run.dir));
    }
    Ok(out)
}
