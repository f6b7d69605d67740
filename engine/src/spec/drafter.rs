//! The interface between the decode loop and whatever proposes draft trees.

use super::config::SpecConfig;
use super::tree::DraftTree;
use crate::error::Result;
use crate::timing::SpanRecorder;
use rand_chacha::ChaCha8Rng;

/// What a drafter gets for one sequence at one decode step.
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
    pub pending_aux: &'a [f32],
}

/// Proposes draft trees for a batch of sequences.
pub trait Drafter {
    /// Capture points of the target this drafter needs aux states from (empty: none).
    fn capture_points(&self) -> Vec<usize>;

    /// One draft tree per request, shaped by `cfg`; `rngs[r]` is request
    /// `r`'s sampling stream (used when `temperature > 0`). Draft forwards
    /// are recorded as `draft` spans, tree selection as `tree_build`.
    fn draft(
        &mut self,
        requests: &[DraftRequest<'_>],
        cfg: &SpecConfig,
        temperature: f32,
        rngs: &mut [&mut ChaCha8Rng],
        rec: &mut dyn SpanRecorder,
    ) -> Result<Vec<DraftTree>>;

    /// The sequence in `slot` is finished: drop its state.
    fn release(&mut self, slot: usize);
}
