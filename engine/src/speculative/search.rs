//! EAGLE-2-style draft tree search, shared by every drafter: expand the
//! `topk` best nodes per step, score nodes by cumulative draft log-probability,
//! keep the best `num_draft_tokens - 1` as the tree.

use super::config::SpeculativeConfig;
use super::tree::{DraftNode, DraftTree, Proposal};
use crate::error::Result;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use specula_kernels::cpu::{log_softmax, softmax_with_temperature, top_k};
use std::sync::Arc;

/// A node the search produced.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Target token id.
    pub token: u32,
    /// Parent candidate index; `None` for a child of the root.
    pub parent: Option<usize>,
    /// Depth below the root.
    pub depth: usize,
    /// Cumulative draft log-probability of the path.
    pub score: f32,
    /// How it was proposed.
    pub proposal: Proposal,
}

/// The search of one sequence: every candidate so far, and the frontier to expand next.
#[derive(Debug, Clone, Default)]
pub struct SearchState {
    /// Candidates, in creation order (a parent precedes its children).
    pub pool: Vec<Candidate>,
    /// Candidate indices to expand at the next step.
    pub frontier: Vec<usize>,
}

/// What a draft forward gives for one expanded node: its logits over the
/// draft vocabulary, or (a GPU backend asked for top-k only) the best draft
/// ids with their log-probabilities, best first.
#[derive(Debug, Clone)]
pub enum DraftScores {
    /// Logits over the draft vocabulary.
    Logits(Vec<f32>),
    /// The best `(draft id, log-probability)` pairs, at least `topk` of them.
    TopLogProbs(Vec<(usize, f32)>),
}

/// Whether a search with these knobs can work from top-k log-probabilities
/// alone (everything but sampling a chain needs only those).
pub fn needs_only_top_k(topk: usize, temperature: f32) -> bool {
    !(temperature > 0.0 && topk == 1)
}

