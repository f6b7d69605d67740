//! Every supported family computes what its model definition says, and
//! every storage layout (f32, bf16, sharded) loads to the same model.

use crate::common;

use crate::common::reference::reference_forward;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use specula_engine::fixtures::{write_random_pair, StoreDtype, TargetShape};
use specula_engine::model::{ForwardBatch, TargetModel};

fn all_logits(target: &TargetModel, tokens: &[u32]) -> Vec<f32> {
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, 0, tokens, 0, false);
    batch.logit_rows = (0..tokens.len()).collect();
    let mut caches = vec![target.new_cache()];
    target.forward(&batch, &mut caches, &[]).logits
}

#[test]
fn each_family_matches_its_reference_forward() {
    let tokens: Vec<u32> = "Families differ in small ways."
        .bytes()
        .map(u32::from)
        .collect();
    for shape in ["tiny", "tiny-llama3", "tiny-qwen2", "tiny-qwen3"] {
        let fx = common::fixture(shape);
        let target = TargetModel::load(&fx.target).unwrap();
        let got = all_logits(&target, &tokens);
        let (_, want) = reference_forward(&fx.target, &tokens);
        let v = target.config().vocab_size;
        let mut worst = 0f64;
        for (t, row) in want.iter().enumerate() {
            for (g, w) in got[t * v..(t + 1) * v].iter().zip(row) {
                worst = worst.max((*g as f64 - w).abs() / (1.0 + w.abs()));
            }
        }
        assert!(
            worst < 1e-4,
            "{shape}: logits differ from the reference by {worst:.2e}"
        );
    }
}

#[test]
fn the_llama3_fixture_really_scales_rope() {
    // Positions past original_max_position_embeddings (64) are where scaling matters.
    let fx = common::fixture("tiny-llama3");
    let target = TargetModel::load(&fx.target).unwrap();
    assert!(target.config().rope_scaling.is_some() && target.config().tie_word_embeddings);
    let tokens: Vec<u32> = (0..90u32).map(|i| (i * 7) % 256).collect();
    let got = all_logits(&target, &tokens);
    let (_, want) = reference_forward(&fx.target, &tokens);
    let v = target.config().vocab_size;
    for (g, w) in got[89 * v..].iter().zip(&want[89]) {
        assert!((*g as f64 - w).abs() < 1e-3 * (1.0 + w.abs()));
    }
}

#[test]
fn bf16_and_sharded_checkpoints_load_to_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let shape = TargetShape::named("tiny").unwrap();
    let f32p =
        write_random_pair(&dir.path().join("f32"), &shape, 3, StoreDtype::F32, None).unwrap();
    let bf16p =
        write_random_pair(&dir.path().join("bf16"), &shape, 3, StoreDtype::Bf16, None).unwrap();
    let tokens: Vec<u32> = "shards".bytes().map(u32::from).collect();
    let a = all_logits(&TargetModel::load(&f32p.target).unwrap(), &tokens);
    let b = all_logits(&TargetModel::load(&bf16p.target).unwrap(), &tokens);
    assert_ne!(a, b, "bf16 storage rounds the weights");
    let close = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| (*x - *y).abs() < 0.05 * (1.0 + x.abs()))
        .count();
    assert!(
        close as f64 > 0.99 * a.len() as f64,
        "bf16 weights give nearly the f32 logits"
    );
    let bf16_cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bf16p.target.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(bf16_cfg["torch_dtype"], "bfloat16");

    // The same weights in 3 shards with an index.
    let sharded = dir.path().join("sharded");
    std::fs::create_dir_all(&sharded).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(f32p.target.join(f), sharded.join(f)).unwrap();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    shape
        .random_weights(&mut rng, StoreDtype::F32)
        .write_sharded(&sharded, 3)
        .unwrap();
    assert!(
        sharded.join("model-00002-of-00003.safetensors").exists()
            && !sharded.join("model.safetensors").exists()
    );
    assert_eq!(
        all_logits(&TargetModel::load(&sharded).unwrap(), &tokens),
        a,
        "sharded == single file, bitwise"
    );
}
