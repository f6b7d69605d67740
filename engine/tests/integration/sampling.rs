//! Rejection sampling is lossless: the emitted tokens are distributed as the
//! target's own samples (chi-square goodness of fit, fixed seeds, >= 20,000
//! samples each).

use crate::common;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula_engine::capture::CaptureChoice;
use specula_engine::generate::GenerateParams;
use specula_engine::model::ForwardBatch;
use specula_engine::pair::ModelPair;
use specula_engine::speculative::{
    verify_sampling, DraftNode, DraftTree, Proposal, SpeculativeConfig,
};
use specula_engine::timing::NullRecorder;
use specula_kernels::cpu::softmax_with_temperature;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use std::sync::Arc;

/// p-value of observed counts against expected probabilities, merging bins
/// whose expected count is below 5 into one.
fn chi_square_p(counts: &[usize], probs: &[f32]) -> f64 {
    let n: usize = counts.iter().sum();
    let (mut stat, mut bins) = (0.0, 0usize);
    let (mut rest_obs, mut rest_exp) = (0.0, 0.0);
    for (&c, &p) in counts.iter().zip(probs) {
        let e = p as f64 * n as f64;
        if e < 5.0 {
            rest_obs += c as f64;
            rest_exp += e;
        } else {
            stat += (c as f64 - e).powi(2) / e;
            bins += 1;
        }
    }
    if rest_exp > 0.0 {
        stat += (rest_obs - rest_exp).powi(2) / rest_exp.max(1e-9);
        bins += 1;
    }
    assert!(bins >= 3, "too few bins for a meaningful test");
    1.0 - ChiSquared::new((bins - 1) as f64).unwrap().cdf(stat)
}

fn random_dist(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    let w: Vec<f32> = (0..n)
        .map(|_| rng.random_range(0.0f32..1.0).powi(2) + 0.01)
        .collect();
    let s: f32 = w.iter().sum();
    w.into_iter().map(|v| v / s).collect()
}

/// Makes the tree of one trial.
type TreeMaker<'a> = dyn Fn(&mut ChaCha8Rng) -> DraftTree + 'a;

fn node(token: u32, parent: Option<usize>, depth: usize, proposal: Proposal) -> DraftNode {
    DraftNode {
        token,
        parent,
        depth,
        proposal,
    }
}

#[test]
fn tree_verification_emits_the_target_distribution() {
    const V: usize = 8;
    const N: usize = 40_000;
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let q_root = random_dist(&mut rng, V);
    let q_child = random_dist(&mut rng, V);
    // Shapes: a chain whose tokens are drawn from the draft's q at every
    // trial (the sampled proposal needs that), and a fixed point-mass tree
    // with three root children and grandchildren.
    let draw = |rng: &mut ChaCha8Rng, q: &[f32]| {
        let u: f32 = rng.random();
        let mut c = 0.0;
        q.iter()
            .position(|&p| {
                c += p;
                u < c
            })
            .unwrap_or(q.len() - 1) as u32
    };
    let sampled_chain = |rng: &mut ChaCha8Rng| DraftTree {
        nodes: vec![
            node(
                draw(rng, &q_root),
                None,
                1,
                Proposal::Sampled(Arc::new(q_root.clone())),
            ),
            node(
                draw(rng, &q_child),
                Some(0),
                2,
                Proposal::Sampled(Arc::new(q_child.clone())),
            ),
            node(
                draw(rng, &q_child),
                Some(1),
                3,
                Proposal::Sampled(Arc::new(q_child.clone())),
            ),
        ],
    };
    let fixed_tree = DraftTree {
        nodes: vec![
            node(3, None, 1, Proposal::PointMass),
            node(0, None, 1, Proposal::PointMass),
            node(6, None, 1, Proposal::PointMass),
            node(3, Some(0), 2, Proposal::PointMass),
            node(4, Some(0), 2, Proposal::PointMass),
            node(7, Some(1), 2, Proposal::PointMass),
        ],
    };
    let point_mass_tree = |_: &mut ChaCha8Rng| fixed_tree.clone();
    let shapes: [(&str, &TreeMaker, usize); 2] = [
        ("sampled chain", &sampled_chain, 3),
        ("point-mass tree", &point_mass_tree, 6),
    ];
    for (name, make, len) in shapes {
        // Half uniform, so that every drafted token has real mass.
        let probs: Vec<Vec<f32>> = (0..=len)
            .map(|_| {
                random_dist(&mut rng, V)
                    .into_iter()
                    .map(|p| 0.5 * p + 0.5 / V as f32)
                    .collect()
            })
            .collect();
        let mut first = vec![0usize; V];
        let mut second = vec![0usize; V];
        let mut accepted_any = 0;
        for _ in 0..N {
            let t = make(&mut rng);
            let a = verify_sampling(&t, &probs, &mut rng);
            first[a.tokens[0] as usize] += 1;
            if a.accepted.first() == Some(&0) {
                second[a.tokens[1] as usize] += 1;
            }
            accepted_any += usize::from(!a.accepted.is_empty());
        }
        assert!(
            accepted_any > N / 10,
            "{name}: drafts must get accepted for the test to mean anything ({accepted_any})"
        );
        let p1 = chi_square_p(&first, &probs[0]);
        assert!(
            p1 > 1e-3,
            "{name}: first token not distributed as the target (p = {p1:.2e})"
        );
        // Given that node 0 was accepted, the next token follows the target at node 0.
        assert!(second.iter().sum::<usize>() > 2_000);
        let p2 = chi_square_p(&second, &probs[1]);
        assert!(
            p2 > 1e-3,
            "{name}: second token not distributed as the target at node 0 (p = {p2:.2e})"
        );
    }
}

