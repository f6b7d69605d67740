//! Latent-attention / MoE configs (issue 16): what is read from them, and
//! one typed error naming the file and the field for each setting no model
//! can have.

use specula_engine::config::{GroupScore, Scoring, TargetConfig};
use specula_engine::error::EngineError;
use std::path::{Path, PathBuf};

fn committed(shape: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/moe"))
        .join(shape)
        .join("target/config.json")
}

fn json(shape: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(committed(shape)).unwrap()).unwrap()
}

/// `shape`'s config with `edit` applied, read as a target config.
fn edited(
    shape: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> Result<TargetConfig, EngineError> {
    let mut v = json(shape);
    edit(&mut v);
    TargetConfig::from_json(Path::new("edited/config.json"), &v)
}

fn refused(r: Result<TargetConfig, EngineError>, field: &str, needle: &str) {
    match r {
        Err(e @ EngineError::Config { .. }) => {
            let m = e.to_string();
            assert!(m.starts_with("edited/config.json: field `"), "{m}");
            assert!(m.contains(field) && m.contains(needle), "{m}");
            assert!(!m.contains('\n'), "one line: {m}");
        }
        other => panic!("expected a config error on {field}, got {other:?}"),
    }
}

#[test]
fn every_routing_and_attention_setting_is_read() {
    let c = TargetConfig::load_file(&committed("tiny-deepseek-v3")).unwrap();
    let m = c.moe.as_ref().unwrap();
    assert_eq!((m.n_routed_experts, m.top_k, m.n_shared_experts), (8, 3, 2));
    assert_eq!(m.scoring, Scoring::Sigmoid);
    let g = m.grouping.unwrap();
    assert_eq!(
        (g.n_group, g.topk_group, g.score),
        (4, 2, GroupScore::TopTwoSum)
    );
    assert!(m.correction_bias && m.norm_topk_prob && m.routed_scaling_factor == 2.5);
    assert_eq!(
        m.sparse_layers,
        vec![false, true, true, true],
        "first_k_dense_replace = 1"
    );
    let a = c.mla.as_ref().unwrap();
    assert_eq!(
        (a.q_lora_rank, a.kv_lora_rank, a.qk_head_dim(), a.v_head_dim),
        (Some(24), 16, 16, 12)
    );
    assert_eq!(
        (c.head_dim, c.num_key_value_heads),
        (16, 4),
        "the padded cache width"
    );
    // YaRN, factor 4: mscale(4, 0.8) = 1.1109; the softmax scale is 16^-0.5 * 1.1109^2.
    let m_all = 0.1 * 0.8 * 4f64.ln() + 1.0;
    assert!((a.softmax_scale as f64 - 0.25 * m_all * m_all).abs() < 1e-6);
    let attention_factor = (0.1 * 4f64.ln() + 1.0) / m_all;
    assert!((a.rope_attention_factor as f64 - attention_factor).abs() < 1e-6);
    assert!(a.rope_interleave && a.inv_freq.len() == 4);

    let v2 = TargetConfig::load_file(&committed("tiny-deepseek-v2")).unwrap();
    let m = v2.moe.as_ref().unwrap();
    assert_eq!(m.scoring, Scoring::Softmax);
    assert_eq!(m.grouping.unwrap().score, GroupScore::Max);
    assert!(!m.correction_bias && v2.mla.as_ref().unwrap().q_lora_rank.is_none());
    let q = TargetConfig::load_file(&committed("tiny-qwen3-moe")).unwrap();
    assert_eq!(
        q.moe.as_ref().unwrap().sparse_layers,
        vec![false, true, true, true],
        "mlp_only_layers = [0]"
    );
    assert!(q.mla.is_none() && q.family.has_qk_norm());
}

#[test]
fn impossible_routing_is_one_error_naming_the_field() {
    refused(
        edited("tiny-deepseek-v3", |v| v["n_group"] = 3.into()),
        "n_group",
        "does not divide",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["topk_group"] = 5.into()),
        "topk_group",
        "n_group = 4",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["n_group"] = 8.into()),
        "n_group",
        "at least 2 experts",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["topk_group"] = 1.into()),
        "topk_group",
        "fewer than",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["num_experts_per_tok"] = 9.into()),
        "num_experts_per_tok",
        "more than",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["scoring_func"] = "softmax".into()),
        "scoring_func",
        "sigmoid",
    );
    refused(
        edited("tiny-deepseek-v3", |v| {
            v["routed_scaling_factor"] = (-1.0).into()
        }),
        "routed_scaling_factor",
        "above 0",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["moe_layer_freq"] = 0.into()),
        "moe_layer_freq",
        "at least 1",
    );
    refused(
        edited("tiny-deepseek-v3", |v| {
            v["n_routed_experts"] = "eight".into()
        }),
        "n_routed_experts",
        "whole number",
    );
    refused(
        edited("tiny-deepseek-v2", |v| v["topk_method"] = "noaux_tc".into()),
        "topk_method",
        "greedy",
    );
    refused(
        edited("tiny-qwen3-moe", |v| v["decoder_sparse_step"] = 0.into()),
        "decoder_sparse_step",
        "at least 1",
    );
    refused(
        edited("tiny-qwen3-moe", |v| v["mlp_only_layers"] = "0".into()),
        "mlp_only_layers",
        "list",
    );
}

