//! Bad model input gives one clear error line naming the file and the field,
//! exit code 2, and never a panic.

use crate::common;

use crate::common::edit_json;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use specula_engine::fixtures::{DraftShape, StoreDtype, TargetShape};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn specula(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_specula"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    common::random_pair(1)
}

fn generate(target: &Path, draft: &Path) -> Output {
    generate_with(target, draft, &["--max-new-tokens", "4"])
}

/// `specula generate` of the prompt "hi" on the pair, with `flags`.
fn generate_with(target: &Path, draft: &Path, flags: &[&str]) -> Output {
    let mut args = vec![
        "generate",
        "--target",
        target.to_str().unwrap(),
        "--draft",
        draft.to_str().unwrap(),
        "--prompt",
        "hi",
    ];
    args.extend_from_slice(flags);
    specula(&args)
}

/// Exit code 2, one line on stderr, naming every `needles`, no panic.
fn assert_clear_error(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit code 2 expected, stderr: {err}"
    );
    assert!(!err.contains("panicked"), "panicked: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(err.starts_with("error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from: {err}");
    }
}

#[test]
fn a_missing_tensor_is_named_with_its_checkpoint() {
    let (_t, target, draft) = fixture();
    let shape = TargetShape::named("tiny").unwrap();
    let mut w = shape.random_weights(&mut ChaCha8Rng::seed_from_u64(1), StoreDtype::F32);
    w.remove("model.layers.2.mlp.up_proj.weight");
    w.write(&target.join("model.safetensors")).unwrap();
    assert_clear_error(
        &generate(&target, &draft),
        &[
            target.to_str().unwrap(),
            "missing tensor `model.layers.2.mlp.up_proj.weight`",
        ],
    );
}

#[test]
fn a_tensor_of_the_wrong_shape_names_the_file_tensor_and_config_fields() {
    let (_t, target, draft) = fixture();
    edit_json(&target.join("config.json"), |c| {
        c["intermediate_size"] = 96.into()
    });
    assert_clear_error(
        &generate(&target, &draft),
        &[
            "model.safetensors",
            "model.layers.0.mlp.gate_proj.weight",
            "[96, 64]",
            "[128, 64]",
            "intermediate_size",
        ],
    );
}

#[test]
fn an_unknown_architecture_is_refused_with_the_supported_ones() {
    let (_t, target, draft) = fixture();
    edit_json(&target.join("config.json"), |c| {
        c["architectures"] = serde_json::json!(["MambaForCausalLM"])
    });
    assert_clear_error(
        &generate(&target, &draft),
        &[
            "config.json",
            "architectures",
            "MambaForCausalLM",
            "LlamaForCausalLM",
        ],
    );
}

#[test]
fn a_malformed_config_gives_the_line_and_column() {
    let (_t, target, draft) = fixture();
    let text = std::fs::read_to_string(target.join("config.json")).unwrap();
    std::fs::write(
        target.join("config.json"),
        text.replace("\"hidden_size\": 64,", "\"hidden_size\": 64,,"),
    )
    .unwrap();
    assert_clear_error(&generate(&target, &draft), &["config.json", "line"]);
    // A field of the wrong type names the field.
    edit_json(&draft.join("config.json"), |c| {
        c["hidden_size"] = "wide".into()
    });
    std::fs::write(target.join("config.json"), text).unwrap();
    assert_clear_error(
        &generate(&target, &draft),
        &["draft", "config.json", "hidden_size", "invalid type"],
    );
}

