//! The EAGLE-3 draft on the GPU: `fc` over the target's aux states, one
//! midlayer over `cat(input_layernorm(embed), hidden_norm(hidden))`, the
//! final norm and the reduced-vocabulary LM head.

use super::device_rows::SharedRows;
use super::draft_forward::{DraftBuffers, DraftStepKey};
use super::graph::{Replays, GRAPH_EXTRA_PER_ROW};
use super::kv_pool::KvPool;
use super::weights::{upload, DeviceBlock, DeviceLinear, DeviceNorm, Seeds};
use super::GpuOptions;
use crate::capture::AUX_STATES;
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::draft_layout::check_eagle3_fits;
use crate::model::Eagle3Draft;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::Rope;
use specula_kernels::cuda::{Gpu, GpuElement, QkvLayout};
use std::cell::RefCell;
use std::sync::Arc;

/// An EAGLE-3 draft on the GPU with its KV pool.
pub struct GpuDraft<T: GpuElement> {
    pub(super) gpu: Arc<Gpu>,
    pub(super) config: DraftConfig,
    pub(super) embed: Arc<CudaSlice<T>>,
    pub(super) fc: DeviceLinear<T>,
    pub(super) input_norm: DeviceNorm<T>,
    pub(super) hidden_norm: DeviceNorm<T>,
    pub(super) block: DeviceBlock<T>,
    pub(super) norm: DeviceNorm<T>,
    pub(super) lm_head: DeviceLinear<T>,
    pub(super) d2t: Vec<u32>,
    pub(super) inv_freq: CudaSlice<f32>,
    pub(super) pool: RefCell<KvPool<T>>,
    pub(super) replays: Replays<DraftStepKey, T, DraftBuffers<T>>,
    /// The target's device aux store, read by `HiddenInput::AuxRows`
    /// (set by the pair that holds both).
    pub(super) target_aux: RefCell<Option<SharedRows<T>>>,
}

