//! Aux hidden-state capture: which residual streams of the target the draft
//! receives, under the layer-id conventions found in serving engines.
//!
//! A *capture point* `p` is the residual stream entering decoder layer `p`
//! (hidden + residual, before the layer's input norm); `p = 0` is the
//! embedding output. This is index `p` of Hugging Face's
//! `output_hidden_states`. EAGLE-3 aux states are points 0 to L-1. Point L
//! is the stream after the last layer, after the final norm (Hugging Face's
//! `hidden_states[L]`, the vector the LM head reads): never an EAGLE-3 aux
//! state, it is what an EAGLE-1/2 draft is fed ("the last hidden state").

use crate::config::DraftKind;
use crate::error::{EngineError, Result};
use std::fmt;

/// How configured layer ids map to capture points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IdConvention {
    /// SGLang before PR #25454: every id `l` captures point `l + 1` (the output of layer `l`).
    Legacy,
    /// SGLang after PR #25454: shift by one only when the first id is 1, else use the ids as given.
    #[default]
    Boundary,
}

impl IdConvention {
    /// All conventions, for audits and help texts.
    pub const ALL: [IdConvention; 2] = [IdConvention::Legacy, IdConvention::Boundary];

    /// The convention's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            IdConvention::Legacy => "legacy",
            IdConvention::Boundary => "boundary",
        }
    }
}

impl std::str::FromStr for IdConvention {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<IdConvention> {
        match s {
            "legacy" => Ok(IdConvention::Legacy),
            "boundary" => Ok(IdConvention::Boundary),
            other => Err(EngineError::setting(
                "id convention",
                format!("{other:?} (expected legacy or boundary)"),
            )),
        }
    }
}

/// Where the capture points came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureSource {
    /// The engine default `[2, L/2, L-3]` (the draft names no ids).
    Default,
    /// `eagle_config.eagle_aux_hidden_state_layer_ids` of the draft.
    DraftConfig,
    /// An explicit override (CLI `--aux-layers` or a sweep spec).
    Override,
    /// The target's last hidden state, after its final norm: the one
    /// stream an EAGLE-1/2 draft (or a draft served as EAGLE) is fed.
    LastHidden,
}

impl fmt::Display for CaptureSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CaptureSource::Default => "the engine default",
            CaptureSource::DraftConfig => "from the draft's config",
            CaptureSource::Override => "given explicitly",
            CaptureSource::LastHidden => "the target's last hidden state",
        })
    }
}

/// The resolved capture of one run: the ids as configured and the points they mean.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuxCapture {
    /// The ids as configured (empty for the default).
    pub ids: Vec<i64>,
    /// How they were read.
    pub convention: IdConvention,
    /// Where they came from.
    pub source: CaptureSource,
    /// The residual streams captured, in the order they are concatenated.
    pub points: Vec<usize>,
}

/// The default capture points `[2, L/2, L-3]` for `layers = L`.
pub fn default_points(layers: usize) -> Vec<usize> {
    vec![2, layers / 2, layers.saturating_sub(3)]
}

/// Maps configured ids to capture points under `convention`; `-1` is the
/// embedding output. Points must be distinct from out-of-range: each must be
/// below `layers`.
pub fn resolve_ids(ids: &[i64], convention: IdConvention, layers: usize) -> Result<Vec<usize>> {
    if ids.is_empty() {
        return Err(EngineError::setting("aux layer ids", "empty list"));
    }
    let shift = match convention {
        IdConvention::Legacy => 1,
        IdConvention::Boundary => i64::from(ids[0] == 1),
    };
    ids.iter()
        .map(|&id| {
            let point = if id == -1 { 0 } else { id + shift };
            if id < -1 || point < 0 || point as usize >= layers {
                Err(EngineError::setting(
                    "aux layer ids",
                    format!(
                        "id {id} resolves to capture point {point} under the {} convention, outside 0..{} (the target has {layers} layers; the stream after the last layer is never an aux state)",
                        convention.name(),
                        layers - 1
                    ),
                ))
            } else {
                Ok(point as usize)
            }
        })
        .collect()
}

/// How many target streams an EAGLE-3 draft consumes: its `fc` folds
/// `AUX_STATES x target hidden` values into one hidden vector.
pub const AUX_STATES: usize = 3;

/// How a run chooses the streams a draft is fed: ids overriding the draft
/// config's (`--aux-layers`, a sweep's `aux_layers`), the id convention and
/// the algorithm the draft is served with. Two rows with equal choices
/// share one drafter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CaptureChoice {
    /// Ids that override the draft config's.
    pub override_ids: Option<Vec<i64>>,
    /// How ids map to capture points.
    pub convention: IdConvention,
    /// The algorithm the draft is served with (SGLang's
    /// `--speculative-algorithm EAGLE` or `EAGLE3`); `None` serves it as
    /// its own generation. An EAGLE-3 draft served as EAGLE is fed the
    /// target's last hidden state in place of its aux states and skips
    /// `fc`, as SGLang does.
    pub served_as: Option<DraftKind>,
}

