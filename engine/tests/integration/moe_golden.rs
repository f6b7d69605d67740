//! The engine reproduces transformers on the tiny latent-attention / MoE
//! fixtures (issue 16): the same 16 greedy tokens from the golden prompt,
//! and the last-position logits (after the prompt, and after the prompt and
//! the 16 tokens) within 1e-5 of the row's largest logit, in f32. Goldens
//! are written by tools/golden/write_golden.py (transformers, CPU, f32);
//! a fixture whose golden file is absent is skipped with a message.

use specula_engine::fixtures::{write_random_pair, StoreDtype, TargetShape};
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::model::{ForwardBatch, TargetModel};
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;
use std::path::PathBuf;

/// The committed fixtures: `engine/tests/fixtures/moe/<shape>`, written by
/// `specula fixtures random --shape <shape> --seed 16 --dtype bf16`.
const SHAPES: [&str; 4] = [
    "tiny-deepseek-v3",
    "tiny-kimi-k25",
    "tiny-deepseek-v2",
    "tiny-qwen3-moe",
];
const SEED: u64 = 16;

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

#[derive(serde::Deserialize)]
struct Golden {
    transformers_version: String,
    config: serde_json::Value,
    weights_bytes: u64,
    prompt_token_ids: Vec<u32>,
    greedy_token_ids: Vec<u32>,
    prompt_last_logits: Vec<f32>,
    final_last_logits: Vec<f32>,
}

fn last_logits(target: &TargetModel, tokens: &[u32]) -> Vec<f32> {
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, 0, tokens, 0, true);
    let mut caches = vec![target.new_cache()];
    target.forward(&batch, &mut caches, &[]).logits
}

/// The largest difference over the largest golden logit.
fn relative_error(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len(), "vocabulary sizes differ");
    let scale = want.iter().map(|w| w.abs() as f64).fold(0.0, f64::max);
    let worst = got
        .iter()
        .zip(want)
        .map(|(g, w)| (*g as f64 - *w as f64).abs())
        .fold(0.0, f64::max);
    worst / scale
}

#[test]
fn the_engine_matches_transformers_on_every_sparse_family() {
    let mut compared = 0;
    for shape in SHAPES {
        let target_dir = fixtures().join("moe").join(shape).join("target");
        let path = fixtures().join("golden").join(format!("{shape}.json"));
        if !path.exists() {
            println!(
                "SKIPPED {shape}: no golden file {} (write it with `python3 \
                 tools/golden/write_golden.py --out engine/tests/fixtures/golden \
                 engine/tests/fixtures/moe/{shape}` where transformers is installed)",
                path.display()
            );
            continue;
        }
        let g: Golden = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(target_dir.join("config.json")).unwrap())
                .unwrap();
        assert_eq!(
            g.config, config,
            "{shape}: the golden was made from another config"
        );
        let bytes = std::fs::metadata(target_dir.join("model.safetensors"))
            .unwrap()
            .len();
        assert_eq!(
            g.weights_bytes, bytes,
            "{shape}: the golden was made from other weights"
        );
        let target = TargetModel::load(&target_dir).unwrap();
        let params = GenerateParams {
            speculative: SpeculativeConfig::BASELINE,
            temperature: 0.0,
            max_new_tokens: g.greedy_token_ids.len(),
            seed: 0,
            sequence_seeds: None,
            ignore_eos: true,
            synthetic: None,
            ..GenerateParams::default()
        };
        let prompts = vec![g.prompt_token_ids.clone()];
        let out = generate(&target, &prompts, &params, None, &mut NullRecorder).unwrap();
        assert_eq!(
            out.sequences[0].output, g.greedy_token_ids,
            "{shape}: greedy tokens differ from transformers {}",
            g.transformers_version
        );
        let first = relative_error(
            &last_logits(&target, &g.prompt_token_ids),
            &g.prompt_last_logits,
        );
        let whole = [g.prompt_token_ids.clone(), g.greedy_token_ids.clone()].concat();
        let last = relative_error(&last_logits(&target, &whole), &g.final_last_logits);
        println!(
            "{shape}: tokens equal; logits within {first:.1e} / {last:.1e} (transformers {})",
            g.transformers_version
        );
        assert!(
            first <= 1e-5 && last <= 1e-5,
            "{shape}: logits differ by {first:.2e} / {last:.2e} relative"
        );
        compared += 1;
    }
    println!(
        "{compared} of {} sparse fixtures compared with transformers",
        SHAPES.len()
    );
}

