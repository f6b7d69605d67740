//! One sequence of a batch under generation: its tokens, cache, pending
//! aux states and sampling stream, and how emitted tokens end it (EOS or
//! the length limit); freeing what a finished one holds.

use super::GenerateParams;
use crate::backend::TargetBackend;
use crate::generation::{FinishReason, SequenceResult};
use crate::speculative::{DraftRequest, Drafter, PendingAux};
use rand_chacha::ChaCha8Rng;

/// A sequence under generation.
pub(super) struct Sequence<C> {
    /// Prompt and emitted tokens.
    pub(super) tokens: Vec<u32>,
    /// Its KV cache (taken out for each forward).
    pub(super) cache: Option<C>,
    /// Where the tokens whose aux states are pending start.
    pub(super) pending_start: usize,
    /// Aux states of the tokens accepted at the last verify.
    pub(super) pending_aux: Vec<f32>,
    /// Instead, when the target kept its aux states on the device: the ids
    /// of the pending positions' states there.
    pub(super) pending_rows: Vec<u32>,
    /// Until the first draft step: where the sequence's pending aux states
    /// lie in the prefill's output (not copied out: megabytes at 8B sizes).
    pub(super) pending_prompt: Option<std::ops::Range<usize>>,
    /// Its sampling stream.
    pub(super) rng: ChaCha8Rng,
    /// What it produced.
    pub(super) result: SequenceResult,
    /// Finished (EOS, length, cancelled).
    pub(super) done: bool,
}

impl<C> Sequence<C> {
    /// Appends `toks` until EOS or the length limit; returns how many were kept.
    pub(super) fn emit(
        &mut self,
        toks: &[u32],
        params: &GenerateParams,
        eos: &[u32],
        now: f64,
    ) -> usize {
        let mut kept = 0;
        for &t in toks {
            if self.result.output.len() >= params.max_new_tokens {
                break;
            }
            self.tokens.push(t);
            self.result.output.push(t);
            kept += 1;
            if !params.ignore_eos && eos.contains(&t) {
                self.finish(FinishReason::Eos, now);
                return kept;
            }
        }
        if self.result.output.len() >= params.max_new_tokens {
            self.finish(FinishReason::Length, now);
        }
        kept
    }

    /// What the drafter gets for this sequence (`slot` `i`): its tokens and
    /// pending states, read in place from `prompt_aux` until its first
    /// draft step.
    pub(super) fn draft_request<'a>(
        &'a self,
        slot: usize,
        prompt_aux: &'a [f32],
    ) -> DraftRequest<'a> {
        DraftRequest {
            slot,
            tokens: &self.tokens,
            pending_start: self.pending_start,
            pending_aux: match &self.pending_prompt {
                Some(range) => PendingAux {
                    buffer: prompt_aux,
                    start: range.start,
                    end: range.end,
                },
                None => PendingAux::of(&self.pending_aux),
            },
            pending_rows: &self.pending_rows,
        }
    }

    pub(super) fn finish(&mut self, reason: FinishReason, now: f64) {
        self.done = true;
        self.result.finish = reason;
        self.result.finished_s = now;
    }
}

/// Takes every cache out of `seqs` (the forward needs them as one slice).
pub(super) fn take_caches<C>(seqs: &mut [Sequence<C>], which: &[usize]) -> Vec<C> {
    which
        .iter()
        .map(|&i| seqs[i].cache.take().expect("a live sequence has its cache"))
        .collect()
}

/// Frees a finished sequence's draft slot and cache.
pub(super) fn release<B: TargetBackend + ?Sized>(
    target: &B,
    drafter: &mut Option<&mut dyn Drafter>,
    i: usize,
    s: &mut Sequence<B::Cache>,
) {
    if let Some(d) = drafter.as_mut() {
        d.release(i);
    }
    if let Some(c) = s.cache.take() {
        target.release(c);
    }
}
