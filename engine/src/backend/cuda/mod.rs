//! The GPU backend: the target and EAGLE-3 draft forwards on an NVIDIA GPU
//! with the project's CUDA kernels (NVRTC at run time) and cuBLAS, in bf16
//! or f32, KV pools on the device, and spans timed with CUDA events. Targets
//! of every family: grouped-query or latent attention (the absorbed form
//! over a compressed cache), dense MLPs or experts (`layers.rs`).

mod batch;
mod device_rows;
mod draft;
mod draft_forward;
mod experts_forward;
mod forward;
mod graph;
mod kv_pool;
mod layers;
mod load;
mod load_model;
mod pair;
mod profile;
mod recorder;
mod shared_experts;
mod sparse_forward;
mod sparse_weights;
mod target;
mod upload;
mod weights;

pub use draft::GpuDraft;
pub use graph::GraphLaunches;
pub use kv_pool::GpuCache;
pub use pair::{GpuDtype, GpuModels, GpuPair};
pub use profile::take_profile;
pub use recorder::GpuRecorder;
pub use specula_kernels::cuda::{
    invariant_linear_rows, Gpu, INVARIANT_MAX_ROWS, LINEAR_INVARIANT_MAX_ROWS,
};
pub use target::GpuTarget;
pub use upload::{LoadOptions, LoadStats};

pub use crate::config::default_draft_config;

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
