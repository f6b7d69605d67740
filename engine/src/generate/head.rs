//! Greedy verification that runs the target's language-model head over the
//! tree positions its walk reaches, a few at a time, instead of over every
//! position of the tree: past the first rejected draft token no position's
//! choice is read. Each position's logits are the bits a full forward gives
//! it (the head is a linear, so a row's logits do not depend on which other
//! rows run with it), so the accepted tokens are those of
//! [`crate::speculative::verify_greedy`].

use crate::backend::TargetBackend;
use crate::error::Result;
use crate::speculative::DraftTree;

/// Tree positions per sequence whose head runs in one round: the position
/// the walk waits on and the next ones in node order (a chain's next
/// positions). On models/tiny-llama's trained draft about half the chains
/// stop at the first draft token, so two rows per round run about half of
/// a 6-position chain's head, where six would run all of it.
const HEAD_ROWS: usize = 2;

/// One sequence's greedy walk: the accepted nodes, root side first, then
/// the target's own token where the walk stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Walk {
    /// The node the walk stands on (`None`: the root).
    cur: Option<usize>,
    /// Accepted node indices, root side first.
    pub accepted: Vec<usize>,
    /// The target's choice at the last accepted position, once known.
    pub bonus: Option<u32>,
}

/// Walks every sequence's tree (`trees[b]`, its root at verify row
/// `starts[b]`, nodes on the rows after it) against the target's argmax,
/// computing the head of `finals` (the verify forward's final hidden
/// states of every row, from [`TargetBackend::forward_trunk`]) over the
/// rows the walks reach, in rounds shared by all sequences.
pub(super) fn greedy_walks<B: TargetBackend + ?Sized>(
    target: &B,
    finals: &[f32],
    trees: &[DraftTree],
    starts: &[usize],
) -> Result<Vec<Walk>> {
    walk_with(trees, starts, |rows| target.head_argmax(finals, rows))
}

/// [`greedy_walks`] with the target's choices of verify rows `rows` from
/// `head(rows)`. A walk accepts the first child (in node order) carrying
/// the target's choice, as `verify_greedy` does.
fn walk_with(
    trees: &[DraftTree],
    starts: &[usize],
    mut head: impl FnMut(&[usize]) -> Result<Vec<u32>>,
) -> Result<Vec<Walk>> {
    let rows = match (starts.last(), trees.last()) {
        (Some(&s), Some(t)) => s + t.len() + 1,
        _ => 0,
    };
    let mut choice: Vec<Option<u32>> = vec![None; rows];
    let mut walks = vec![Walk::default(); trees.len()];
    loop {
        let mut wanted = Vec::new();
        for ((walk, tree), &start) in walks.iter_mut().zip(trees).zip(starts) {
            while walk.bonus.is_none() {
                let pos = walk.cur.map_or(0, |i| i + 1);
                let Some(want) = choice[start + pos] else {
                    let end = (pos + HEAD_ROWS).min(tree.len() + 1);
                    wanted.extend((start + pos..start + end).filter(|&r| choice[r].is_none()));
                    break;
                };
                let child = (0..tree.len())
                    .find(|&i| tree.nodes[i].parent == walk.cur && tree.nodes[i].token == want);
                match child {
                    Some(i) => {
                        walk.accepted.push(i);
                        walk.cur = Some(i);
                    }
                    None => walk.bonus = Some(want),
                }
            }
        }
        if wanted.is_empty() {
            return Ok(walks);
        }
        let ids = head(&wanted)?;
        for (&r, id) in wanted.iter().zip(ids) {
            choice[r] = Some(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::speculative::{verify_greedy, DraftNode, Proposal};

    /// Random trees (chains and branching ones, several sequences) and
    /// random target choices over a small vocabulary, so that walks run
    /// deep: the walks accept what `verify_greedy` accepts over every
    /// position's choice, and ask for each row at most once.
    #[test]
    fn walks_accept_what_full_verification_accepts() {
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..500 {
            let batch = 1 + next(4) as usize;
            let mut trees = Vec::new();
            let mut starts = Vec::new();
            let mut rows = 0;
            for _ in 0..batch {
                let len = next(9) as usize;
                let chain = next(2) == 0;
                let nodes = (0..len)
                    .map(|i| {
                        let parent = match (i, chain) {
                            (0, _) => None,
                            (_, true) => Some(i - 1),
                            (_, false) => {
                                Some(next(i as u64 + 1) as usize).filter(|&p: &usize| p < i)
                            }
                        };
                        DraftNode {
                            token: next(3) as u32,
                            parent,
                            // Not read by the walks.
                            depth: 1,
                            proposal: Proposal::PointMass,
                        }
                    })
                    .collect();
                let tree = DraftTree { nodes };
                starts.push(rows);
                rows += tree.len() + 1;
                trees.push(tree);
            }
            let choice: Vec<u32> = (0..rows).map(|_| next(3) as u32).collect();
            let mut asked = vec![0; rows];
            let walks = walk_with(&trees, &starts, |r| {
                r.iter().for_each(|&i| asked[i] += 1);
                Ok(r.iter().map(|&i| choice[i]).collect())
            })
            .expect("no head error");
            assert!(asked.iter().all(|&n| n <= 1), "a row asked twice");
            for ((w, tree), &s) in walks.iter().zip(&trees).zip(&starts) {
                let full = verify_greedy(tree, &choice[s..s + tree.len() + 1]);
                assert_eq!(w.accepted, full.accepted);
                assert_eq!(w.bonus, full.tokens.last().copied());
            }
        }
    }
}
