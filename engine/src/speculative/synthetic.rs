//! Synthetic acceptance: verification replaced by draws from a per-position
//! acceptance profile, so the system's efficiency (draft cost, verify cost,
//! host overhead) can be studied apart from draft quality, for example with
//! random weights. Output is not the target's greedy continuation: rows made
//! this way are marked synthetic and never count as lossless.

use super::tree::DraftTree;
use super::verify::{position, Acceptance};
use crate::error::{EngineError, Result};
use rand::Rng;

/// Conditional acceptance per draft depth: the node at depth `k` (1-based)
/// on the followed path is accepted with probability `rates[k - 1]` (the
/// last rate repeats) given that its parent was. A constant rate `a` gives
/// per-position acceptance `a^k` and expected tau `1 + a + a^2 + ... + a^steps`.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticAcceptance {
    rates: Vec<f64>,
}

impl SyntheticAcceptance {
    /// A profile; every rate must lie in [0, 1].
    pub fn new(rates: Vec<f64>) -> Result<SyntheticAcceptance> {
        if rates.is_empty() || rates.iter().any(|r| !(0.0..=1.0).contains(r)) {
            return Err(EngineError::setting(
                "synthetic acceptance",
                format!("{rates:?}: give one or more rates, each in [0, 1]"),
            ));
        }
        Ok(SyntheticAcceptance { rates })
    }

    /// The conditional rate at depth `k` (1-based).
    pub fn rate(&self, k: usize) -> f64 {
        self.rates[(k - 1).min(self.rates.len() - 1)]
    }

    /// The rates as given.
    pub fn rates(&self) -> &[f64] {
        &self.rates
    }

    /// Expected acceptance length for chains of `steps` drafts: 1 + sum of a_k.
    pub fn expected_tau(&self, steps: usize) -> f64 {
        let mut reach = 1.0;
        let mut tau = 1.0;
        for k in 1..=steps {
            reach *= self.rate(k);
            tau += reach;
        }
        tau
    }

    /// Walks the tree from the root along each node's first child, accepting
    /// each with its depth's rate; the emitted bonus is the target's choice at
    /// the last accepted position (`target_choice[0]` = root, `i + 1` = node `i`).
    pub fn accept(
        &self,
        tree: &DraftTree,
        target_choice: &[u32],
        rng: &mut impl Rng,
    ) -> Acceptance {
        let mut accepted = Vec::new();
        let mut at = None;
        while let Some(child) = tree.children(at).next() {
            if rng.random::<f64>() >= self.rate(tree.nodes[child].depth) {
                break;
            }
            accepted.push(child);
            at = Some(child);
        }
        Acceptance::along(tree, accepted, target_choice[position(at)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::speculative::tree::{DraftNode, Proposal};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn chain(n: usize) -> DraftTree {
        DraftTree {
            nodes: (0..n)
                .map(|i| DraftNode {
                    token: 100 + i as u32,
                    parent: i.checked_sub(1),
                    depth: i + 1,
                    proposal: Proposal::PointMass,
                })
                .collect(),
        }
    }

    #[test]
    fn acceptance_lengths_follow_the_profile() {
        let profile = SyntheticAcceptance::new(vec![0.8]).unwrap();
        let tree = chain(5);
        let choice: Vec<u32> = (0..6).map(|i| 7 + i).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 40_000;
        let mut reach = [0usize; 6];
        let mut emitted = 0;
        for _ in 0..n {
            let a = profile.accept(&tree, &choice, &mut rng);
            assert_eq!(a.tokens.len(), a.accepted.len() + 1);
            assert_eq!(*a.tokens.last().unwrap(), choice[a.accepted.len()]);
            reach[a.accepted.len()] += 1;
            emitted += a.tokens.len();
        }
        let tau = emitted as f64 / n as f64;
        assert!((tau - profile.expected_tau(5)).abs() < 0.03, "tau {tau}");
        // P(reach depth 1) = 0.8 within 4 standard errors (0.002).
        let depth1 = 1.0 - reach[0] as f64 / n as f64;
        assert!((depth1 - 0.8).abs() < 0.008, "a_1 {depth1}");
        assert!((profile.expected_tau(5) - 3.68928).abs() < 1e-9);
    }

    #[test]
    fn rates_outside_the_unit_interval_are_refused() {
        assert!(SyntheticAcceptance::new(vec![1.2]).is_err());
        assert!(SyntheticAcceptance::new(vec![]).is_err());
    }
}
