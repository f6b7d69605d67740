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

/// The config.json fields of released models (DeepSeek-V2-Lite,
/// Moonlight-16B-A3B, Qwen3-30B-A3B) that decide their layers.
#[test]
fn released_single_gpu_configs_are_read() {
    let path = Path::new("released/config.json");
    let v2_lite = serde_json::json!({
        "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
        "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
        "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
        "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
        "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
        "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": false,
        "routed_scaling_factor": 1.0, "q_lora_rank": null, "kv_lora_rank": 512,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "max_position_embeddings": 163840, "rope_theta": 10000, "rms_norm_eps": 1e-6,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
            "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "type": "yarn"},
        "vocab_size": 102400, "bos_token_id": 100000, "eos_token_id": 100001,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16"
    });
    let c = TargetConfig::from_json(path, &v2_lite).unwrap();
    let (m, a) = (c.moe.as_ref().unwrap(), c.mla.as_ref().unwrap());
    assert!(m.grouping.is_none() && m.scoring == Scoring::Softmax && a.q_lora_rank.is_none());
    assert_eq!(
        (c.head_dim, m.sparse_layers.iter().filter(|s| **s).count()),
        (192, 26)
    );
    let mscale = 0.1 * 0.707 * 40f64.ln() + 1.0;
    assert!((a.softmax_scale as f64 - mscale * mscale / 192f64.sqrt()).abs() < 1e-6);
    assert!(
        (a.rope_attention_factor - 1.0).abs() < 1e-6,
        "mscale = mscale_all_dim"
    );

    let mut moonlight = v2_lite.clone();
    let o = moonlight.as_object_mut().unwrap();
    o.insert(
        "architectures".into(),
        serde_json::json!(["DeepseekV3ForCausalLM"]),
    );
    o.insert("model_type".into(), "deepseek_v3".into());
    o.insert("topk_method".into(), "noaux_tc".into());
    o.insert("scoring_func".into(), "sigmoid".into());
    o.insert("norm_topk_prob".into(), true.into());
    o.insert("routed_scaling_factor".into(), 2.446.into());
    o.insert("rope_scaling".into(), serde_json::Value::Null);
    o.insert("max_position_embeddings".into(), 8192.into());
    let c = TargetConfig::from_json(path, &moonlight).unwrap();
    let (m, a) = (c.moe.as_ref().unwrap(), c.mla.as_ref().unwrap());
    assert!(m.correction_bias && m.scoring == Scoring::Sigmoid && m.norm_topk_prob);
    assert_eq!(m.grouping.unwrap().n_group, 1);
    assert!((a.softmax_scale as f64 - 1.0 / 192f64.sqrt()).abs() < 1e-7 && a.rope_interleave);

    let qwen3_moe = serde_json::json!({
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
        "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": true,
        "rope_theta": 1000000.0, "rope_scaling": null, "max_position_embeddings": 40960,
        "rms_norm_eps": 1e-6, "vocab_size": 151936, "eos_token_id": 151645,
        "tie_word_embeddings": false, "attention_bias": false, "torch_dtype": "bfloat16"
    });
    let c = TargetConfig::from_json(path, &qwen3_moe).unwrap();
    let m = c.moe.as_ref().unwrap();
    assert!(m.sparse_layers.iter().all(|s| *s) && m.n_shared_experts == 0 && c.mla.is_none());
    assert_eq!((c.head_dim, c.num_key_value_heads), (128, 4));
}
