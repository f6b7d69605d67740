//! The lossless invariant on the latent-attention / MoE families (issue 16):
//! at temperature 0, speculative output equals the baseline's greedy output
//! token for token for every config of the lossless grid (steps 0..5 x topk
//! 1..4 x num_draft_tokens up to 16) at batch sizes 1..8, with an oracle
//! draft and with the EAGLE-3 draft; and a batched token's experts and
//! output equal its own alone (the router is batch-invariant).

use crate::common;

use crate::common::lossless::{grid, oracle_grid_reproduces_the_baseline};
use specula_engine::capture::{CaptureChoice, IdConvention};
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::generation::Generation;
use specula_engine::model::{ForwardBatch, TargetModel};
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;

const MAX_NEW: usize = 12;
const SHAPES: [&str; 4] = [
    "tiny-deepseek-v3",
    "tiny-kimi-k25",
    "tiny-deepseek-v2",
    "tiny-qwen3-moe",
];

fn greedy(speculative: SpeculativeConfig) -> GenerateParams {
    common::lossless::greedy(speculative, MAX_NEW)
}

fn baseline(target: &TargetModel, prompts: &[Vec<u32>]) -> Generation {
    let params = greedy(SpeculativeConfig::BASELINE);
    generate(target, prompts, &params, None, &mut NullRecorder).unwrap()
}

#[test]
fn every_grid_config_and_batch_size_reproduces_the_baseline_on_every_sparse_family() {
    assert_eq!(grid().len(), 145);
    for shape in SHAPES {
        let target = TargetModel::load(&common::fixture(shape).target).unwrap();
        let prompts = common::prompts(8, 21);
        let base = baseline(&target, &prompts);
        let deep = oracle_grid_reproduces_the_baseline(
            &target,
            &prompts,
            &base,
            MAX_NEW,
            shape,
            |_, _, _| {},
        );
        assert!(deep > 500, "{shape}: accepted paths of depth >= 2: {deep}");
    }
}

#[test]
// `..default()` keeps it building while CaptureChoice gains fields.
#[allow(clippy::needless_update)]
fn the_eagle3_draft_over_each_sparse_target_loads_runs_and_is_lossless() {
    for shape in SHAPES {
        let fx = common::fixture(shape);
        let capture = CaptureChoice {
            override_ids: Some(vec![0, 1, 2]),
            convention: IdConvention::Boundary,
            ..CaptureChoice::default()
        };
        let mut pair = ModelPair::load(&fx.target, Some(&fx.draft), &capture).unwrap();
        let prompts = common::prompts(6, 22);
        let base = pair
            .generate(
                &prompts,
                &greedy(SpeculativeConfig::BASELINE),
                &mut NullRecorder,
            )
            .unwrap();
        for (ci, speculative) in grid().iter().enumerate().filter(|(i, _)| i % 9 == 1) {
            let batch = 1 + ci % 6;
            let g = pair
                .generate(&prompts[..batch], &greedy(*speculative), &mut NullRecorder)
                .unwrap();
            assert!(g.sequences.iter().all(|s| s.verify_steps > 0));
            for (i, s) in g.sequences.iter().enumerate() {
                assert_eq!(
                    s.output, base.sequences[i].output,
                    "{shape} {speculative}, batch {batch}, sequence {i}"
                );
            }
        }
    }
}

#[test]
fn a_rows_logits_and_captured_states_do_not_depend_on_its_batch() {
    for shape in SHAPES {
        let target = TargetModel::load(&common::fixture(shape).target).unwrap();
        let prompts = common::prompts(5, 23);
        let capture = [0, 1, 3];
        let alone: Vec<(Vec<f32>, Vec<f32>)> = prompts
            .iter()
            .map(|p| {
                let mut batch = ForwardBatch::default();
                batch.push_causal(0, 0, p, 0, true);
                let mut caches = vec![target.new_cache()];
                let out = target.forward(&batch, &mut caches, &capture);
                let w = capture.len() * target.config().hidden_size;
                (out.logits, out.aux[(p.len() - 1) * w..].to_vec())
            })
            .collect();
        let mut batch = ForwardBatch::default();
        for (i, p) in prompts.iter().enumerate() {
            batch.push_causal(i, 0, p, 0, true);
        }
        let mut caches: Vec<_> = prompts.iter().map(|_| target.new_cache()).collect();
        let out = target.forward(&batch, &mut caches, &capture);
        let (v, w) = (
            target.config().vocab_size,
            capture.len() * target.config().hidden_size,
        );
        for (i, (logits, aux)) in alone.iter().enumerate() {
            let row = batch.logit_rows[i];
            assert_eq!(
                &out.logits[i * v..(i + 1) * v],
                &logits[..],
                "{shape}: logits of prompt {i}"
            );
            assert_eq!(
                &out.aux[row * w..(row + 1) * w],
                &aux[..],
                "{shape}: captured states of prompt {i}"
            );
        }
    }
}
