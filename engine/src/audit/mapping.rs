//! Which target hidden states was the draft trained on? Teacher-forced draft
//! accuracy under every plausible capture mapping, ranked: the mapping the
//! draft was trained on stands out, and a served mapping that does not is the
//! bug docs/DESIGN.md starts from (section 5).

use crate::capture::{default_points, resolve_ids, AuxCapture, IdConvention};

/// One capture mapping and how well the draft predicts under it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Candidate {
    /// Where the mapping comes from, in words.
    pub label: String,
    /// Capture points (0 = embedding output, p = residual stream entering layer p).
    pub points: Vec<usize>,
    /// Teacher-forced top-1 accuracy of the draft's first step (draft argmax == target argmax).
    pub accuracy: f64,
    /// Positions the accuracy was measured on.
    pub positions: usize,
    /// The same accuracy over the positions that predict generated tokens
    /// only (what a served draft's first step faces: its a_1 compares with this).
    pub continuation_accuracy: f64,
}

/// The ranking and its verdict.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MappingAudit {
    /// The mapping being served.
    pub configured: Candidate,
    /// The best-scoring mapping.
    pub best: Candidate,
    /// Every candidate, best first.
    pub candidates: Vec<Candidate>,
    /// Whether the served mapping loses to the best by more than the margin.
    pub mismatch: bool,
    /// The accuracy margin that counts as clear.
    pub margin: f64,
    /// The ids that serve the best mapping, when the served one is a mismatch.
    pub fix: Option<Fix>,
    /// Candidates left unscored because the capture lacks one of their boundaries.
    pub not_captured: Vec<Candidate>,
}

/// The layer ids that serve a mapping: what to write in the draft's
/// `config.json`, and the convention the serving engine must read them with
/// (the served convention when it can express the points, else legacy).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fix {
    /// `eagle_config.eagle_aux_hidden_state_layer_ids` (-1: the embedding output).
    pub aux_layer_ids: Vec<i64>,
    /// How the serving engine must read them.
    pub id_convention: IdConvention,
    /// The capture points they give.
    pub points: Vec<usize>,
}

impl Fix {
    /// The ids giving `points` under `served`, else under the legacy convention.
    pub fn for_points(points: &[usize], served: IdConvention) -> Option<Fix> {
        [served, IdConvention::Legacy].into_iter().find_map(|c| {
            ids_for(points, c).map(|ids| Fix {
                aux_layer_ids: ids,
                id_convention: c,
                points: points.to_vec(),
            })
        })
    }
}

impl std::fmt::Display for Fix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self.aux_layer_ids.iter().map(i64::to_string).collect();
        write!(
            f,
            "\"eagle_config\": {{\"eagle_aux_hidden_state_layer_ids\": [{}]}}, read with the {} convention",
            ids.join(", "),
            self.id_convention.name()
        )
    }
}

/// `[a, b, c]`.
fn list<T: ToString>(xs: &[T]) -> String {
    let items: Vec<String> = xs.iter().map(T::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn shifted(points: &[usize], by: i64, layers: usize) -> Option<Vec<usize>> {
    points
        .iter()
        .map(|&p| usize::try_from(p as i64 + by).ok().filter(|&q| q < layers))
        .collect()
}

/// The mappings worth trying for a served capture: the served one, the
/// draft's ids under both conventions, the default, every point shifted by
/// one layer either way, and embedding-first variants. Duplicates (by
/// points) keep their first label; a mapping that repeats a point is left
/// out, except the served one (a target of 4 layers serves [2, 2, 1]).
pub fn candidate_mappings(
    served: &AuxCapture,
    draft_ids: Option<&[i64]>,
    layers: usize,
) -> Vec<Candidate> {
    let mut raw: Vec<(String, Vec<usize>)> =
        vec![(format!("served ({served})"), served.points.clone())];
    if let Some(ids) = draft_ids {
        for conv in IdConvention::ALL {
            if let Ok(p) = resolve_ids(ids, conv, layers) {
                raw.push((
                    format!("draft ids {} read as {}", list(ids), conv.name()),
                    p,
                ));
            }
        }
    }
    raw.push(("default [2, L/2, L-3]".into(), default_points(layers)));
    for by in [-1i64, 1] {
        if let Some(p) = shifted(&served.points, by, layers) {
            raw.push((format!("served points shifted by {by:+}"), p));
        }
    }
    let p = &served.points;
    if p.len() == 3 {
        raw.push((
            "embeddings, then the first two served points".into(),
            vec![0, p[0], p[1]],
        ));
        raw.push((
            "embeddings, then the last two served points".into(),
            vec![0, p[1], p[2]],
        ));
    }
    let mut out: Vec<Candidate> = Vec::new();
    for (label, points) in raw {
        let repeats = (1..points.len()).any(|i| points[i..].contains(&points[i - 1]));
        let served_one = out.is_empty();
        if (served_one || !repeats) && !out.iter().any(|c| c.points == points) {
            out.push(Candidate {
                label,
                points,
                accuracy: 0.0,
                positions: 0,
                continuation_accuracy: 0.0,
            });
        }
    }
    out
}

/// Config ids that give `points` under `convention`, if it can express them.
pub fn ids_for(points: &[usize], convention: IdConvention) -> Option<Vec<i64>> {
    let ids: Vec<i64> = match convention {
        IdConvention::Legacy => points.iter().map(|&p| p as i64 - 1).collect(),
        IdConvention::Boundary => points
            .iter()
            .map(|&p| if p == 0 { -1 } else { p as i64 })
            .collect(),
    };
    (resolve_ids(&ids, convention, usize::MAX).ok()? == points).then_some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: audit JSON gave the fix as prose
    /// (`"eagle_config": {...}  (read with the boundary convention)`).
    #[test]
    fn the_fix_is_ids_and_a_convention() {
        let fix = Fix::for_points(&[0, 3, 5], IdConvention::Boundary).unwrap();
        assert_eq!(fix.aux_layer_ids, [-1, 3, 5]);
        assert_eq!(fix.id_convention, IdConvention::Boundary);
        let json = serde_json::to_value(&fix).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"aux_layer_ids": [-1, 3, 5], "id_convention": "boundary", "points": [0, 3, 5]})
        );
        // Points 1, 3, 5 cannot be said under the boundary convention (a first id 1 shifts them all).
        let fix = Fix::for_points(&[1, 3, 5], IdConvention::Boundary).unwrap();
        assert_eq!(
            (fix.aux_layer_ids, fix.id_convention),
            (vec![0, 2, 4], IdConvention::Legacy)
        );
    }
}
