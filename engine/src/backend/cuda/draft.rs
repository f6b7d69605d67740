//! The EAGLE-3 draft on the GPU: `fc` over the target's aux states, one
//! midlayer over `cat(input_layernorm(embed), hidden_norm(hidden))`, the
//! final norm and the reduced-vocabulary LM head.

use super::forward::{block_forward, BatchOnDevice, Scratch};
use super::kv_pool::{GpuCache, KvPool};
use super::profile::OpClock;
use super::weights::{download, upload, DeviceBlock, DeviceLinear, DeviceNorm, Seeds};
use super::GpuOptions;
use crate::backend::DraftBackend;
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::{DraftOutput, Eagle3Draft, ForwardBatch, HiddenInput, AUX_STATES};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::Rope;
use specula_kernels::cuda::{
    copy_cols, embedding_gather, rms_norm_residual, top_k_logprobs, Gpu, GpuElement, QkvLayout,
};
use std::cell::RefCell;
use std::sync::Arc;

/// An EAGLE-3 draft on the GPU with its KV pool.
pub struct GpuDraft<T: GpuElement> {
    gpu: Arc<Gpu>,
    config: DraftConfig,
    embed: Arc<CudaSlice<T>>,
    fc: DeviceLinear<T>,
    input_norm: DeviceNorm<T>,
    hidden_norm: DeviceNorm<T>,
    block: DeviceBlock<T>,
    norm: DeviceNorm<T>,
    lm_head: DeviceLinear<T>,
    d2t: Vec<u32>,
    inv_freq: CudaSlice<f32>,
    pool: RefCell<KvPool<T>>,
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
        target: &TargetConfig,
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
            target,
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
        Self::assemble(gpu, config, target_embed, parts, d2t, target, opts)
    }

    fn assemble(
        gpu: Arc<Gpu>,
        config: DraftConfig,
        embed: Arc<CudaSlice<T>>,
        p: DraftParts<T>,
        d2t: Vec<u32>,
        target: &TargetConfig,
        opts: &GpuOptions,
    ) -> Result<GpuDraft<T>> {
        let c = &config;
        let rope = Rope::new(c.head_dim, c.rope_theta, target.rope_scaling);
        let inv_freq = gpu.stream.clone_htod(rope.inv_freq())?;
        let pool = KvPool::new(
            &gpu,
            1,
            opts.slots,
            opts.capacity,
            c.num_key_value_heads * c.head_dim,
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
            pool: RefCell::new(pool),
        })
    }

    /// Bytes of weights one draft forward over aux states reads.
    pub fn weight_bytes(&self) -> usize {
        self.fc.bytes() + self.block.bytes() + self.lm_head.bytes()
    }
}

struct DraftParts<T> {
    fc: DeviceLinear<T>,
    input_norm: DeviceNorm<T>,
    hidden_norm: DeviceNorm<T>,
    block: DeviceBlock<T>,
    norm: DeviceNorm<T>,
    lm_head: DeviceLinear<T>,
}

impl<T: GpuElement> DraftBackend for GpuDraft<T>
where
    CudaBlas: Gemm<T>,
{
    type Cache = GpuCache;

    fn config(&self) -> &DraftConfig {
        &self.config
    }

    fn draft_to_target(&self) -> &[u32] {
        &self.d2t
    }

    fn new_cache(&self) -> Result<GpuCache> {
        self.pool.borrow_mut().take()
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [GpuCache],
        top_k: Option<usize>,
    ) -> Result<DraftOutput> {
        let gpu = &*self.gpu;
        let h = self.config.hidden_size;
        let mut pool = self.pool.borrow_mut();
        let b = BatchOnDevice::upload(gpu, batch, caches, &pool)?;
        let rows = b.rows;
        let s = &gpu.stream;
        let mut x = unsafe { s.alloc::<T>(rows * h) }?;
        match hidden {
            HiddenInput::Aux(a) => {
                let a = upload::<T>(gpu, a)?;
                self.fc.forward(gpu, &mut x, &a, rows)?;
            }
            HiddenInput::Own(g) => x = upload(gpu, g)?,
        }
        if x.len() != rows * h {
            return Err(EngineError::setting(
                "draft hidden input",
                format!("{} values for {rows} rows of {h}", x.len()),
            ));
        }
        let mut e = unsafe { s.alloc::<T>(rows * h) }?;
        embedding_gather(gpu, &mut e, &self.embed, &b.tokens, h)?;
        let mut tmp = unsafe { s.alloc::<T>(rows * h) }?;
        let mut cat = unsafe { s.alloc::<T>(rows * 2 * h) }?;
        let n = &self.input_norm;
        rms_norm_residual(gpu, &mut tmp, &mut e, None, &n.w, n.eps, h)?;
        copy_cols(gpu, &mut cat, &tmp, rows, h, 2 * h, 0)?;
        let n = &self.hidden_norm;
        rms_norm_residual(gpu, &mut tmp, &mut x, None, &n.w, n.eps, h)?;
        copy_cols(gpu, &mut cat, &tmp, rows, h, 2 * h, h)?;
        let mut sc = Scratch::new(gpu, &b, &self.block, h)?;
        block_forward(
            gpu,
            &self.block,
            &mut x,
            &cat,
            &b,
            &mut pool,
            0,
            &self.inv_freq,
            &mut sc,
            &mut OpClock::off(),
        )?;
        let n = &self.norm;
        rms_norm_residual(gpu, &mut tmp, &mut x, Some(&sc.mlp), &n.w, n.eps, h)?;
        let nl = b.n_logits;
        let mut last = unsafe { s.alloc::<T>(nl.max(1) * h) }?;
        embedding_gather(gpu, &mut last, &tmp, &b.logit_rows, h)?;
        let dv = self.config.draft_vocab_size;
        let mut logits = unsafe { s.alloc::<T>(nl.max(1) * dv) }?;
        self.lm_head.forward(gpu, &mut logits, &last, nl.max(1))?;
        let hidden = download(gpu, &x)?;
        match top_k.filter(|&k| (1..=32).contains(&k) && k <= dv) {
            Some(k) => {
                let mut idx = s.alloc_zeros::<i32>(nl.max(1) * k)?;
                let mut lp = s.alloc_zeros::<f32>(nl.max(1) * k)?;
                top_k_logprobs(gpu, &mut idx, &mut lp, &logits, nl.max(1), dv, k)?;
                let (idx, lp) = (s.clone_dtoh(&idx)?, s.clone_dtoh(&lp)?);
                let top = (0..nl)
                    .map(|r| {
                        (r * k..(r + 1) * k)
                            .map(|j| (idx[j] as usize, lp[j]))
                            .collect()
                    })
                    .collect();
                Ok(DraftOutput {
                    hidden,
                    logits: Vec::new(),
                    top,
                })
            }
            None => {
                let mut logits = download(gpu, &logits)?;
                logits.truncate(nl * dv);
                Ok(DraftOutput {
                    hidden,
                    logits,
                    top: Vec::new(),
                })
            }
        }
    }

    fn commit_all(&self, cache: &mut GpuCache) {
        cache.committed = cache.len;
    }

    fn rollback(&self, cache: &mut GpuCache) {
        cache.len = cache.committed;
    }

    fn release(&self, cache: GpuCache) {
        self.pool.borrow_mut().give_back(cache);
    }
}