#[test]
fn a_draft_whose_fc_is_not_three_target_widths_is_refused() {
    let (_t, target, draft) = fixture();
    let shape = TargetShape::named("tiny").unwrap();
    let mut ds = DraftShape::for_target(&shape, None);
    ds.target_hidden_size = 48; // fc becomes [64, 144] instead of [64, 192]
    let ids: Vec<usize> = (0..256).collect();
    ds.random_weights(&mut ChaCha8Rng::seed_from_u64(2), StoreDtype::F32, &ids)
        .write(&draft.join("model.safetensors"))
        .unwrap();
    assert_clear_error(
        &generate(&target, &draft),
        &[
            "draft",
            "model.safetensors",
            "fc.weight",
            "[64, 192]",
            "[64, 144]",
            "3 x target_hidden_size",
        ],
    );
    // A config that says so is refused before the weights are read.
    edit_json(&draft.join("config.json"), |c| {
        c["target_hidden_size"] = 48.into()
    });
    assert_clear_error(
        &generate(&target, &draft),
        &["draft", "config.json", "target_hidden_size", "64"],
    );
}

#[test]
fn a_missing_tokenizer_is_named() {
    let (_t, target, draft) = fixture();
    std::fs::remove_file(target.join("tokenizer.json")).unwrap();
    assert_clear_error(&generate(&target, &draft), &["tokenizer.json", "missing"]);
}

#[test]
fn a_corrupt_tokenizer_is_named() {
    let (_t, target, draft) = fixture();
    std::fs::write(target.join("tokenizer.json"), "{\"model\": 3}").unwrap();
    assert_clear_error(&generate(&target, &draft), &["tokenizer.json", "tokenizer"]);
}

#[test]
fn missing_weights_are_named() {
    let (_t, target, draft) = fixture();
    std::fs::remove_file(target.join("model.safetensors")).unwrap();
    assert_clear_error(
        &generate(&target, &draft),
        &["model.safetensors", "missing weights"],
    );
}

#[test]
fn an_impossible_tree_is_refused() {
    let (_t, target, draft) = fixture();
    let out = generate_with(
        &target,
        &draft,
        &["--steps", "2", "--topk", "2", "--num-draft-tokens", "8"],
    );
    assert_clear_error(&out, &["num_draft_tokens", "2 * 2 + 1 = 5"]);
}

#[test]
fn aux_ids_past_the_last_layer_are_refused() {
    let (_t, target, draft) = fixture();
    let out = generate_with(
        &target,
        &draft,
        &["--aux-layers", "1,2,3", "--id-convention", "legacy"],
    );
    assert_clear_error(&out, &["aux layer ids", "capture point 4", "legacy"]);
}

#[test]
fn a_nan_in_a_weight_is_named_not_turned_into_results() {
    // One NaN in a target weight once gave tau 3.75, lossless "yes", exit 0.
    let shape = TargetShape::named("tiny").unwrap();
    for (dtype, name, dims) in [
        (
            StoreDtype::F32,
            "model.layers.1.input_layernorm.weight",
            vec![64],
        ),
        (
            StoreDtype::Bf16,
            "model.layers.2.mlp.up_proj.weight",
            vec![128, 64],
        ),
    ] {
        let (_t, target, draft) = fixture();
        let mut w = shape.random_weights(&mut ChaCha8Rng::seed_from_u64(1), dtype);
        w.remove(name);
        let mut data = vec![0.5f32; dims.iter().product()];
        data[17] = f32::NAN;
        w.float(name, &dims, &data, dtype);
        w.write(&target.join("model.safetensors")).unwrap();
        assert_clear_error(
            &generate(&target, &draft),
            &[
                "model.safetensors",
                &format!("tensor `{name}`"),
                "non-finite",
                "element 17",
            ],
        );
    }
}

#[test]
fn logits_that_overflow_are_an_error_not_a_token() {
    // Finite weights whose product overflows: the final norm scaled to 3e38.
    let (_t, target, draft) = fixture();
    let shape = TargetShape::named("tiny").unwrap();
    let mut w = shape.random_weights(&mut ChaCha8Rng::seed_from_u64(1), StoreDtype::F32);
    w.remove("model.norm.weight");
    w.float("model.norm.weight", &[64], &[3e38; 64], StoreDtype::F32);
    w.write(&target.join("model.safetensors")).unwrap();
    assert_clear_error(
        &generate(&target, &draft),
        &["non-finite values", "the target's logits hold", "row 0"],
    );
}

