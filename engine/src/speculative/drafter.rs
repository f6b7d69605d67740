//! The interface between the decode loop and whatever proposes draft trees.

use super::config::SpeculativeConfig;
use super::search::{search_trees, DraftScores, SearchState};
use super::tree::DraftTree;
use crate::error::Result;
use crate::timing::{timed, Span, SpanRecorder};
use rand_chacha::ChaCha8Rng;

/// What a drafter gets for one sequence at one decode step.
#[derive(Debug, Clone, Copy)]
pub struct DraftRequest<'a> {
    /// Stable id of the sequence for the drafter's per-sequence state.
    pub slot: usize,
    /// Every token so far (prompt and output); the last is the root, whose
    /// position is `tokens.len() - 1`.
    pub tokens: &'a [u32],
    /// First position whose target aux state is new since the last call.
    pub pending_start: usize,
    /// Target aux states of positions `pending_start..tokens.len() - 1`,
    /// `[rows, capture width]` (empty when the drafter needs none).
    pub pending_aux: PendingAux<'a>,
    /// Instead of `pending_aux` (then empty), when the target kept its aux
    /// states on the device: the ids of those positions' states there
    /// ([`crate::model::TargetOutput::aux_rows`]).
    pub pending_rows: &'a [u32],
}

/// A sequence's pending aux states: `buffer[start..end]`. The sequences of
/// one prefill point into its output, so a batch's states can be read as one
/// slice instead of being copied end to end (megabytes at 8B sizes).
#[derive(Debug, Clone, Copy)]
pub struct PendingAux<'a> {
    /// The buffer holding them (and maybe other sequences' states).
    pub buffer: &'a [f32],
    /// First element.
    pub start: usize,
    /// One past the last element.
    pub end: usize,
}

impl DraftRequest<'_> {
    /// Pending (aux state, next token) pairs: positions `pending_start` to
    /// the root's, exclusive.
    pub fn pending_pairs(&self) -> usize {
        self.tokens.len() - 1 - self.pending_start
    }
}

impl<'a> PendingAux<'a> {
    /// The whole of `rows`.
    pub fn of(rows: &'a [f32]) -> PendingAux<'a> {
        PendingAux {
            buffer: rows,
            start: 0,
            end: rows.len(),
        }
    }

    /// The states themselves.
    pub fn rows(&self) -> &'a [f32] {
        &self.buffer[self.start..self.end]
    }

    /// The batch's states in request order as one slice, when they lie end
    /// to end in one buffer.
    pub fn joined(all: &[PendingAux<'a>]) -> Option<&'a [f32]> {
        let (first, last) = (all.first()?, all.last()?);
        let adjacent = all
            .windows(2)
            .all(|w| std::ptr::eq(w[0].buffer, w[1].buffer) && w[0].end == w[1].start);
        adjacent.then(|| &first.buffer[first.start..last.end])
    }
}

/// How one decode step drafts, whatever the requests: the tree shape, the
/// sampling, and where the spans go.
pub struct DraftStep<'a, 'r> {
    /// The shape of the trees.
    pub cfg: &'a SpeculativeConfig,
    /// Sampling temperature (0: greedy).
    pub temperature: f32,
    /// `rngs[r]` is request `r`'s sampling stream (used when `temperature > 0`).
    pub rngs: &'a mut [&'r mut ChaCha8Rng],
    /// Draft forwards are recorded as `draft` spans, tree selection as `tree_build`.
    pub rec: &'a mut dyn SpanRecorder,
    /// Rows per draft forward at most when catching up on pending tokens
    /// (after the prefill: every prompt token), as the prefill's chunks.
    pub max_rows: usize,
}

impl DraftStep<'_, '_> {
    /// Grows each request's tree by [`search_trees`] from `first[r]`, the
    /// scores of request `r`'s root children (`vocab_map` and `target_vocab`
    /// as there), asking `expand` (given the step's recorder) for the scores
    /// of every frontier; then selects the trees (a `tree_build` span).
    pub fn grow<E>(
        self,
        first: &[DraftScores],
        vocab_map: &[u32],
        target_vocab: usize,
        mut expand: E,
    ) -> Result<Vec<DraftTree>>
    where
        E: FnMut(&[SearchState], &mut dyn SpanRecorder) -> Result<Vec<Vec<DraftScores>>>,
    {
        let DraftStep {
            cfg,
            temperature,
            rngs,
            rec,
            max_rows: _,
        } = self;
        let states = search_trees(
            cfg,
            temperature,
            first,
            vocab_map,
            target_vocab,
            rngs,
            |s| expand(s, &mut *rec),
        )?;
        Ok(timed(rec, Span::TreeBuild, || {
            states.into_iter().map(|s| s.into_tree(cfg)).collect()
        }))
    }
}

/// Proposes draft trees for a batch of sequences.
pub trait Drafter {
    /// Capture points of the target this drafter needs aux states from (empty: none).
    fn capture_points(&self) -> Vec<usize>;

    /// One draft tree per request, shaped and sampled as `step` says.
    fn draft(
        &mut self,
        requests: &[DraftRequest<'_>],
        step: DraftStep<'_, '_>,
    ) -> Result<Vec<DraftTree>>;

    /// Right after the target's prefill, extends the drafter's per-sequence
    /// state over every pending pair of each request (its prompt's pairs up
    /// to the one before the root, recorded as `draft_prefill` spans), so
    /// that the catch-up over a prompt is part of the prefill, as in the
    /// serving engines, and the first decode step extends as few pairs as a
    /// later one. Returns the pairs taken per request; the default, for a
    /// drafter that keeps no per-sequence state, takes none.
    fn prefill(
        &mut self,
        requests: &[DraftRequest<'_>],
        _max_rows: usize,
        _rec: &mut dyn SpanRecorder,
    ) -> Result<Vec<usize>> {
        Ok(vec![0; requests.len()])
    }

    /// The sequence in `slot` is finished: drop its state.
    fn release(&mut self, slot: usize);
}

#[cfg(test)]
mod tests {
    use super::PendingAux;

    #[test]
    fn a_prefills_pending_states_join_in_place_and_scattered_ones_do_not() {
        let prefill: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let at = |start, end| PendingAux {
            buffer: &prefill,
            start,
            end,
        };
        let joined = PendingAux::joined(&[at(0, 4), at(4, 9), at(9, 12)]).expect("end to end");
        assert_eq!(joined, &prefill[..]);
        assert_eq!(PendingAux::joined(&[at(4, 9)]), Some(&prefill[4..9]));
        // A gap, a different order, or another buffer: copied instead.
        assert_eq!(PendingAux::joined(&[at(0, 4), at(5, 9)]), None);
        assert_eq!(PendingAux::joined(&[at(4, 9), at(0, 4)]), None);
        let other = prefill.clone();
        assert_eq!(
            PendingAux::joined(&[
                at(0, 4),
                PendingAux {
                    buffer: &other,
                    start: 4,
                    end: 9
                }
            ]),
            None
        );
        assert_eq!(PendingAux::joined(&[]), None);
    }
}