/// Children of one expanded node from its draft scores (over the draft
/// vocabulary, mapped to target ids by `vocab_map`): the `topk` most likely,
/// or, when sampling a chain (`temperature > 0`, `topk = 1`), one token drawn
/// from the tempered draft distribution (which needs the logits).
pub fn children_of(
    scores: &DraftScores,
    parent: Option<(usize, &Candidate)>,
    topk: usize,
    temperature: f32,
    vocab_map: &[u32],
    target_vocab: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Candidate> {
    let (base, depth) = parent.map_or((0.0, 1), |(_, c)| (c.score, c.depth + 1));
    let parent = parent.map(|(i, _)| i);
    let logits = match scores {
        DraftScores::Logits(l) => l,
        DraftScores::TopLogProbs(best) => {
            assert!(
                needs_only_top_k(topk, temperature) && best.len() >= topk.min(vocab_map.len()),
                "children_of: top-k log-probabilities cannot serve this search"
            );
            return best
                .iter()
                .take(topk)
                .map(|&(d, lp)| Candidate {
                    token: vocab_map[d],
                    parent,
                    depth,
                    score: base + lp,
                    proposal: Proposal::PointMass,
                })
                .collect();
        }
    };
    let logp = log_softmax(logits);
    if temperature > 0.0 && topk == 1 {
        let q = softmax_with_temperature(logits, temperature);
        let u: f64 = rng.random();
        let mut c = 0f64;
        let mut pick = q.len() - 1;
        for (i, &v) in q.iter().enumerate() {
            c += v as f64;
            if u < c {
                pick = i;
                break;
            }
        }
        let mut dense = vec![0f32; target_vocab];
        for (d, &v) in q.iter().enumerate() {
            dense[vocab_map[d] as usize] += v;
        }
        return vec![Candidate {
            token: vocab_map[pick],
            parent,
            depth,
            score: base + logp[pick],
            proposal: Proposal::Sampled(Arc::new(dense)),
        }];
    }
    top_k(&logp, topk)
        .into_iter()
        .map(|(d, lp)| Candidate {
            token: vocab_map[d],
            parent,
            depth,
            score: base + lp,
            proposal: Proposal::PointMass,
        })
        .collect()
}

/// Runs the search for a batch of sequences. `first[r]` are sequence `r`'s
/// draft logits for the root's children; `expand(states)` must return, for
/// every sequence and every frontier candidate (in frontier order), the draft
/// logits for that candidate's children. Returns the finished searches.
pub fn search_trees(
    cfg: &SpeculativeConfig,
    temperature: f32,
    first: &[DraftScores],
    vocab_map: &[u32],
    target_vocab: usize,
    rngs: &mut [&mut ChaCha8Rng],
    mut expand: impl FnMut(&[SearchState]) -> Result<Vec<Vec<DraftScores>>>,
) -> Result<Vec<SearchState>> {
    let mut states: Vec<SearchState> = first
        .iter()
        .zip(rngs.iter_mut())
        .map(|(logits, rng)| {
            let pool = children_of(
                logits,
                None,
                cfg.topk,
                temperature,
                vocab_map,
                target_vocab,
                rng,
            );
            SearchState {
                frontier: (0..pool.len()).collect(),
                pool,
            }
        })
        .collect();
    for _ in 1..cfg.steps {
        let logits = expand(&states)?;
        assert_eq!(logits.len(), states.len(), "expand: one entry per sequence");
        for ((st, lg), rng) in states.iter_mut().zip(logits).zip(rngs.iter_mut()) {
            assert_eq!(
                lg.len(),
                st.frontier.len(),
                "expand: one logits row per frontier node"
            );
            let start = st.pool.len();
            for (&node, l) in st.frontier.clone().iter().zip(&lg) {
                let parent = st.pool[node].clone();
                let kids = children_of(
                    l,
                    Some((node, &parent)),
                    cfg.topk,
                    temperature,
                    vocab_map,
                    target_vocab,
                    rng,
                );
                st.pool.extend(kids);
            }
            let mut fresh: Vec<usize> = (start..st.pool.len()).collect();
            fresh.sort_by(|&a, &b| {
                st.pool[b]
                    .score
                    .total_cmp(&st.pool[a].score)
                    .then(a.cmp(&b))
            });
            fresh.truncate(cfg.topk);
            fresh.sort_unstable();
            st.frontier = fresh;
        }
    }
    Ok(states)
}

impl SearchState {
    /// The verified tree: the `num_draft_tokens - 1` best candidates by
    /// score (ties to the shallower, then the older), which always includes
    /// each chosen node's ancestors since a path's score never rises.
    pub fn into_tree(self, cfg: &SpeculativeConfig) -> DraftTree {
        let mut order: Vec<usize> = (0..self.pool.len()).collect();
        let pool = &self.pool;
        order.sort_by(|&a, &b| {
            pool[b]
                .score
                .total_cmp(&pool[a].score)
                .then(pool[a].depth.cmp(&pool[b].depth))
                .then(a.cmp(&b))
        });
        let mut picked: Vec<usize> = Vec::new();
        let mut index_of = vec![usize::MAX; pool.len()];
        for i in order {
            if picked.len() + 1 >= cfg.num_draft_tokens {
                break;
            }
            // A parent outranks its child, so it is already picked unless the
            // score is NaN; skip such orphans rather than emit a broken tree.
            if let Some(p) = pool[i].parent {
                if index_of[p] == usize::MAX {
                    continue;
                }
            }
            index_of[i] = picked.len();
            picked.push(i);
        }
        let nodes = picked
            .iter()
            .map(|&i| {
                let c = &pool[i];
                DraftNode {
                    token: c.token,
                    parent: c.parent.map(|p| index_of[p]),
                    depth: c.depth,
                    proposal: c.proposal.clone(),
                }
            })
            .collect();
        DraftTree { nodes }
    }
}
