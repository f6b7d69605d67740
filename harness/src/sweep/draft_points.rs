//! One model's draft configs: each `[[drafts]]` entry's lists crossed
//! (method x steps x topk x num_draft_tokens), every combination resolved to
//! the capture it is fed, or skipped with its reason (never dropped).

use super::grid::{DraftPoint, ModelInfo};
use super::spec::{DraftSpec, SweepSpec};
use super::SweepError;
use crate::remote::{methods, EngineKind};
use crate::run_folder::row_key::{config_label, sanitize};
use crate::run_folder::SkippedConfig;
use specula_engine::capture::{CaptureChoice, IdConvention};
use specula_engine::config::{DraftKind, TargetConfig};
use specula_engine::speculative::SpeculativeConfig;

/// What a model's config files say that its draft configs depend on.
pub struct ModelDrafts<'a> {
    /// The model pair.
    pub info: &'a ModelInfo,
    /// The target's config, when it is on this machine.
    pub target: Option<&'a TargetConfig>,
    /// Whether the capture points can be resolved here (target and draft configs at hand).
    pub capture_known: bool,
    /// The draft's generation (EAGLE-3 when unknown).
    pub draft_kind: DraftKind,
    /// `None`: no draft; `Some(ids)`: the draft's own aux-layer ids, if its config names them.
    pub draft_ids: Option<Option<Vec<i64>>>,
}

/// A model's draft configs and the ones skipped.
#[derive(Default)]
pub struct Expanded {
    /// The configs that run, in spec order.
    pub points: Vec<DraftPoint>,
    /// The configs that do not, with the reason.
    pub skipped: Vec<SkippedConfig>,
    /// How many of `skipped` cannot run as written (see [`super::grid::Grid::refused`]).
    pub refused: usize,
}

/// One combination of a `[[drafts]]` entry's lists.
struct Combo<'a> {
    d: &'a DraftSpec,
    convention: IdConvention,
    served_as: Option<DraftKind>,
    method: Option<&'a str>,
    steps: usize,
    topk: usize,
    ndt: usize,
}

impl Combo<'_> {
    /// The config as written, for a skipped config's line.
    fn written(&self) -> String {
        let mut w = format!(
            "steps={} topk={} num_draft_tokens={}",
            self.steps, self.topk, self.ndt
        );
        if let Some(ids) = &self.d.aux_layers {
            w.push_str(&format!(" aux_layers={ids:?}"));
        }
        if self.d.id_convention.is_some() {
            w.push_str(&format!(" id_convention={}", self.convention.name()));
        }
        if let Some(s) = &self.d.served_as {
            w.push_str(&format!(" served_as={s}"));
        }
        if let Some(m) = self.method {
            w.push_str(&format!(" method={m}"));
        }
        w
    }

    /// The config's part of the row key (`-<method>` appended when named).
    fn label(&self, capture: &CaptureChoice) -> String {
        let base = config_label(self.steps, self.topk, self.ndt, capture);
        match self.method {
            Some(m) => format!("{base}-{}", sanitize(&m.to_ascii_lowercase())),
            None => base,
        }
    }
}

/// Why a combination does not run; `true`: it cannot run as written.
type Skip = (String, bool);

/// The draft point of one combination, or why it is skipped.
fn point(
    c: &Combo,
    backend: EngineKind,
    m: &ModelDrafts,
    earlier: &[DraftPoint],
) -> Result<DraftPoint, Skip> {
    if c.steps == 0 {
        let why = "steps = 0 is the baseline, which runs in every group anyway";
        return Err((why.into(), false));
    }
    let sc = SpeculativeConfig::new(c.steps, c.topk, c.ndt).map_err(|e| (e.to_string(), true))?;
    let lookup = c.method.is_some_and(methods::needs_no_draft);
    let none = None;
    let Some(ids) = m.draft_ids.as_ref().or(lookup.then_some(&none)) else {
        let why = format!(
            "model `{}` has no `draft`; only its baselines run",
            m.info.name
        );
        return Err((why, false));
    };
    // In process, `method = "eagle"`/`"eagle3"` is `served_as`; served as its
    // own generation is the same config as not saying so.
    let by_method = match (backend, c.method) {
        (EngineKind::Engine, Some("eagle")) => Some(DraftKind::Eagle),
        (EngineKind::Engine, Some("eagle3")) => Some(DraftKind::Eagle3),
        _ => None,
    };
    let capture = CaptureChoice {
        override_ids: c.d.aux_layers.clone(),
        convention: c.convention,
        served_as: c.served_as.or(by_method).filter(|k| *k != m.draft_kind),
    };
    let method = c.method.map(str::to_string);
    // Resolved only where the configs are at hand (a served model may not be).
    let resolved = match (m.target, m.capture_known, lookup) {
        (Some(target), true, false) => Some(
            capture
                .resolve_for(m.draft_kind, ids.as_deref(), target.num_hidden_layers)
                .map_err(|e| (e.to_string(), true))?
                .points_label(),
        ),
        _ => None,
    };
    let duplicate = earlier
        .iter()
        .any(|p| p.speculative == sc && p.capture == capture && p.method == method);
    if duplicate && resolved.is_some() {
        return Err(("duplicate of an earlier draft config".into(), false));
    }
    Ok(DraftPoint {
        speculative: sc,
        label: c.label(&capture),
        capture,
        aux_points: resolved.unwrap_or_default(),
        method,
    })
}

/// Expands every `[[drafts]]` entry of `spec` for the model `m`.
pub fn expand_drafts(spec: &SweepSpec, m: &ModelDrafts) -> Result<Expanded, SweepError> {
    let mut out = Expanded::default();
    for d in &spec.drafts {
        let d = d.get_ref();
        let convention = d.convention().map_err(SweepError::Input)?;
        let served_as = d.served_as().map_err(SweepError::Input)?;
        let methods: Vec<Option<String>> = match &d.method {
            None => vec![None],
            Some(list) => list
                .0
                .iter()
                .map(|w| methods::resolve(spec.backend, w).map(Some))
                .collect::<Result<_, _>>()
                .map_err(SweepError::Input)?,
        };
        for method in &methods {
            for &steps in &d.steps.0 {
                for &topk in &d.topk.0 {
                    let ndts = match &d.num_draft_tokens {
                        Some(n) => n.0.clone(),
                        None => vec![steps * topk + 1],
                    };
                    for ndt in ndts {
                        let c = Combo {
                            d,
                            convention,
                            served_as,
                            method: method.as_deref(),
                            steps,
                            topk,
                            ndt,
                        };
                        match point(&c, spec.backend, m, &out.points) {
                            Ok(p) => out.points.push(p),
                            Err((reason, cannot_run)) => {
                                out.refused += usize::from(cannot_run);
                                out.skipped.push(SkippedConfig {
                                    model: m.info.name.clone(),
                                    config: c.written(),
                                    reason,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}