#[test]
fn regression_num_hidden_layers_1e9_is_refused_before_anything_is_allocated() {
    // 10^9 once aborted on a 656 GB allocation (exit 134), 2^62 on a
    // "capacity overflow" panic; 8 on a fixture of 4 layers is a missing tensor.
    for (layers, needles) in [
        (
            serde_json::json!(1_000_000_000u64),
            &[
                "num_hidden_layers",
                "1000000000 is past any model's (at most 4096)",
            ][..],
        ),
        (
            serde_json::json!(1u64 << 62),
            &[
                "num_hidden_layers",
                "4611686018427387904 is past any model's",
            ][..],
        ),
        (
            serde_json::json!(8),
            &[
                "num_hidden_layers",
                "8 decoder layers, but the checkpoint",
                "holds 4",
            ][..],
        ),
    ] {
        let (_t, target, draft) = fixture();
        edit_json(&target.join("config.json"), |c| {
            c["num_hidden_layers"] = layers
        });
        let mut all = vec!["target/config.json"];
        all.extend_from_slice(needles);
        assert_clear_error(&generate(&target, &draft), &all);
    }
}

#[test]
fn regression_rope_theta_0_or_negative_and_eos_past_the_vocabulary_are_refused() {
    use serde_json::json;
    let target_edits = [
        (
            "rope_theta",
            json!(0),
            "0 (must be a finite number above 0)",
        ),
        (
            "rope_theta",
            json!(-10000.0),
            "-10000 (must be a finite number above 0)",
        ),
        (
            "rms_norm_eps",
            json!(-1e-6),
            "must be a finite number above 0",
        ),
        (
            "eos_token_id",
            json!(5000),
            "token id 5000 is past the vocabulary (vocab_size = 320)",
        ),
        (
            "eos_token_id",
            json!([256, 320]),
            "token id 320 is past the vocabulary",
        ),
        // Once cut down to a u32: 4294967301 was token 5.
        (
            "eos_token_id",
            json!(4_294_967_301u64),
            "must be a token id",
        ),
        ("hidden_size", json!(1u64 << 40), "is past any model's"),
        (
            "max_position_embeddings",
            json!(0),
            "must be greater than 0",
        ),
        (
            "rope_scaling",
            json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
            "high_freq_factor",
        ),
    ];
    for (field, value, why) in target_edits {
        let (_t, target, draft) = fixture();
        edit_json(&target.join("config.json"), |c| c[field] = value);
        assert_clear_error(
            &generate(&target, &draft),
            &["target/config.json", field, why],
        );
    }
    let (_t, target, draft) = fixture();
    edit_json(&draft.join("config.json"), |c| {
        c["rope_theta"] = json!(-1.0)
    });
    assert_clear_error(
        &generate(&target, &draft),
        &["draft/config.json", "rope_theta", "above 0"],
    );
}

#[test]
fn regression_a_fixture_shape_of_2_62_tokens_is_refused_not_a_capacity_overflow() {
    let (t, target, _draft) = fixture();
    let shape = target.join("config.json");
    let out = t.path().join("fx");
    edit_json(&shape, |c| c["vocab_size"] = serde_json::json!(1u64 << 62));
    let o = specula(&[
        "fixtures",
        "random",
        "--shape",
        shape.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_clear_error(&o, &["config.json", "vocab_size", "past any model's"]);
    // The widest shape a config allows: 7 * 2^60 parameters, whose byte
    // count once overflowed.
    edit_json(&shape, |c| {
        let w = serde_json::json!(1u64 << 24);
        for f in ["vocab_size", "hidden_size", "intermediate_size", "head_dim"] {
            c[f] = w.clone();
        }
        c["num_attention_heads"] = 1.into();
        c["num_key_value_heads"] = 1.into();
        c["num_hidden_layers"] = 4096.into();
    });
    let o = specula(&[
        "fixtures",
        "random",
        "--shape",
        shape.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_clear_error(
        &o,
        &["parameters would write", "fixtures are for small shapes"],
    );
}