impl CaptureChoice {
    /// The capture a draft of generation `kind` whose config names
    /// `draft_ids` gets on a target of `layers` layers, served as
    /// [`CaptureChoice::served_as`]: the last hidden state (point `layers`)
    /// when served as EAGLE, else [`CaptureChoice::resolve`].
    pub fn resolve_for(
        &self,
        kind: DraftKind,
        draft_ids: Option<&[i64]>,
        layers: usize,
    ) -> Result<AuxCapture> {
        match (self.served_as.unwrap_or(kind), kind) {
            (DraftKind::Eagle3, DraftKind::Eagle3) => self.resolve(draft_ids, layers),
            (DraftKind::Eagle3, DraftKind::Eagle) => Err(EngineError::setting(
                "served as",
                "an EAGLE-1/2 draft cannot be served as EAGLE-3: its fc takes [embedding, last hidden state], not three aux states",
            )),
            (DraftKind::Eagle, _) if self.override_ids.is_some() => Err(EngineError::setting(
                "aux layer ids",
                "a draft served as EAGLE (EAGLE-1/2) is fed the target's last hidden state; aux layer ids do not apply",
            )),
            (DraftKind::Eagle, _) => Ok(AuxCapture {
                ids: Vec::new(),
                convention: self.convention,
                source: CaptureSource::LastHidden,
                points: vec![layers],
            }),
        }
    }

    /// The one resolver of the tree: the capture a draft whose config names
    /// `draft_ids` gets on a target of `layers` layers. An override wins over
    /// the draft's ids, which win over the default `[2, L/2, L-3]`; the
    /// result has exactly [`AUX_STATES`] points.
    pub fn resolve(&self, draft_ids: Option<&[i64]>, layers: usize) -> Result<AuxCapture> {
        let (ids, source) = match (&self.override_ids, draft_ids) {
            (Some(ids), _) => (ids.clone(), CaptureSource::Override),
            (None, Some(ids)) => (ids.to_vec(), CaptureSource::DraftConfig),
            (None, None) => {
                if layers < 4 {
                    return Err(EngineError::setting("aux layer ids", format!("the default [2, L/2, L-3] needs at least 4 target layers, the target has {layers}")));
                }
                return Ok(AuxCapture {
                    ids: Vec::new(),
                    convention: self.convention,
                    source: CaptureSource::Default,
                    points: default_points(layers),
                });
            }
        };
        let points = resolve_ids(&ids, self.convention, layers)?;
        let capture = AuxCapture {
            ids,
            convention: self.convention,
            source,
            points,
        };
        capture.check_count()?;
        Ok(capture)
    }
}

impl AuxCapture {
    /// Refuses a capture that an EAGLE-3 `fc` cannot consume (not
    /// [`AUX_STATES`] points; the last hidden state alone is one stream).
    pub fn check_count(&self) -> Result<()> {
        let wanted = match self.source {
            CaptureSource::LastHidden => 1,
            _ => AUX_STATES,
        };
        if self.points.len() == wanted {
            return Ok(());
        }
        Err(EngineError::setting(
            "aux layer ids",
            format!(
                "{:?} gives {} capture points; an EAGLE-3 fc consumes exactly {AUX_STATES}",
                self.ids,
                self.points.len()
            ),
        ))
    }

    /// The points as `a;b;c` (`e` for the embedding output is written as 0).
    pub fn points_label(&self) -> String {
        self.points
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(";")
    }
}

impl fmt::Display for AuxCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .points
            .iter()
            .map(|&p| {
                if p == 0 {
                    "embeddings".to_string()
                } else {
                    format!("entering layer {p}")
                }
            })
            .collect();
        match self.source {
            CaptureSource::Default => write!(f, "default [2, L/2, L-3] -> [{}]", names.join(", ")),
            CaptureSource::LastHidden => {
                f.write_str("the target's last hidden state (after its final norm)")
            }
            _ => {
                let ids: Vec<String> = self.ids.iter().map(i64::to_string).collect();
                write!(
                    f,
                    "ids [{}] ({}, read as {}) -> [{}]",
                    ids.join(", "),
                    self.source,
                    self.convention.name(),
                    names.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `specula generate` printed `capture: ids [2, 4, 5]
    /// (boundary, DraftConfig) -> ...`, Rust's Debug text of the source.
    #[test]
    fn a_capture_is_described_in_words_not_debug_text() {
        let c = AuxCapture {
            ids: vec![-1, 2, 4],
            convention: IdConvention::Boundary,
            source: CaptureSource::DraftConfig,
            points: vec![0, 2, 4],
        };
        assert_eq!(
            c.to_string(),
            "ids [-1, 2, 4] (from the draft's config, read as boundary) -> [embeddings, entering layer 2, entering layer 4]"
        );
    }
}
