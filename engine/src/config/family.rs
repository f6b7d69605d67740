//! The model families the engine runs, by Hugging Face architecture name.

/// Model family, which fixes the few architectural differences the engine handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Family {
    /// `LlamaForCausalLM` (Llama 2/3.x; optional `attention_bias`, llama3 RoPE scaling).
    Llama,
    /// `Qwen2ForCausalLM`: biases on q, k and v.
    Qwen2,
    /// `Qwen3ForCausalLM`: RMSNorm on q and k per head.
    Qwen3,
    /// `Qwen3MoeForCausalLM`: Qwen3 attention, softmax top-k experts.
    Qwen3Moe,
    /// `DeepseekV2ForCausalLM`: latent attention, softmax-routed experts.
    DeepseekV2,
    /// `DeepseekV3ForCausalLM` (and Kimi K2/K2.5's language model): latent
    /// attention, sigmoid-routed experts with a correction bias.
    DeepseekV3,
}

impl Family {
    pub(super) const NAMES: [(&'static str, Family); 6] = [
        ("LlamaForCausalLM", Family::Llama),
        ("Qwen2ForCausalLM", Family::Qwen2),
        ("Qwen3ForCausalLM", Family::Qwen3),
        ("Qwen3MoeForCausalLM", Family::Qwen3Moe),
        ("DeepseekV2ForCausalLM", Family::DeepseekV2),
        ("DeepseekV3ForCausalLM", Family::DeepseekV3),
    ];

    /// Whether its layers are anything but dense grouped-query attention and
    /// a gated MLP (latent attention or experts), which only the CPU backend runs.
    pub fn is_sparse_or_latent(self) -> bool {
        matches!(
            self,
            Family::Qwen3Moe | Family::DeepseekV2 | Family::DeepseekV3
        )
    }

    /// Whether the attention takes RMSNorm of q and k per head (Qwen3, Qwen3-MoE).
    pub fn has_qk_norm(self) -> bool {
        matches!(self, Family::Qwen3 | Family::Qwen3Moe)
    }

    /// The Hugging Face architecture name.
    pub fn architecture(self) -> &'static str {
        Family::NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// The family of an architecture name, if supported.
    pub fn from_architecture(name: &str) -> Option<Family> {
        Family::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }
}
