//! The engine's first invariant: at temperature 0, speculative output equals
//! the baseline's greedy output token for token, for every config of the
//! grid steps 0..5 x topk 1..4 x num_draft_tokens up to 16 x batch 1..8.

use crate::common;

use specula_engine::capture::CaptureChoice;
use specula_engine::capture::IdConvention;
use specula_engine::checkpoint::Checkpoint;
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::generation::Generation;
use specula_engine::model::TargetModel;
use specula_engine::pair::ModelPair;
use specula_engine::speculative::{Drafter, OracleDrafter, SpeculativeConfig};
use specula_engine::timing::NullRecorder;

use crate::common::lossless::{grid, oracle_grid_reproduces_the_baseline, references};

const MAX_NEW: usize = 20;

/// `generate` for `prompts` with `drafter` (none: the target alone), unrecorded.
fn generated(
    target: &TargetModel,
    prompts: &[Vec<u32>],
    params: &GenerateParams,
    drafter: Option<&mut dyn Drafter>,
) -> Generation {
    generate(target, prompts, params, drafter, &mut NullRecorder).unwrap()
}

/// The tiny fixture's target, `n` prompts from `seed`, and the target's
/// greedy output for them.
fn tiny_baseline(n: usize, seed: u64) -> (TargetModel, Vec<Vec<u32>>, Generation) {
    let target = TargetModel::load(&common::fixture("tiny").target).unwrap();
    let prompts = common::prompts(n, seed);
    let baseline = generated(
        &target,
        &prompts,
        &greedy(SpeculativeConfig::BASELINE),
        None,
    );
    (target, prompts, baseline)
}

fn greedy(speculative: SpeculativeConfig) -> GenerateParams {
    common::lossless::greedy(speculative, MAX_NEW)
}

#[test]
fn every_grid_config_and_batch_size_reproduces_the_baseline_with_an_oracle_draft() {
    let (target, prompts, baseline) = tiny_baseline(8, 11);
    assert_eq!(
        grid().len(),
        145,
        "the grid covers 144 speculative configs and the baseline"
    );
    let deep_accepts = oracle_grid_reproduces_the_baseline(
        &target,
        &prompts,
        &baseline,
        MAX_NEW,
        "tiny",
        |speculative, batch, g| {
            if !speculative.is_baseline() && speculative.steps >= 2 {
                assert!(
                    g.tau() > 1.3,
                    "{speculative}, batch {batch}: the oracle should get tokens accepted (tau {})",
                    g.tau()
                );
            }
        },
    );
    assert!(
        deep_accepts > 1000,
        "the grid must exercise accepted paths of depth >= 2 ({deep_accepts})"
    );
}

#[test]
fn the_eagle3_draft_path_is_lossless_across_configs_and_batches() {
    let fx = common::fixture("tiny");
    let mut pair = ModelPair::load(&fx.target, Some(&fx.draft), &CaptureChoice::default()).unwrap();
    let prompts = common::prompts(8, 12);
    let baseline = pair
        .generate(
            &prompts,
            &greedy(SpeculativeConfig::BASELINE),
            &mut NullRecorder,
        )
        .unwrap();
    for (ci, speculative) in grid().iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        let batch = 1 + ci % 8;
        let g = pair
            .generate(&prompts[..batch], &greedy(*speculative), &mut NullRecorder)
            .unwrap();
        for (i, s) in g.sequences.iter().enumerate() {
            assert_eq!(
                s.output, baseline.sequences[i].output,
                "{speculative}, batch {batch}, sequence {i}"
            );
        }
    }
}

