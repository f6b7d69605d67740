//! Mixture-of-experts settings of a target config (DeepSeek V2/V3, Kimi,
//! Qwen3-MoE), read from `config.json` as transformers reads them.

use super::bounds::{above_zero, width};
use super::target::Family;
use crate::error::{EngineError, Result};
use serde_json::Value;
use std::path::Path;

/// How router logits become expert scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Scoring {
    /// Softmax over all routed experts (DeepSeek-V2, Qwen3-MoE).
    Softmax,
    /// A sigmoid per expert (DeepSeek-V3, Kimi).
    Sigmoid,
}

/// How a group of experts is scored for group-limited selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum GroupScore {
    /// Its highest expert score (DeepSeek-V2 `group_limited_greedy`).
    Max,
    /// The sum of its two highest (bias-corrected) scores (DeepSeek-V3).
    TopTwoSum,
}

/// Group-limited top-k: only experts of the `topk_group` best of `n_group`
/// equal groups are candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Grouping {
    /// Groups the routed experts are split into (`n_group`).
    pub n_group: usize,
    /// Groups kept per token (`topk_group`).
    pub topk_group: usize,
    /// How a group is scored.
    pub score: GroupScore,
}

/// The MoE feed-forward of a target.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MoeConfig {
    /// Routed experts (`n_routed_experts`, Qwen3-MoE `num_experts`).
    pub n_routed_experts: usize,
    /// Experts each token is sent to (`num_experts_per_tok`).
    pub top_k: usize,
    /// Inner width of one routed expert (`moe_intermediate_size`).
    pub moe_intermediate_size: usize,
    /// Shared experts (`n_shared_experts`; 0 = none): one MLP of width
    /// `moe_intermediate_size * n_shared_experts` every token goes through.
    pub n_shared_experts: usize,
    /// Router score function.
    pub scoring: Scoring,
    /// Group-limited selection, if any.
    pub grouping: Option<Grouping>,
    /// Whether the router holds `e_score_correction_bias` (added to the
    /// scores for selection only).
    pub correction_bias: bool,
    /// Whether the chosen weights are renormalised to sum to 1.
    pub norm_topk_prob: bool,
    /// Factor on the routed experts' weights (`routed_scaling_factor`).
    pub routed_scaling_factor: f32,
    /// Per decoder layer: whether it is an MoE layer (else a dense MLP of
    /// `intermediate_size`).
    pub sparse_layers: Vec<bool>,
}

impl MoeConfig {
    /// Routed experts a forward of `tokens` rows touches per MoE layer, in
    /// expectation, when every token is routed independently and no expert
    /// is favoured: each expert is one of a token's `top_k` with chance
    /// `top_k / n_routed_experts` (by symmetry, with or without groups), so
    /// it is missed by all `tokens` with chance `(1 - top_k / n)^tokens`.
    /// The yardstick for a forward's measured count: a real router whose
    /// tokens share experts touches fewer (and reads fewer bytes).
    pub fn uniform_experts(&self, tokens: usize) -> f64 {
        let n = self.n_routed_experts as f64;
        n * (1.0 - (1.0 - self.top_k as f64 / n).powi(tokens.min(i32::MAX as usize) as i32))
    }
}

/// `key` of `obj` as a count (`None` when absent or null).
pub(super) fn count(path: &Path, obj: &Value, key: &str) -> Result<Option<usize>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| EngineError::config(path, key, "must be a whole number")),
    }
}

/// `key` of `obj` as a number (`None` when absent or null).
pub(super) fn number(path: &Path, obj: &Value, key: &str) -> Result<Option<f64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| EngineError::config(path, key, "must be a number")),
    }
}

/// `key` of `obj` as a boolean (`None` when absent or null).
pub(super) fn flag(path: &Path, obj: &Value, key: &str) -> Result<Option<bool>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| EngineError::config(path, key, "must be true or false")),
    }
}

fn required(path: &Path, obj: &Value, key: &str) -> Result<usize> {
    width(path, key, count(path, obj, key)?)
}

