//! Verification of a draft tree against the target's choices: greedy
//! (longest path of matches, then the target's own token) and rejection
//! sampling (Leviathan et al. 2023; Chen et al. 2023; for several siblings,
//! the recursive form of SpecInfer), both lossless.

use super::tree::{DraftTree, Proposal};
use rand::Rng;
use specula_kernels::cpu::greedy_tree_accept;

/// The outcome of verifying one tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acceptance {
    /// Accepted node indices, root side first.
    pub accepted: Vec<usize>,
    /// Emitted tokens: the accepted drafts, then the target's bonus token.
    pub tokens: Vec<u32>,
}

impl Acceptance {
    /// The outcome of accepting `accepted` (nodes of `tree`, root side
    /// first) and then emitting `bonus`.
    pub(super) fn along(tree: &DraftTree, accepted: Vec<usize>, bonus: u32) -> Acceptance {
        let tokens = accepted
            .iter()
            .map(|&i| tree.nodes[i].token)
            .chain(std::iter::once(bonus))
            .collect();
        Acceptance { accepted, tokens }
    }
}

/// Tree position of a node (0 = root, `i + 1` = node `i`).
pub(super) fn position(node: Option<usize>) -> usize {
    node.map_or(0, |i| i + 1)
}

/// Greedy verification. `target_choice[k]` is the target's argmax at tree
/// position `k` (0 = root, `i + 1` = node `i`). Accepts while a child carries
/// the target's choice, then emits the target's choice at the last accepted node.
pub fn verify_greedy(tree: &DraftTree, target_choice: &[u32]) -> Acceptance {
    assert_eq!(
        target_choice.len(),
        tree.len() + 1,
        "verify_greedy: one choice per tree position"
    );
    let parents: Vec<i32> = tree
        .nodes
        .iter()
        .map(|n| n.parent.map_or(-1, |p| p as i32))
        .collect();
    let tokens: Vec<u32> = tree.nodes.iter().map(|n| n.token).collect();
    let (accepted, bonus) = greedy_tree_accept(&parents, &tokens, target_choice);
    Acceptance::along(tree, accepted, bonus)
}

/// Draws an index from the (possibly unnormalised) weights `p`; `None` when they sum to 0.
fn draw(p: &[f32], rng: &mut impl Rng) -> Option<u32> {
    let total: f64 = p.iter().map(|&v| v as f64).sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let u = rng.random::<f64>() * total;
    let mut c = 0f64;
    let mut last = None;
    for (i, &v) in p.iter().enumerate() {
        if v > 0.0 {
            c += v as f64;
            last = Some(i as u32);
            if u < c {
                return last;
            }
        }
    }
    last
}

fn normalise(p: &mut [f32]) -> bool {
    let s: f64 = p.iter().map(|&v| v as f64).sum();
    if s <= 0.0 || !s.is_finite() {
        return false;
    }
    for v in p.iter_mut() {
        *v = (*v as f64 / s) as f32;
    }
    true
}

/// Rejection-sampling verification at temperature > 0. `target_probs[k]` is
/// the target's distribution (already tempered) at tree position `k`.
///
/// At each node the children are tried in order: child `x` proposed from `q`
/// is accepted with probability `min(1, p(x) / q(x))`; on rejection the
/// residual becomes `norm(max(0, p - q))` (for a point-mass proposal: `p`
/// without `x`). If no child is accepted a token is drawn from the residual;
/// at a leaf the bonus token is drawn from `p`. The emitted tokens are
/// distributed exactly as the target's own samples would be.
pub fn verify_sampling(
    tree: &DraftTree,
    target_probs: &[Vec<f32>],
    rng: &mut impl Rng,
) -> Acceptance {
    assert_eq!(
        target_probs.len(),
        tree.len() + 1,
        "verify_sampling: one distribution per tree position"
    );
    let mut cur = None;
    let mut acc = Acceptance {
        accepted: Vec::new(),
        tokens: Vec::new(),
    };
    'walk: loop {
        let original = &target_probs[position(cur)];
        let mut p = original.clone();
        for c in tree.children(cur).collect::<Vec<_>>() {
            let x = tree.nodes[c].token as usize;
            let (ratio, q) = match &tree.nodes[c].proposal {
                Proposal::PointMass => (p[x] as f64, None),
                Proposal::Sampled(q) => (
                    if q[x] > 0.0 {
                        p[x] as f64 / q[x] as f64
                    } else {
                        1.0
                    },
                    Some(q),
                ),
            };
            if rng.random::<f64>() < ratio.min(1.0) {
                acc.accepted.push(c);
                acc.tokens.push(x as u32);
                cur = Some(c);
                continue 'walk;
            }
            match q {
                None => p[x] = 0.0,
                Some(q) => p
                    .iter_mut()
                    .zip(q.iter())
                    .for_each(|(a, b)| *a = (*a - b).max(0.0)),
            }
            if !normalise(&mut p) {
                p.clone_from(original);
            }
        }
        let t = draw(&p, rng).or_else(|| draw(original, rng)).unwrap_or(0);
        acc.tokens.push(t);
        return acc;
    }
}