#[test]
fn the_chi_square_check_rejects_a_biased_sampler() {
    // The check must be able to fail: a sampler that drafts greedily and
    // always accepts is biased towards the draft's tokens.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let p = random_dist(&mut rng, 8);
    let mut counts = vec![0usize; 8];
    for _ in 0..20_000 {
        let t = if rng.random_bool(0.3) {
            2
        } else {
            (0..8)
                .find(|&i| rng.random_range(0.0f32..1.0) < p[i] * 2.0)
                .unwrap_or(0)
        };
        counts[t] += 1;
    }
    assert!(chi_square_p(&counts, &p) < 1e-6);
}

#[test]
fn the_engine_samples_the_target_distribution_through_eagle3_drafts() {
    const N: usize = 20_000;
    let fx = common::fixture("tiny");
    let mut pair = ModelPair::load(&fx.target, Some(&fx.draft), &CaptureChoice::default()).unwrap();
    let prompt: Vec<u32> = "The cat".bytes().map(u32::from).collect();
    let temperature = 1.5;
    // Second output token, for seeds whose first token is the most likely one.
    let mut rng_seed = ChaCha8Rng::seed_from_u64(9);
    for speculative in [
        SpeculativeConfig::chain(3),
        SpeculativeConfig::new(2, 3, 5).unwrap(),
    ] {
        let mut pairs = Vec::with_capacity(N);
        let mut batch_prompts = Vec::new();
        for _ in 0..8 {
            batch_prompts.push(prompt.clone());
        }
        for _ in 0..N / 8 {
            let params = GenerateParams {
                speculative,
                temperature,
                max_new_tokens: 2,
                seed: rng_seed.random(),
                sequence_seeds: None,
                ignore_eos: true,
                synthetic: None,
                ..GenerateParams::default()
            };
            let g = pair
                .generate(&batch_prompts, &params, &mut NullRecorder)
                .unwrap();
            pairs.extend(g.sequences.iter().map(|s| (s.output[0], s.output[1])));
        }
        let mut by_first = std::collections::HashMap::new();
        for &(a, _) in &pairs {
            *by_first.entry(a).or_insert(0usize) += 1;
        }
        let (&top, &n_top) = by_first.iter().max_by_key(|(_, &n)| n).unwrap();
        assert!(
            n_top > 2_000,
            "{speculative}: the conditional sample is too small ({n_top})"
        );
        // The target's exact distribution after prompt + top.
        let mut ctx = prompt.clone();
        ctx.push(top);
        let mut batch = ForwardBatch::default();
        batch.push_causal(0, 0, &ctx, 0, true);
        let mut caches = vec![pair.target.new_cache()];
        let logits = pair.target.forward(&batch, &mut caches, &[]).logits;
        let p = softmax_with_temperature(&logits, temperature);
        let mut counts = vec![0usize; p.len()];
        for &(a, b) in &pairs {
            if a == top {
                counts[b as usize] += 1;
            }
        }
        let pv = chi_square_p(&counts, &p);
        assert!(
            pv > 1e-3,
            "{speculative}: second token not distributed as the target (p = {pv:.2e})"
        );
    }
}

#[test]
fn a_sequence_seed_gives_the_same_sample_alone_or_anywhere_in_a_batch() {
    // A server's seeded request must not depend on what it was batched with
    // (4 identically seeded requests once gave 2 different outputs).
    let fx = common::fixture("tiny");
    let mut pair = ModelPair::load(&fx.target, Some(&fx.draft), &CaptureChoice::default()).unwrap();
    let prompts: Vec<Vec<u32>> = ["The cat", "A dog ran", "The cat", "Hello"]
        .iter()
        .map(|t| t.bytes().map(u32::from).collect())
        .collect();
    for speculative in [SpeculativeConfig::BASELINE, SpeculativeConfig::chain(3)] {
        let run = |pair: &mut ModelPair, prompts: &[Vec<u32>], seeds: Vec<u64>| {
            let params = GenerateParams {
                speculative,
                temperature: 1.0,
                max_new_tokens: 12,
                seed: 0,
                sequence_seeds: Some(seeds),
                ignore_eos: true,
                synthetic: None,
                ..GenerateParams::default()
            };
            let g = pair.generate(prompts, &params, &mut NullRecorder).unwrap();
            g.sequences
                .into_iter()
                .map(|s| s.output)
                .collect::<Vec<_>>()
        };
        let batched = run(&mut pair, &prompts, vec![7, 8, 7, 9]);
        assert_eq!(
            batched[0], batched[2],
            "{speculative}: the same prompt and seed, two places in a batch"
        );
        for (i, p) in prompts.iter().enumerate() {
            let alone = run(&mut pair, std::slice::from_ref(p), vec![[7, 8, 7, 9][i]]);
            assert_eq!(
                alone[0], batched[i],
                "{speculative}: sequence {i} alone vs batched"
            );
        }
        let other = run(&mut pair, &prompts[..1], vec![1234]);
        assert_ne!(
            other[0], batched[0],
            "{speculative}: another seed samples another stream"
        );
    }
}