#[test]
fn impossible_attention_is_one_error_naming_the_field() {
    refused(
        edited("tiny-deepseek-v3", |v| v["qk_rope_head_dim"] = 7.into()),
        "qk_rope_head_dim",
        "odd",
    );
    refused(
        edited("tiny-deepseek-v3", |v| v["kv_lora_rank"] = 0.into()),
        "kv_lora_rank",
        "greater than 0",
    );
    refused(
        edited("tiny-deepseek-v3", |v| {
            v["rope_scaling"]["type"] = "longrope".into()
        }),
        "rope_scaling.rope_type",
        "yarn",
    );
    refused(
        edited("tiny-deepseek-v3", |v| {
            v["rope_scaling"]["factor"] = 0.into()
        }),
        "rope_scaling.factor",
        "above 0",
    );
    refused(
        edited("tiny-deepseek-v3", |v| {
            v["rope_scaling"]["original_max_position_embeddings"] = 0.into()
        }),
        "rope_scaling.original_max_position_embeddings",
        "at least 1",
    );
}

#[test]
fn a_wrapper_of_no_supported_family_is_refused_and_names_what_it_holds() {
    refused(
        edited("tiny-kimi-k25", |v| {
            v["text_config"]["architectures"] = serde_json::json!(["MambaForCausalLM"]);
            v["text_config"]["model_type"] = "mamba".into();
        }),
        "text_config.architectures",
        "MambaForCausalLM",
    );
    // The eos id and dtype fall back to the wrapper's own.
    let c = edited("tiny-kimi-k25", |v| {
        let t = v["text_config"].as_object_mut().unwrap();
        t.remove("eos_token_id");
        t.remove("torch_dtype");
        v["eos_token_id"] = 7.into();
    })
    .unwrap();
    assert_eq!(
        (c.eos_token_ids.clone(), c.dtype.as_str()),
        (vec![7], "bfloat16")
    );
}

#[test]
fn a_quantized_checkpoint_is_refused_not_read_as_floats() {
    let fp8 =
        serde_json::json!({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]});
    refused(
        edited("tiny-deepseek-v3", |v| {
            v["quantization_config"] = fp8.clone()
        }),
        "quantization_config",
        "\"fp8\"",
    );
    let int4 =
        serde_json::json!({"quant_method": "compressed-tensors", "format": "pack-quantized"});
    refused(
        edited("tiny-kimi-k25", |v| {
            v["text_config"]["quantization_config"] = int4.clone()
        }),
        "text_config.quantization_config",
        "dequantized copy",
    );
    assert!(edited("tiny-deepseek-v3", |v| v["quantization_config"] =
        serde_json::Value::Null)
    .is_ok());
}