#[test]
fn the_committed_fixtures_are_what_specula_fixtures_random_writes() {
    let tmp = tempfile::tempdir().unwrap();
    for shape in SHAPES {
        let s = TargetShape::named(shape).unwrap();
        let fresh =
            write_random_pair(&tmp.path().join(shape), &s, SEED, StoreDtype::Bf16, None).unwrap();
        let committed = fixtures().join("moe").join(shape);
        let ck = specula_engine::checkpoint::Checkpoint::open(&committed.join("target")).unwrap();
        let held: usize = ck
            .names()
            .iter()
            .filter(|n| !n.starts_with("vision_tower.") && !n.starts_with("mm_projector."))
            .map(|n| ck.shape(n).unwrap().iter().product::<usize>())
            .sum();
        assert_eq!(
            s.parameters(),
            held,
            "{shape}: the parameter count `fixtures random` prints"
        );
        for part in ["target", "draft"] {
            for file in ["config.json", "model.safetensors"] {
                let a = std::fs::read(committed.join(part).join(file)).unwrap();
                let b =
                    std::fs::read(fresh.target.parent().unwrap().join(part).join(file)).unwrap();
                assert!(a == b, "{shape}/{part}/{file} differs from a fresh `specula fixtures random --shape {shape} --seed {SEED} --dtype bf16`");
            }
        }
    }
}

#[test]
fn the_wrapper_reads_its_language_model_and_ignores_the_vision_tensors() {
    let dir = fixtures().join("moe/tiny-kimi-k25/target");
    let target = TargetModel::load(&dir).unwrap();
    let c = target.config();
    assert_eq!(
        c.wrapper.as_deref(),
        Some("KimiK25ForConditionalGeneration")
    );
    assert_eq!(c.family.architecture(), "DeepseekV3ForCausalLM");
    assert_eq!(c.weight_prefix, "language_model.");
    let names = specula_engine::checkpoint::Checkpoint::open(&dir)
        .unwrap()
        .names();
    assert!(names.iter().any(|n| n.starts_with("vision_tower.")));
    assert!(names.iter().all(|n| n.starts_with("language_model.")
        || n.starts_with("vision_tower.")
        || n.starts_with("mm_projector.")));
}

#[test]
fn the_cuda_backend_takes_these_families_and_refuses_beyond_its_limits_in_one_line() {
    use specula_engine::backend::cuda_supports;
    use specula_engine::config::TargetConfig;
    for shape in SHAPES {
        let c = TargetConfig::load(&fixtures().join("moe").join(shape).join("target")).unwrap();
        assert!(
            cuda_supports(&c).is_ok(),
            "{shape}: {:?}",
            cuda_supports(&c)
        );
        let mut wide = c.clone();
        if let Some(m) = wide.moe.as_mut() {
            m.n_routed_experts = 1024;
        }
        let message = cuda_supports(&wide).unwrap_err().to_string();
        assert!(!message.contains('\n'), "{shape}: one line: {message}");
        assert!(
            message.contains("n_routed_experts") && message.contains("CPU backend"),
            "{message}"
        );
    }
    let dense = TargetConfig::load(
        &specula_engine::fixtures::write_random_pair(
            tempfile::tempdir().unwrap().path(),
            &TargetShape::named("tiny").unwrap(),
            1,
            StoreDtype::F32,
            None,
        )
        .unwrap()
        .target,
    );
    assert!(cuda_supports(&dense.unwrap()).is_ok());
}
