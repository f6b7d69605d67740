//! The GPU backend: the target and EAGLE-3 draft forwards on an NVIDIA GPU
//! with the project's CUDA kernels (NVRTC at run time) and cuBLAS, in bf16
//! or f32, KV pools on the device, and spans timed with CUDA events.

mod draft;
mod draft_forward;
mod forward;
mod graph;
mod kv_pool;
mod pair;
mod profile;
mod recorder;
mod target;
mod weights;

pub use draft::GpuDraft;
pub use kv_pool::GpuCache;
pub use pair::{GpuDtype, GpuModels, GpuPair};
pub use profile::take_profile;
pub use recorder::GpuRecorder;
pub use specula_kernels::cuda::{Gpu, INVARIANT_MAX_ROWS};
pub use target::GpuTarget;

use crate::config::{DraftConfig, TargetConfig};
use std::path::PathBuf;

/// Sizes of the device KV pools.
#[derive(Debug, Clone, Copy)]
pub struct GpuOptions {
    /// Sequences that can be live at once.
    pub slots: usize,
    /// KV entries per sequence (prompt + output + one draft tree).
    pub capacity: usize,
    /// Replay decode and draft forwards of up to `INVARIANT_MAX_ROWS` rows as CUDA graphs.
    pub graphs: bool,
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions {
            slots: 16,
            capacity: 2048,
            graphs: true,
        }
    }
}

/// The EAGLE-3 draft shape SpecForge trains for `target`: one decoder layer
/// of the target's width, heads and MLP, a draft vocabulary of at most
/// 32000 tokens (for `--random-weights` runs without a draft checkpoint).
pub fn default_draft_config(target: &TargetConfig) -> DraftConfig {
    DraftConfig {
        path: PathBuf::from(format!("{} (random EAGLE-3 draft)", target.path.display())),
        hidden_size: target.hidden_size,
        target_hidden_size: target.hidden_size,
        intermediate_size: target.intermediate_size,
        num_attention_heads: target.num_attention_heads,
        num_key_value_heads: target.num_key_value_heads,
        head_dim: target.head_dim,
        rms_norm_eps: target.rms_norm_eps,
        rope_theta: target.rope_theta,
        vocab_size: target.vocab_size,
        draft_vocab_size: target.vocab_size.min(32_000),
        aux_layer_ids: None,
    }
}
