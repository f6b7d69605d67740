//! The lossless grid and its oracle-draft driver, shared by the dense and the
//! sparse (latent-attention / MoE) lossless tests.

use specula_engine::generate::{generate, GenerateParams};
use specula_engine::generation::Generation;
use specula_engine::model::TargetModel;
use specula_engine::speculative::{OracleDrafter, SpeculativeConfig};
use specula_engine::timing::NullRecorder;
use std::collections::HashMap;

/// The baseline and the 144 speculative configs: steps 1..5 x topk 1..4 x
/// num_draft_tokens 2..=min(steps x topk + 1, 16).
pub fn grid() -> Vec<SpeculativeConfig> {
    let mut g = vec![SpeculativeConfig::BASELINE];
    for steps in 1..=5 {
        for topk in 1..=4 {
            for ndt in 2..=(steps * topk + 1).min(16) {
                g.push(SpeculativeConfig::new(steps, topk, ndt).unwrap());
            }
        }
    }
    g
}

/// Greedy decoding of `max_new_tokens` under `speculative`, never stopping on EOS.
pub fn greedy(speculative: SpeculativeConfig, max_new_tokens: usize) -> GenerateParams {
    GenerateParams {
        speculative,
        temperature: 0.0,
        max_new_tokens,
        seed: 1,
        sequence_seeds: None,
        ignore_eos: true,
        synthetic: None,
        ..GenerateParams::default()
    }
}

/// Slot -> the full token sequence (prompt and output) `g` produced for each prompt.
pub fn references(prompts: &[Vec<u32>], g: &Generation) -> HashMap<usize, Vec<u32>> {
    prompts
        .iter()
        .zip(&g.sequences)
        .enumerate()
        .map(|(i, (p, s))| (i, [p.clone(), s.output.clone()].concat()))
        .collect()
}

/// Every grid config at batch sizes 1..=8 (8 prompts, a window of them per
/// batch) with an oracle draft that knows the baseline's tokens (right 75%
/// of the time): asserts each output equals the baseline's and returns how
/// many verify steps accepted 2 tokens or more. `label` names the target in
/// failure messages; `check` runs on each speculative generation (config,
/// batch, result).
pub fn oracle_grid_reproduces_the_baseline(
    target: &TargetModel,
    prompts: &[Vec<u32>],
    baseline: &Generation,
    max_new_tokens: usize,
    label: &str,
    mut check: impl FnMut(&SpeculativeConfig, usize, &Generation),
) -> usize {
    assert_eq!(prompts.len(), 8, "the grid windows 8 prompts");
    let reference = references(prompts, baseline);
    let mut deep_accepts = 0;
    for (ci, speculative) in grid().iter().enumerate() {
        for batch in 1..=8 {
            let first = (ci + batch) % (9 - batch);
            let refs = (0..batch)
                .map(|i| (i, reference[&(first + i)].clone()))
                .collect();
            let vocab = target.config().vocab_size;
            let mut oracle = OracleDrafter::new(refs, 0.75, vocab, ci as u64);
            let g = generate(
                target,
                &prompts[first..first + batch],
                &greedy(*speculative, max_new_tokens),
                Some(&mut oracle),
                &mut NullRecorder,
            )
            .unwrap();
            for (i, s) in g.sequences.iter().enumerate() {
                assert_eq!(
                    s.output,
                    baseline.sequences[first + i].output,
                    "{label} {speculative}, batch {batch}, sequence {i}: speculative output differs from the baseline"
                );
            }
            deep_accepts += g
                .sequences
                .iter()
                .flat_map(|s| &s.accepted_per_step)
                .filter(|&&a| a >= 2)
                .count();
            check(speculative, batch, &g);
        }
    }
    deep_accepts
}