/// Reads the MoE settings of a `family` config `obj` with `layers` decoder
/// layers; `None` for a dense family.
pub(super) fn parse(
    path: &Path,
    obj: &Value,
    family: Family,
    layers: usize,
) -> Result<Option<MoeConfig>> {
    let deepseek = matches!(family, Family::DeepseekV2 | Family::DeepseekV3);
    if !deepseek && family != Family::Qwen3Moe {
        return Ok(None);
    }
    let experts_key = if deepseek {
        "n_routed_experts"
    } else {
        "num_experts"
    };
    let n_routed_experts = required(path, obj, experts_key)?;
    let top_k = required(path, obj, "num_experts_per_tok")?;
    if top_k > n_routed_experts {
        return Err(EngineError::config(
            path,
            "num_experts_per_tok",
            format!("{top_k} is more than the {n_routed_experts} experts"),
        ));
    }
    let moe_intermediate_size = required(path, obj, "moe_intermediate_size")?;
    let scale = number(path, obj, "routed_scaling_factor")?.unwrap_or(1.0) as f32;
    let routed_scaling_factor = above_zero(path, "routed_scaling_factor", scale)?;
    let mut m = MoeConfig {
        n_routed_experts,
        top_k,
        moe_intermediate_size,
        n_shared_experts: 0,
        scoring: Scoring::Softmax,
        grouping: None,
        correction_bias: false,
        norm_topk_prob: false,
        routed_scaling_factor,
        sparse_layers: vec![true; layers],
    };
    if family == Family::Qwen3Moe {
        m.norm_topk_prob = flag(path, obj, "norm_topk_prob")?.unwrap_or(false);
        m.routed_scaling_factor = 1.0;
        let step = count(path, obj, "decoder_sparse_step")?.unwrap_or(1);
        if step == 0 {
            return Err(EngineError::config(
                path,
                "decoder_sparse_step",
                "must be at least 1",
            ));
        }
        let dense: Vec<u64> = match obj.get("mlp_only_layers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_u64())
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    EngineError::config(path, "mlp_only_layers", "must be a list of layer indices")
                })?,
            Some(_) => {
                return Err(EngineError::config(
                    path,
                    "mlp_only_layers",
                    "must be a list of layer indices",
                ))
            }
        };
        for (l, sparse) in m.sparse_layers.iter_mut().enumerate() {
            *sparse = !dense.contains(&(l as u64)) && (l + 1) % step == 0;
        }
        return Ok(Some(m));
    }
    m.n_shared_experts = count(path, obj, "n_shared_experts")?.unwrap_or(0);
    let first_dense = count(path, obj, "first_k_dense_replace")?.unwrap_or(0);
    let freq = count(path, obj, "moe_layer_freq")?.unwrap_or(1);
    if freq == 0 {
        return Err(EngineError::config(
            path,
            "moe_layer_freq",
            "must be at least 1",
        ));
    }
    for (l, sparse) in m.sparse_layers.iter_mut().enumerate() {
        *sparse = l >= first_dense && l % freq == 0;
    }
    let groups = |score| -> Result<Option<Grouping>> {
        let n_group = count(path, obj, "n_group")?.unwrap_or(1).max(1);
        let topk_group = count(path, obj, "topk_group")?.unwrap_or(n_group);
        if n_routed_experts % n_group != 0 {
            return Err(EngineError::config(
                path,
                "n_group",
                format!("{n_group} does not divide the {n_routed_experts} routed experts"),
            ));
        }
        if topk_group == 0 || topk_group > n_group {
            return Err(EngineError::config(
                path,
                "topk_group",
                format!("{topk_group} (must be 1 to n_group = {n_group})"),
            ));
        }
        if score == GroupScore::TopTwoSum && n_routed_experts / n_group < 2 {
            return Err(EngineError::config(
                path,
                "n_group",
                "groups must hold at least 2 experts (a group's score sums its top two)",
            ));
        }
        if topk_group * (n_routed_experts / n_group) < top_k {
            return Err(EngineError::config(
                path,
                "topk_group",
                format!(
                    "{topk_group} groups hold fewer than num_experts_per_tok = {top_k} experts"
                ),
            ));
        }
        Ok(Some(Grouping {
            n_group,
            topk_group,
            score,
        }))
    };
    if family == Family::DeepseekV3 {
        m.scoring = Scoring::Sigmoid;
        m.correction_bias = true;
        m.norm_topk_prob = flag(path, obj, "norm_topk_prob")?.unwrap_or(true);
        m.grouping = groups(GroupScore::TopTwoSum)?;
        if let Some(Value::String(s)) = obj.get("scoring_func") {
            if s != "sigmoid" {
                return Err(EngineError::config(
                    path,
                    "scoring_func",
                    format!("{s:?}: DeepseekV3ForCausalLM scores experts with a sigmoid"),
                ));
            }
        }
    } else {
        let method = obj
            .get("topk_method")
            .and_then(Value::as_str)
            .unwrap_or("greedy");
        m.grouping = match method {
            "greedy" => None,
            "group_limited_greedy" => groups(GroupScore::Max)?,
            other => {
                return Err(EngineError::config(
                    path,
                    "topk_method",
                    format!("{other:?} (DeepseekV2ForCausalLM: greedy or group_limited_greedy)"),
                ))
            }
        };
    }
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use crate::config::TargetConfig;
    use serde_json::Value;

    /// Every `bench/configs/*.json` of the DeepSeek family (the shapes
    /// `specula gpu bench --config` measures) loads, with the routing and
    /// latent-attention settings its file states.
    #[test]
    fn the_bench_configs_load_with_the_experts_and_layers_their_files_state() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/configs");
        let mut deepseek = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let c = TargetConfig::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let field = |k: &str| json[k].as_u64().map(|v| v as usize);
            assert_eq!(Some(c.num_hidden_layers), field("num_hidden_layers"));
            let Some(experts) = field("n_routed_experts") else {
                assert!(c.moe.is_none(), "{}", path.display());
                continue;
            };
            deepseek += 1;
            let m = c.moe.as_ref().expect("a config with routed experts");
            assert_eq!(m.n_routed_experts, experts, "{}", path.display());
            assert_eq!(Some(m.top_k), field("num_experts_per_tok"));
            let dense = field("first_k_dense_replace").unwrap();
            let sparse = m.sparse_layers.iter().filter(|&&s| s).count();
            assert_eq!(sparse, c.num_hidden_layers - dense, "{}", path.display());
            let groups = field("n_group").unwrap();
            let read = m.grouping.map_or(1, |g| g.n_group);
            assert_eq!(read, groups, "{}", path.display());
            let mla = c.mla.as_ref().expect("latent attention");
            assert_eq!(mla.q_lora_rank, field("q_lora_rank"), "{}", path.display());
        }
        assert!(deepseek >= 4, "{deepseek} DeepSeek-family bench configs");
    }
}
