//! What each serving or training engine would feed a draft, read from the
//! draft's `config.json` the way that engine reads it (docs/DESIGN.md 5.3):
//! where it looks for the ids, how it maps them to capture points, and what
//! it falls back to.

use super::mapping::{Candidate, MappingAudit};
use crate::capture::{default_points, resolve_ids, IdConvention, AUX_STATES};
use serde_json::Value;

/// An engine (and version) that reads draft layer ids its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// SGLang after PR #25454: `eagle_config` ids, shifted by one only when the first is 1.
    SglangBoundary,
    /// SGLang before PR #25454: `eagle_config` ids, every id shifted by one.
    SglangLegacy,
    /// vLLM: the top-level ids (else `eagle_config.layer_ids`), used as boundaries, never shifted.
    Vllm,
    /// SpecForge's Hugging Face training capture: id `l` is the output of layer `l`.
    SpecForge,
}

impl Engine {
    /// Every engine, in the order the audit prints them.
    pub const ALL: [Engine; 4] = [
        Engine::SglangBoundary,
        Engine::SglangLegacy,
        Engine::Vllm,
        Engine::SpecForge,
    ];

    /// The engine and version in words.
    pub fn name(self) -> &'static str {
        match self {
            Engine::SglangBoundary => "SGLang (after PR #25454)",
            Engine::SglangLegacy => "SGLang (before PR #25454)",
            Engine::Vllm => "vLLM",
            Engine::SpecForge => "SpecForge (training capture)",
        }
    }
}

/// What one engine feeds the draft.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EngineFeed {
    /// The engine.
    pub engine: Engine,
    /// The ids it reads (`None`: it finds none and uses its default).
    pub ids: Option<Vec<i64>>,
    /// Where it reads them from, in words.
    pub ids_from: String,
    /// The capture points it feeds, when it feeds the three an EAGLE-3 fc takes.
    pub points: Option<Vec<usize>>,
    /// Why it feeds something else, when it does (ids it drops or cannot map).
    pub problem: Option<String>,
}

fn ids_at(raw: &Value, pointer: &str) -> Option<Vec<i64>> {
    let ids: Vec<i64> = raw
        .pointer(pointer)?
        .as_array()?
        .iter()
        .map(Value::as_i64)
        .collect::<Option<_>>()?;
    (!ids.is_empty()).then_some(ids)
}

/// What every engine feeds the draft whose `config.json` is `raw`, on a
/// target of `layers` layers.
pub fn engine_feeds(raw: &Value, layers: usize) -> Vec<EngineFeed> {
    let nested = ids_at(raw, "/eagle_config/eagle_aux_hidden_state_layer_ids");
    Engine::ALL
        .iter()
        .map(|&engine| {
            let (ids, from) = match engine {
                Engine::Vllm => match ids_at(raw, "/eagle_aux_hidden_state_layer_ids") {
                    Some(ids) => (Some(ids), "the top-level eagle_aux_hidden_state_layer_ids"),
                    None => match ids_at(raw, "/eagle_config/layer_ids") {
                        Some(ids) => (Some(ids), "eagle_config.layer_ids"),
                        None => (None, "no top-level eagle_aux_hidden_state_layer_ids (it does not read eagle_config's): its default"),
                    },
                },
                _ => match &nested {
                    Some(ids) => (Some(ids.clone()), "eagle_config.eagle_aux_hidden_state_layer_ids"),
                    None => (None, "no eagle_config.eagle_aux_hidden_state_layer_ids: its default"),
                },
            };
            let (points, problem) = match &ids {
                None => (Some(default_points(layers)), None),
                Some(ids) => feed(engine, ids, layers),
            };
            EngineFeed { engine, ids, ids_from: from.into(), points, problem }
        })
        .collect()
}