#[test]
fn every_model_family_is_lossless_and_batch_invariant() {
    for shape in ["tiny-llama3", "tiny-qwen2", "tiny-qwen3"] {
        let fx = common::fixture(shape);
        let capture = CaptureChoice {
            override_ids: Some(vec![0, 1, 2]),
            convention: IdConvention::Boundary,
            ..CaptureChoice::default()
        };
        let mut pair = ModelPair::load(&fx.target, Some(&fx.draft), &capture).unwrap();
        let prompts = common::prompts(5, 13);
        let alone: Vec<Vec<u32>> = prompts
            .iter()
            .map(|p| {
                pair.generate(
                    std::slice::from_ref(p),
                    &greedy(SpeculativeConfig::BASELINE),
                    &mut NullRecorder,
                )
                .unwrap()
                .sequences[0]
                    .output
                    .clone()
            })
            .collect();
        for speculative in [
            SpeculativeConfig::BASELINE,
            SpeculativeConfig::chain(4),
            SpeculativeConfig::new(3, 3, 8).unwrap(),
        ] {
            let g = pair
                .generate(&prompts, &greedy(speculative), &mut NullRecorder)
                .unwrap();
            for (i, s) in g.sequences.iter().enumerate() {
                assert_eq!(
                    s.output, alone[i],
                    "{shape} {speculative}: batched output of sequence {i} differs from decoding it alone"
                );
            }
        }
    }
}

#[test]
fn stopping_on_eos_truncates_identically() {
    let (target, prompts, free) = tiny_baseline(8, 14);
    // Make a token the baseline emits mid-way the end-of-sequence token.
    let eos = free.sequences[0].output[5];
    let mut cfg = target.config().clone();
    cfg.eos_token_ids = vec![eos];
    let checkpoint = Checkpoint::open(&common::fixture("tiny").target).unwrap();
    let target = TargetModel::from_checkpoint(cfg, &checkpoint).unwrap();
    let params = |speculative| GenerateParams {
        ignore_eos: false,
        ..greedy(speculative)
    };
    let base = generated(
        &target,
        &prompts,
        &params(SpeculativeConfig::BASELINE),
        None,
    );
    assert!(
        base.sequences[0].output.len() <= 6 && *base.sequences[0].output.last().unwrap() == eos
    );
    let refs = references(&prompts, &free);
    let mut oracle = OracleDrafter::new(refs, 0.9, target.config().vocab_size, 3);
    let tree_params = params(SpeculativeConfig::new(5, 2, 8).unwrap());
    let speculative = generated(&target, &prompts, &tree_params, Some(&mut oracle));
    for (a, b) in speculative.sequences.iter().zip(&base.sequences) {
        assert_eq!(a.output, b.output);
        assert_eq!(a.finish, b.finish);
    }
}

#[test]
fn a_cancelled_sequence_stops_at_the_next_step_and_the_rest_of_its_batch_is_unchanged() {
    use specula_engine::generate::generate_until;
    use specula_engine::generation::FinishReason;
    use std::cell::Cell;
    let (target, prompts, baseline) = tiny_baseline(4, 5);
    let reference = references(&prompts, &baseline);
    let speculative = SpeculativeConfig::new(3, 2, 5).unwrap();
    for cancelled in 0..prompts.len() {
        let mut oracle = OracleDrafter::new(
            reference.clone(),
            0.75,
            target.config().vocab_size,
            cancelled as u64,
        );
        // Sequence `cancelled` is stopped once the engine has asked about it 3 times.
        let asked = Cell::new(0);
        let stop = |i: usize| {
            if i != cancelled {
                return false;
            }
            asked.set(asked.get() + 1);
            asked.get() > 3
        };
        let g = generate_until(
            &target,
            &prompts,
            &greedy(speculative),
            Some(&mut oracle),
            &mut NullRecorder,
            &stop,
        )
        .unwrap();
        for (i, s) in g.sequences.iter().enumerate() {
            let whole = &baseline.sequences[i].output;
            if i == cancelled {
                assert_eq!(s.finish, FinishReason::Cancelled);
                assert_eq!(s.verify_steps, 3, "stopped before its 4th step");
                assert!(s.output.len() < whole.len());
                assert_eq!(
                    s.output,
                    whole[..s.output.len()],
                    "what it had is the baseline's"
                );
            } else {
                assert_eq!(&s.output, whole, "sequence {i} beside a cancelled one");
                assert_eq!(s.finish, FinishReason::Length);
            }
        }
    }
}
