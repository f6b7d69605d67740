//! A drafter that knows the answer: it proposes a reference continuation
//! (the baseline's output) with a chosen probability per node and noise
//! otherwise, through the same tree search as a real draft. Tests use it to
//! exercise deep acceptance, sibling choices and commits on random models,
//! whose real drafts would almost never be accepted.

use super::drafter::{DraftRequest, DraftStep, Drafter};
use super::search::{DraftScores, SearchState};
use super::tree::DraftTree;
use crate::error::Result;
use crate::timing::{timed, Span};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// Proposes `reference[slot]` tokens with probability `hit_rate` per node.
pub struct OracleDrafter {
    references: HashMap<usize, Vec<u32>>,
    hit_rate: f64,
    vocab: usize,
    identity: Vec<u32>,
    noise: ChaCha8Rng,
}

impl OracleDrafter {
    /// `references[slot]` is the full token sequence (prompt and output) the
    /// target is expected to produce for that slot.
    pub fn new(
        references: HashMap<usize, Vec<u32>>,
        hit_rate: f64,
        vocab: usize,
        seed: u64,
    ) -> OracleDrafter {
        OracleDrafter {
            references,
            hit_rate,
            vocab,
            identity: (0..vocab as u32).collect(),
            noise: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Logits for the children of a node whose path (root excluded) is
    /// `path` below a root at `root`: noise, with the reference's next token
    /// boosted near the top with probability `hit_rate` when the path so far
    /// follows the reference.
    fn logits(&mut self, slot: usize, root: usize, path: &[u32]) -> Vec<f32> {
        let mut l: Vec<f32> = (0..self.vocab)
            .map(|_| self.noise.random_range(0.0f32..4.0))
            .collect();
        let reference = self.references.get(&slot);
        let next = reference.and_then(|r| {
            let on_path = path
                .iter()
                .enumerate()
                .all(|(i, &t)| r.get(root + 1 + i) == Some(&t));
            if on_path {
                r.get(root + 1 + path.len()).copied()
            } else {
                None
            }
        });
        if let Some(t) = next {
            if self.noise.random_bool(self.hit_rate) {
                l[t as usize] = self.noise.random_range(3.5f32..6.0);
            } else {
                l[t as usize] = -1.0;
            }
        }
        l
    }

    fn path(st: &SearchState, mut node: Option<usize>) -> Vec<u32> {
        let mut p = Vec::new();
        while let Some(n) = node {
            p.push(st.pool[n].token);
            node = st.pool[n].parent;
        }
        p.reverse();
        p
    }
}

impl Drafter for OracleDrafter {
    fn capture_points(&self) -> Vec<usize> {
        Vec::new()
    }

    fn draft(
        &mut self,
        requests: &[DraftRequest<'_>],
        step: DraftStep<'_, '_>,
    ) -> Result<Vec<DraftTree>> {
        let roots: Vec<(usize, usize)> = requests
            .iter()
            .map(|q| (q.slot, q.tokens.len() - 1))
            .collect();
        let first: Vec<DraftScores> = timed(step.rec, Span::Draft, || {
            roots
                .iter()
                .map(|&(s, r)| DraftScores::Logits(self.logits(s, r, &[])))
                .collect()
        });
        let identity = std::mem::take(&mut self.identity);
        let vocab = self.vocab;
        let trees = step.grow(&first, &identity, vocab, |states, rec| {
            rec.begin(Span::Draft);
            let out = states
                .iter()
                .zip(&roots)
                .map(|(st, &(slot, root))| {
                    st.frontier
                        .iter()
                        .map(|&n| {
                            DraftScores::Logits(self.logits(slot, root, &Self::path(st, Some(n))))
                        })
                        .collect()
                })
                .collect();
            rec.end(Span::Draft);
            Ok(out)
        });
        self.identity = identity;
        trees
    }

    fn release(&mut self, _slot: usize) {}
}