/// The points `engine` makes of `ids`, or why it feeds something else.
fn feed(engine: Engine, ids: &[i64], layers: usize) -> (Option<Vec<usize>>, Option<String>) {
    let convention = match engine {
        Engine::SglangBoundary => IdConvention::Boundary,
        Engine::SglangLegacy | Engine::SpecForge => IdConvention::Legacy,
        Engine::Vllm => {
            // Captured while running layer id, before it: ids outside 0..L-1 never match and are dropped.
            let kept: Vec<usize> = ids
                .iter()
                .filter(|&&id| (0..layers as i64).contains(&id))
                .map(|&id| id as usize)
                .collect();
            let dropped: Vec<i64> = ids
                .iter()
                .copied()
                .filter(|&id| !(0..layers as i64).contains(&id))
                .collect();
            if dropped.is_empty() && kept.len() == AUX_STATES {
                return (Some(kept), None);
            }
            return (
                None,
                Some(format!("ids {dropped:?} match no layer 0..{} and are dropped silently: {} states for an fc that takes {AUX_STATES}", layers - 1, kept.len())),
            );
        }
    };
    match resolve_ids(ids, convention, layers) {
        Ok(p) if p.len() == AUX_STATES => (Some(p), None),
        Ok(p) => (
            None,
            Some(format!(
                "{} states for an fc that takes {AUX_STATES}",
                p.len()
            )),
        ),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Adds a candidate for every engine's points not yet among `candidates`.
pub fn add_engine_candidates(feeds: &[EngineFeed], candidates: &mut Vec<Candidate>) {
    for f in feeds {
        if let Some(p) = &f.points {
            if !candidates.iter().any(|c| &c.points == p) {
                candidates.push(Candidate {
                    label: format!("what {} feeds", f.engine.name()),
                    points: p.clone(),
                    accuracy: 0.0,
                    positions: 0,
                    continuation_accuracy: 0.0,
                });
            }
        }
    }
}

/// An engine's feed with the accuracy the draft reaches on it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EngineScore {
    /// What the engine feeds.
    #[serde(flatten)]
    pub feed: EngineFeed,
    /// The draft's accuracy on those points (`None`: not three points, or not in the capture).
    pub accuracy: Option<f64>,
    /// Whether the engine mis-serves the draft: it feeds no three points, or
    /// points that trail the best mapping by more than the margin (`None`: not scored).
    pub mis_serves: Option<bool>,
}

/// Each engine's feed scored against the ranking.
pub fn score_engines(feeds: Vec<EngineFeed>, audit: &MappingAudit) -> Vec<EngineScore> {
    feeds
        .into_iter()
        .map(|feed| {
            let accuracy = feed.points.as_ref().and_then(|p| {
                audit
                    .candidates
                    .iter()
                    .find(|c| &c.points == p)
                    .map(|c| c.accuracy)
            });
            let mis_serves = match (&feed.points, accuracy) {
                (None, _) => Some(true),
                (Some(_), None) => None,
                (Some(p), Some(a)) => {
                    Some(*p != audit.best.points && audit.best.accuracy - a > audit.margin)
                }
            };
            EngineScore {
                feed,
                accuracy,
                mis_serves,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_incident_draft_is_read_four_ways() {
        // eagle3-embed: ids only under eagle_config, an 8-layer target.
        let raw = json!({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 2, 4]}});
        let f = engine_feeds(&raw, 8);
        let points: Vec<Option<Vec<usize>>> = f.iter().map(|f| f.points.clone()).collect();
        assert_eq!(
            points,
            [
                Some(vec![0, 2, 4]),
                Some(vec![0, 3, 5]),
                Some(vec![2, 4, 5]),
                Some(vec![0, 3, 5])
            ]
        );
        assert!(f[2].ids.is_none() && f[2].ids_from.contains("default"));
    }

    #[test]
    fn vllm_drops_minus_one_and_l_and_never_shifts() {
        let raw = json!({"eagle_aux_hidden_state_layer_ids": [1, 4, 8]});
        let f = &engine_feeds(&raw, 8)[2];
        assert_eq!(f.points, None);
        assert!(f.problem.as_deref().unwrap().contains("[8]"), "{f:?}");
        let raw = json!({"eagle_aux_hidden_state_layer_ids": [1, 4, 6]});
        assert_eq!(engine_feeds(&raw, 8)[2].points, Some(vec![1, 4, 6]));
    }
}
