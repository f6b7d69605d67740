//! Expert selection for one token, from its router logits alone (so a
//! token's experts never depend on the rest of its batch).

use crate::config::{GroupScore, MoeConfig, Scoring};

/// The experts one token goes to and their weights, by ascending expert id.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// `(expert, weight)`, expert ids ascending.
    pub experts: Vec<(usize, f32)>,
}

/// Indices of the `k` largest `values` among `candidates`, largest first;
/// equal values are taken lowest index first.
fn top_k(values: &[f32], candidates: impl Iterator<Item = usize>, k: usize) -> Vec<usize> {
    let mut c: Vec<usize> = candidates.collect();
    c.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    c.truncate(k);
    c
}

/// Router scores of one token's logits: a softmax over all experts, or a
/// sigmoid of each.
fn scores(m: &MoeConfig, logits: &[f32]) -> Vec<f32> {
    match m.scoring {
        Scoring::Sigmoid => logits.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect(),
        Scoring::Softmax => {
            let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = logits.iter().map(|&x| (x - max).exp()).collect();
            let sum: f32 = e.iter().sum();
            e.iter().map(|&v| v / sum).collect()
        }
    }
}

/// Routes one token: scores from `logits`; selection on the scores plus
/// `bias` (`e_score_correction_bias`, when the router has one), limited to
/// the experts of the best `topk_group` groups when grouped; weights from
/// the unbiased scores of the chosen experts, renormalised when
/// `norm_topk_prob`, times `routed_scaling_factor`.
///
/// Candidates outside the chosen groups are excluded outright (DeepSeek's
/// reference code and SGLang; transformers zeroes their scores instead,
/// which selects the same experts whenever the in-group scores are
/// positive, as sigmoid and softmax scores without a negative bias are).
pub fn route(m: &MoeConfig, logits: &[f32], bias: Option<&[f32]>) -> Route {
    let n = m.n_routed_experts;
    let scores = scores(m, logits);
    let choice: Vec<f32> = match bias {
        Some(b) => scores.iter().zip(b).map(|(s, b)| s + b).collect(),
        None => scores.clone(),
    };
    let mut candidate = vec![true; n];
    if let Some(g) = m.grouping {
        let size = n / g.n_group;
        let group_scores: Vec<f32> = (0..g.n_group)
            .map(|gi| {
                let members = gi * size..(gi + 1) * size;
                let best = top_k(&choice, members, 2);
                match g.score {
                    GroupScore::Max => choice[best[0]],
                    GroupScore::TopTwoSum => best.iter().map(|&e| choice[e]).sum(),
                }
            })
            .collect();
        let kept = top_k(&group_scores, 0..g.n_group, g.topk_group);
        for (e, c) in candidate.iter_mut().enumerate() {
            *c = kept.contains(&(e / size));
        }
    }
    let chosen = top_k(&choice, (0..n).filter(|&e| candidate[e]), m.top_k);
    let mut weights: Vec<f32> = chosen.iter().map(|&e| scores[e]).collect();
    if m.norm_topk_prob {
        let mut sum: f32 = weights.iter().sum();
        if m.scoring == Scoring::Sigmoid {
            sum += 1e-20;
        }
        weights.iter_mut().for_each(|w| *w /= sum);
    }
    if m.routed_scaling_factor != 1.0 {
        weights
            .iter_mut()
            .for_each(|w| *w *= m.routed_scaling_factor);
    }
    let mut experts: Vec<(usize, f32)> = chosen.into_iter().zip(weights).collect();
    experts.sort_by_key(|&(e, _)| e);
    Route { experts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Grouping;

    fn v3(n_group: usize, topk_group: usize, top_k: usize) -> MoeConfig {
        MoeConfig {
            n_routed_experts: 8,
            top_k,
            moe_intermediate_size: 4,
            n_shared_experts: 1,
            scoring: Scoring::Sigmoid,
            grouping: Some(Grouping {
                n_group,
                topk_group,
                score: GroupScore::TopTwoSum,
            }),
            correction_bias: true,
            norm_topk_prob: true,
            routed_scaling_factor: 2.5,
            sparse_layers: vec![true],
        }
    }

    /// The expected experts of independent, unbiased tokens
    /// (`MoeConfig::uniform_experts`) is what the router gives on random
    /// logits, grouped (DeepSeek-V3's 8 groups keeping 4) or not.
    #[test]
    fn uniform_experts_is_the_routers_mean_union_on_random_logits() {
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut grouped = v3(8, 4, 8);
        grouped.n_routed_experts = 256;
        let mut flat = grouped.clone();
        flat.grouping = None;
        flat.scoring = Scoring::Softmax;
        for m in [grouped, flat] {
            assert!((m.uniform_experts(1) - 8.0).abs() < 1e-9);
            for tokens in [2usize, 6, 48] {
                let trials = 400;
                let mut sizes = Vec::with_capacity(trials);
                for _ in 0..trials {
                    let mut hit = vec![false; 256];
                    for _ in 0..tokens {
                        let logits: Vec<f32> =
                            (0..256).map(|_| StandardNormal.sample(&mut rng)).collect();
                        for (e, _) in route(&m, &logits, None).experts {
                            hit[e] = true;
                        }
                    }
                    sizes.push(hit.iter().filter(|&&h| h).count() as f64);
                }
                let mean = sizes.iter().sum::<f64>() / trials as f64;
                let var = sizes.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / trials as f64;
                let se = (var / trials as f64).sqrt().max(1e-3);
                let want = m.uniform_experts(tokens);
                assert!(
                    (mean - want).abs() < 4.0 * se + 0.05,
                    "{tokens} tokens, grouped {}: {mean:.2} measured, {want:.2} expected (se {se:.2})",
                    m.grouping.is_some()
                );
            }
        }
    }

    #[test]
    fn groups_limit_the_candidates_and_the_bias_only_selects() {
        // Groups of 2: {0,1} {2,3} {4,5} {6,7}. Expert 7 scores highest alone,
        // but group {2,3} has the best top-two sum, then {0,1}.
        let logits = [1.0, 1.0, 1.5, 1.5, -3.0, -3.0, -4.0, 2.0];
        let m = v3(4, 2, 3);
        let r = route(&m, &logits, None);
        let ids: Vec<usize> = r.experts.iter().map(|e| e.0).collect();
        assert_eq!(ids, vec![0, 2, 3], "expert 7's group is not kept");
        // A bias that lifts group {4,5} changes the choice, not the weights' source.
        let mut bias = [0f32; 8];
        bias[4] = 2.0;
        bias[5] = 2.0;
        let r = route(&m, &logits, Some(&bias));
        let ids: Vec<usize> = r.experts.iter().map(|e| e.0).collect();
        assert_eq!(ids, vec![2, 4, 5]);
        let sig = |x: f32| 1.0 / (1.0 + (-x).exp());
        let sum = sig(1.5) + sig(-3.0) + sig(-3.0);
        let w4 = r.experts[1].1;
        assert!(
            (w4 - sig(-3.0) / sum * 2.5).abs() < 1e-6,
            "weight from unbiased scores"
        );
        let total: f32 = r.experts.iter().map(|e| e.1).sum();
        assert!((total - 2.5).abs() < 1e-5, "normalised, then scaled");
    }

    #[test]
    fn softmax_greedy_takes_the_top_k_unnormalised() {
        let m = MoeConfig {
            scoring: Scoring::Softmax,
            grouping: None,
            correction_bias: false,
            norm_topk_prob: false,
            routed_scaling_factor: 1.0,
            ..v3(1, 1, 2)
        };
        let logits = [0.0, 3.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0];
        let r = route(&m, &logits, None);
        assert_eq!(
            r.experts.iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![1, 3]
        );
        let total: f32 = r.experts.iter().map(|e| e.1).sum();
        assert!(total < 0.95, "softmax weights of two of eight experts");
    }
}
