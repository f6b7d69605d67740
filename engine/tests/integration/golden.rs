//! The Rust engine reproduces transformers on the committed trained model:
//! the same prompt tokens, the same 32 greedy tokens for 8 prompts, and the
//! last-position logits within 1e-3 relative error (f32 compute on the bf16
//! checkpoint). Goldens made by tools/train/golden.py.

use specula_engine::capture::CaptureChoice;
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::model::{ForwardBatch, TargetModel};
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;
use std::path::PathBuf;

fn model_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tiny-llama"))
}

#[derive(serde::Deserialize)]
struct Golden {
    prompts: Vec<String>,
    prompt_token_ids: Vec<Vec<u32>>,
    greedy_token_ids: Vec<Vec<u32>>,
}

fn golden() -> Golden {
    let path = model_dir().join("golden/golden.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Greedy decoding of `max_new_tokens` with `speculative`, EOS ignored.
fn greedy(speculative: SpeculativeConfig, max_new_tokens: usize) -> GenerateParams {
    GenerateParams {
        speculative,
        temperature: 0.0,
        max_new_tokens,
        seed: 0,
        sequence_seeds: None,
        ignore_eos: true,
        synthetic: None,
        ..GenerateParams::default()
    }
}

/// The trained target with its EAGLE-3 draft.
fn pair_with_draft() -> ModelPair {
    ModelPair::load(
        &model_dir(),
        Some(&model_dir().join("eagle3")),
        &CaptureChoice::default(),
    )
    .unwrap()
}

#[test]
fn the_tokenizer_gives_the_golden_prompt_ids() {
    let g = golden();
    let pair = ModelPair::load(&model_dir(), None, &CaptureChoice::default()).unwrap();
    for (text, ids) in g.prompts.iter().zip(&g.prompt_token_ids) {
        assert_eq!(&pair.tokenizer.encode(text).unwrap(), ids, "{text:?}");
    }
}

#[test]
fn greedy_tokens_equal_transformers_for_every_golden_prompt() {
    let g = golden();
    let target = TargetModel::load(&model_dir()).unwrap();
    let params = greedy(SpeculativeConfig::BASELINE, 32);
    let out = generate(
        &target,
        &g.prompt_token_ids,
        &params,
        None,
        &mut NullRecorder,
    )
    .unwrap();
    for (i, (s, want)) in out.sequences.iter().zip(&g.greedy_token_ids).enumerate() {
        assert_eq!(&s.output, want, "prompt {i}: {:?}", g.prompts[i]);
    }
}

#[test]
fn speculative_greedy_tokens_equal_transformers_too() {
    let g = golden();
    let mut pair = pair_with_draft();
    for speculative in [
        SpeculativeConfig::chain(5),
        SpeculativeConfig::new(4, 3, 8).unwrap(),
    ] {
        let params = greedy(speculative, 32);
        let out = pair
            .generate(&g.prompt_token_ids, &params, &mut NullRecorder)
            .unwrap();
        for (i, (s, want)) in out.sequences.iter().zip(&g.greedy_token_ids).enumerate() {
            assert_eq!(&s.output, want, "{speculative}, prompt {i}");
        }
        assert!(
            out.tau() > 1.5,
            "{speculative}: the trained draft is accepted (tau {})",
            out.tau()
        );
    }
}

/// Regression for reading a prefill's aux states in place: batched, every
/// sequence's draft must still see its own states (wrong ones would stay
/// lossless but change what is accepted), so each sequence accepts exactly
/// what it accepts decoded alone.
#[test]
fn a_batched_sequence_accepts_the_drafts_it_accepts_alone() {
    let g = golden();
    let mut pair = pair_with_draft();
    let params = greedy(SpeculativeConfig::chain(3), 24);
    let batched = pair
        .generate(&g.prompt_token_ids, &params, &mut NullRecorder)
        .unwrap();
    for (i, prompt) in g.prompt_token_ids.iter().enumerate() {
        let alone = pair
            .generate(std::slice::from_ref(prompt), &params, &mut NullRecorder)
            .unwrap();
        assert_eq!(
            batched.sequences[i].accepted_per_step, alone.sequences[0].accepted_per_step,
            "prompt {i}: accepted drafts per step, batched vs alone"
        );
    }
    let accepted: u32 = batched
        .sequences
        .iter()
        .flat_map(|s| &s.accepted_per_step)
        .map(|&a| u32::from(a))
        .sum();
    assert!(
        accepted > 20,
        "the trained draft gets tokens accepted ({accepted})"
    );
}

#[test]
fn last_position_logits_match_transformers_within_1e_3() {
    let g = golden();
    let target = TargetModel::load(&model_dir()).unwrap();
    let v = target.config().vocab_size;
    let st = safetensors_logits();
    let mut worst = 0f32;
    for (i, ids) in g.prompt_token_ids.iter().enumerate() {
        let mut batch = ForwardBatch::default();
        batch.push_causal(0, 0, ids, 0, true);
        let mut caches = vec![target.new_cache()];
        let got = target.forward(&batch, &mut caches, &[]).logits;
        let want = &st[i * v..(i + 1) * v];
        let diff = got
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        let scale = want.iter().map(|b| b.abs()).fold(0f32, f32::max);
        assert!(
            diff / scale < 1e-3,
            "prompt {i}: max |diff| {diff} against max |logit| {scale}"
        );
        worst = worst.max(diff / scale);
    }
    eprintln!("worst norm-wise relative logit error over the golden prompts: {worst:.2e}");
}

/// The golden logits `[8, vocab]`, read with the safetensors crate.
fn safetensors_logits() -> Vec<f32> {
    let bytes = std::fs::read(model_dir().join("golden/golden_logits.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor("logits").unwrap();
    assert_eq!(t.dtype(), safetensors::Dtype::F32);
    t.data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