impl<T: GpuElement> GpuDraft<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU-loaded draft; `target_embed` is used when the draft
    /// shares the target's embedding (`shares_embedding`).
    pub fn from_cpu(
        gpu: Arc<Gpu>,
        cpu: &Eagle3Draft,
        target_embed: Arc<CudaSlice<T>>,
        shares_embedding: bool,
        opts: &GpuOptions,
    ) -> Result<GpuDraft<T>> {
        let embed = if shares_embedding {
            target_embed
        } else {
            Arc::new(upload(&gpu, &cpu.embed)?)
        };
        let parts = DraftParts {
            fc: DeviceLinear::upload(&gpu, &[&cpu.fc])?,
            input_norm: DeviceNorm::upload(&gpu, &cpu.input_norm)?,
            hidden_norm: DeviceNorm::upload(&gpu, &cpu.hidden_norm)?,
            block: DeviceBlock::upload(&gpu, &cpu.attn, &cpu.post_norm, &cpu.mlp)?,
            norm: DeviceNorm::upload(&gpu, &cpu.norm)?,
            lm_head: DeviceLinear::upload(&gpu, &[&cpu.lm_head])?,
        };
        Self::assemble(
            gpu,
            cpu.config().clone(),
            embed,
            parts,
            cpu.d2t.clone(),
            opts,
        )
    }

    /// Random weights for `config`'s shape (sharing the target's embedding),
    /// with a random one-to-one `d2t`.
    pub fn random(
        gpu: Arc<Gpu>,
        config: DraftConfig,
        target_embed: Arc<CudaSlice<T>>,
        target: &TargetConfig,
        seed: u64,
        opts: &GpuOptions,
    ) -> Result<GpuDraft<T>> {
        let c = &config;
        if c.hidden_size != target.hidden_size {
            return Err(EngineError::config(
                &c.path,
                "hidden_size",
                "a random draft shares the target's embedding: hidden sizes must agree",
            ));
        }
        check_eagle3_fits(c, target)?;
        let h = c.hidden_size;
        let mut seeds = Seeds(seed ^ 0xD2AF_7000);
        let layout = QkvLayout {
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        };
        let eps = c.rms_norm_eps;
        let parts = DraftParts {
            fc: DeviceLinear::random(&gpu, h, AUX_STATES * c.target_hidden_size, &mut seeds)?,
            input_norm: DeviceNorm::ones(&gpu, h, eps)?,
            hidden_norm: DeviceNorm::ones(&gpu, h, eps)?,
            block: DeviceBlock::random(
                &gpu,
                2 * h,
                h,
                c.intermediate_size,
                layout,
                eps,
                None,
                &mut seeds,
            )?,
            norm: DeviceNorm::ones(&gpu, h, eps)?,
            lm_head: DeviceLinear::random(&gpu, c.draft_vocab_size, h, &mut seeds)?,
        };
        // Draft ids spread evenly over the target vocabulary: one-to-one.
        let stride = (c.vocab_size / c.draft_vocab_size).max(1);
        let d2t = (0..c.draft_vocab_size)
            .map(|d| ((d * stride) % c.vocab_size) as u32)
            .collect();
        Self::assemble(gpu, config, target_embed, parts, d2t, opts)
    }

    /// Builds the draft from device weights loaded elsewhere (the checkpoint
    /// loader, `load_model.rs`): fc, input norm, hidden norm, midlayer,
    /// final norm and LM head.
    pub(super) fn from_device(
        gpu: Arc<Gpu>,
        config: DraftConfig,
        embed: Arc<CudaSlice<T>>,
        w: DraftWeights<T>,
        d2t: Vec<u32>,
        opts: &GpuOptions,
    ) -> Result<GpuDraft<T>> {
        let (fc, input_norm, hidden_norm, block, norm, lm_head) = w;
        let parts = DraftParts {
            fc,
            input_norm,
            hidden_norm,
            block,
            norm,
            lm_head,
        };
        Self::assemble(gpu, config, embed, parts, d2t, opts)
    }

    fn assemble(
        gpu: Arc<Gpu>,
        config: DraftConfig,
        embed: Arc<CudaSlice<T>>,
        p: DraftParts<T>,
        d2t: Vec<u32>,
        opts: &GpuOptions,
    ) -> Result<GpuDraft<T>> {
        let c = &config;
        let rope = Rope::new(c.head_dim, c.rope_theta, c.rope_scaling);
        let inv_freq = gpu.stream.clone_htod(rope.inv_freq())?;
        // Room past the target's capacity for a padded extend's dummy rows
        // (at most steps + 1 past a sequence's last entry; `extend_pad_rows`).
        let pool = KvPool::new(
            &gpu,
            1,
            opts.slots,
            opts.capacity + GRAPH_EXTRA_PER_ROW,
            c.num_key_value_heads * c.head_dim,
            false,
        )?;
        Ok(GpuDraft {
            gpu,
            config,
            embed,
            fc: p.fc,
            input_norm: p.input_norm,
            hidden_norm: p.hidden_norm,
            block: p.block,
            norm: p.norm,
            lm_head: p.lm_head,
            d2t,
            inv_freq,
            replays: Replays::new(opts.graphs, pool.capacity),
            pool: RefCell::new(pool),
            target_aux: RefCell::new(None),
        })
    }
}

/// The draft's device weights in [`GpuDraft::from_device`]'s order.
pub(super) type DraftWeights<T> = (
    DeviceLinear<T>,
    DeviceNorm<T>,
    DeviceNorm<T>,
    DeviceBlock<T>,
    DeviceNorm<T>,
    DeviceLinear<T>,
);

struct DraftParts<T> {
    fc: DeviceLinear<T>,
    input_norm: DeviceNorm<T>,
    hidden_norm: DeviceNorm<T>,
    block: DeviceBlock<T>,
    norm: DeviceNorm<T>,
    lm_head: DeviceLinear<T>,
}
