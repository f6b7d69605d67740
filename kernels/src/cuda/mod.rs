//! CUDA kernels compiled at run time by NVRTC for the device's architecture,
//! launched through cudarc (dynamic loading: nothing CUDA is needed to build),
//! with GEMMs through cuBLAS and timing through CUDA events.
//!
//! One op family per file pair: its kernels in `NAME.cu`, their launch
//! wrappers in `NAME.rs` beside it, and its checks in `check/NAME.rs`.
//!
//! - `prelude.cu`: what every kernel file uses (bf16, loads and stores in
//!   float, programmatic dependent launch, block reductions, the macros that
//!   declare a kernel in f32 and bf16); `device.rs` concatenates it first,
//!   then the op families, into the one source NVRTC compiles.
//! - `copy`: embedding gather, column copies, the KV compaction.
//! - `convert`: checkpoint weights (f32, bf16, f16) converted and placed
//!   into fused layouts on the device (the loader's last step).
//! - `norm`: RMSNorm with the residual add fused.
//! - `rope`: rotary embeddings, alone and fused with the q/k/v split and KV append.
//! - `activation`: SiLU-and-multiply, split or fused gate|up.
//! - `select`: argmax (per row and split), top-k, top-k log-probabilities.
//! - `verify`: greedy tree verification.
//! - `random`: device-side random fills.
//! - `linear` (`linear_fma.cu`, `linear_mma.cu`, `linear_bias.cu`): the
//!   batch-invariant linear in FMA and on tensor cores (one token tile
//!   with weights straight into registers; `linear_tiles` for more rows,
//!   tiles through shared memory, k slices summed by a cluster), cuBLAS
//!   for long prefills with its bias pass.
//! - `attention`: the attention launch over per-row key lists
//!   (`attention_plan.rs` sorts rows into prefill tiles and tree groups):
//!   flash prefill (`flash_prefill.cu`) for causal rows, the tree kernel
//!   (`tree_attention.cu`, tensor-core pieces in `att_tile.cu`) or split-K
//!   (`attention.cu`) for decode and verification rows.
//! - `mla`, `mla_attention`: latent attention (DeepSeek, Kimi) in the
//!   absorbed form over a compressed cache: entry and query preparation,
//!   per-head absorbed products (`mla`); split-K attention in FMA or on
//!   tensor cores (`mla_attention`, its scratch `mla_scratch`, the forms of
//!   its tail the engine picks `mla_forms`).
//! - `moe`: mixture of experts: router logits and routing on the device,
//!   grouped expert products over the routed experts only, the combine.
//!
//! Beside them: `device.rs` (opening the device, compiling the source,
//! element types, event timers), `launch.rs` (the one launch path, as a
//! programmatic dependent, and the wrappers' shared helpers), [`check`] (every
//! kernel against its CPU reference, the device's ceilings), [`timing`]
//! (per-kernel timings on a model shape), [`split_sweep`] (the small-row
//! linear in every form), [`attention_timing`] (decode and verify
//! attention at long contexts, each kernel), [`mla_timing`] (the latent
//! attention alone, each form and split rule), [`wgmma_bits`] (whether
//! warpgroup mma gives the small-row linear's bits: its own sm_90a source)
//! and [`wg_timing`] (the warpgroup-mma linear in every layout timed against
//! the engine's other forms).

mod activation;
mod attention;
mod attention_plan;
pub mod attention_timing;
pub mod check;
mod convert;
mod copy;
mod device;
mod flash_attention;
mod hold;
pub mod kernel_cache;
mod launch;
mod linear;
mod linear_rope;
mod linear_tiles;
mod linear_wg;
mod mla;
mod mla_attention;
mod mla_forms;
mod mla_launch;
mod mla_scratch;
pub mod mla_timing;
mod mma_switches;
mod moe;
mod moe_forms;
mod moe_plan;
mod moe_route;
mod norm;
mod random;
mod rope;
mod select;
pub mod split_sweep;
mod staged_words;
pub mod stamps;
pub mod timing;
mod verify;
pub mod wg_timing;
pub mod wgmma_bits;

pub use activation::*;
pub use attention::*;
pub use attention_plan::*;
pub use convert::*;
pub use copy::*;
pub use device::{Gpu, GpuElement, GpuError, GpuTimer, SmallRowLinear, SOURCE};
pub use flash_attention::{uses_tree_kernel, TreeStages};
pub use hold::{hold_stream, launch_link};
pub use linear::*;
pub use linear_rope::{qkv_rope_fused, RopeAppend, QKV_ROPE_MAX_ROWS};
pub use linear_wg::{linear_wg, wg_producer, LinearWg};
pub use mla::*;
pub use mla_attention::*;
pub use mla_forms::{
    mla_merge, mla_uv_place, MlaAttentionForms, MlaMerge, MlaUvPlace, MLA_CLUSTER_SPLITS,
};
pub use mla_scratch::{MlaScratch, MLA_SCRATCH_BYTES};
pub use mma_switches::{
    mma_eight_tiles, mma_in_order_tiles, mma_pipelined_groups, mma_pipelined_rows, EightTiles,
};
pub use moe::*;
pub use moe_forms::{moe_l2, one_row_routing, MoeL2, OneRowRouting, MOE_ROUTE_CLUSTER};
pub use moe_plan::{moe_routes, MoePlan, RouterSpec};
pub use moe_route::*;
pub use norm::*;
pub use random::*;
pub use rope::*;
pub use select::*;
pub use staged_words::{StagedWords, Word, WordField};
pub use verify::*;
