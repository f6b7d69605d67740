//! Scoring capture mappings on captured states: the draft's teacher-forced
//! first-step accuracy under each mapping (docs/DESIGN.md section 5).

use super::draft_on_states::DraftOnStates;
use super::mapping::{Candidate, Fix, MappingAudit};
use crate::capture::AuxCapture;
use crate::capture_file::StatesSource;
use crate::error::{EngineError, Result};
use crate::model::{ForwardBatch, HiddenInput};
use specula_kernels::cpu::argmax;
use std::path::Path;

/// Scores every candidate whose boundaries the capture holds on every
/// captured prompt, and ranks them. The served mapping (the first candidate)
/// must be scorable; it is flagged when the best beats it by more than `margin`.
pub fn rank_mappings(
    d: &DraftOnStates,
    source: &dyn StatesSource,
    candidates: Vec<Candidate>,
    served: &AuxCapture,
    margin: f64,
) -> Result<MappingAudit> {
    let meta = source.meta();
    let stored = |c: &Candidate| c.points.iter().all(|p| meta.boundaries.contains(p));
    if let Some(first) = candidates.first().filter(|c| !stored(c)) {
        let missing: Vec<usize> = first
            .points
            .iter()
            .copied()
            .filter(|p| !meta.boundaries.contains(p))
            .collect();
        return Err(EngineError::config(
            Path::new(&source.origin()),
            "__metadata__.boundaries",
            format!(
                "{:?} lacks {missing:?}, which the served mapping {:?} needs; capture them (`specula capture --boundaries`, or all boundaries by default)",
                meta.boundaries, first.points
            ),
        ));
    }
    let (mut candidates, not_captured): (Vec<Candidate>, Vec<Candidate>) =
        candidates.into_iter().partition(stored);
    let mut needed: Vec<usize> = candidates
        .iter()
        .flat_map(|c| c.points.iter().copied())
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let h = meta.hidden_size;
    let dv = d.draft.config().draft_vocab_size;
    let d2t = d.draft.draft_to_target();
    let mut correct = vec![0usize; candidates.len()];
    let mut correct_cont = vec![0usize; candidates.len()];
    let (mut counted, mut counted_cont) = (0usize, 0usize);
    for i in 0..source.prompt_count() {
        let p = source.prompt(i, &needed)?;
        let t = p.tokens.len();
        if t < 3 {
            continue;
        }
        counted += t - 2;
        // Pair k predicts token k + 2: a generated one (past the first, which prefill makes) from k = prompt_len - 1.
        let first_cont = p.prompt_len.saturating_sub(1).min(t - 2);
        counted_cont += t - 2 - first_cont;
        let ids = d.embedding_ids(&p.tokens[1..]);
        for (ci, c) in candidates.iter().enumerate() {
            // Pair k = (aux at position k, token k + 1) predicts the target's choice at position k + 1.
            let mut aux = Vec::with_capacity((t - 1) * c.points.len() * h);
            for k in 0..t - 1 {
                for point in &c.points {
                    aux.extend_from_slice(&p.hidden[point][k * h..(k + 1) * h]);
                }
            }
            let mut db = ForwardBatch::default();
            db.push_causal(0, 0, &ids, 0, false);
            db.logit_rows = (0..t - 2).collect();
            let out = d
                .draft
                .forward(&db, HiddenInput::Aux(&aux), &mut [d.draft.new_cache()]);
            let hits: Vec<bool> = out
                .logits
                .chunks_exact(dv)
                .enumerate()
                .map(|(k, r)| d2t[argmax(r).unwrap_or(0)] == p.argmax[k + 1])
                .collect();
            correct[ci] += hits.iter().filter(|&&h| h).count();
            correct_cont[ci] += hits[first_cont..].iter().filter(|&&h| h).count();
        }
    }
    let share = |k: usize, n: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    for (ci, c) in candidates.iter_mut().enumerate() {
        c.positions = counted;
        c.accuracy = share(correct[ci], counted);
        c.continuation_accuracy = share(correct_cont[ci], counted_cont);
    }
    let configured = candidates[0].clone();
    candidates.sort_by(|a, b| b.accuracy.total_cmp(&a.accuracy));
    let best = candidates[0].clone();
    let mismatch = best.points != configured.points && best.accuracy - configured.accuracy > margin;
    let fix = mismatch
        .then(|| Fix::for_points(&best.points, served.convention))
        .flatten();
    Ok(MappingAudit {
        configured,
        best,
        candidates,
        mismatch,
        margin,
        fix,
        not_captured,
    })
}
