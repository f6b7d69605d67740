//! The target model on the GPU (Llama family): the CPU model's weights
//! uploaded as `T` (bf16 or f32), or random weights drawn on the device for
//! a config's shape.

use super::forward::{block_forward, BatchOnDevice, Scratch};
use super::kv_pool::{GpuCache, KvPool};
use super::profile::OpClock;
use super::weights::{download, upload, DeviceBlock, DeviceLinear, DeviceNorm, Seeds};
use super::GpuOptions;
use crate::backend::{LogitsWanted, TargetBackend};
use crate::config::{Family, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::{ForwardBatch, TargetModel, TargetOutput};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::Rope;
use specula_kernels::cuda::{
    argmax_split, copy_cols, embedding_gather, rms_norm_residual, ArgmaxScratch, Gpu, GpuElement,
    QkvLayout,
};
use std::cell::RefCell;
use std::sync::Arc;

struct DeviceLayer<T> {
    input_norm: DeviceNorm<T>,
    block: DeviceBlock<T>,
}

/// A target model on the GPU with its KV pool.
pub struct GpuTarget<T: GpuElement> {
    gpu: Arc<Gpu>,
    config: TargetConfig,
    embed: Arc<CudaSlice<T>>,
    layers: Vec<DeviceLayer<T>>,
    norm: DeviceNorm<T>,
    lm_head: DeviceLinear<T>,
    inv_freq: CudaSlice<f32>,
    pool: RefCell<KvPool<T>>,
}

fn llama_only(config: &TargetConfig) -> Result<()> {
    if config.family != Family::Llama {
        return Err(EngineError::config(
            &config.path,
            "architectures",
            format!(
                "{} runs on the CPU backend only; the GPU backend runs the Llama family",
                config.family.architecture()
            ),
        ));
    }
    Ok(())
}

impl<T: GpuElement> GpuTarget<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU-loaded target.
    pub fn from_cpu(gpu: Arc<Gpu>, cpu: &TargetModel, opts: &GpuOptions) -> Result<GpuTarget<T>> {
        let c = cpu.config().clone();
        llama_only(&c)?;
        let layers = cpu
            .layers
            .iter()
            .map(|l| {
                Ok(DeviceLayer {
                    input_norm: DeviceNorm::upload(&gpu, &l.input_norm)?,
                    block: DeviceBlock::upload(&gpu, &l.attn, &l.post_norm, &l.mlp)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let embed = Arc::new(upload(&gpu, &cpu.embed)?);
        let norm = DeviceNorm::upload(&gpu, &cpu.norm)?;
        let lm_head = DeviceLinear::upload(&gpu, &[&cpu.lm_head])?;
        Self::assemble(gpu, c, embed, layers, norm, lm_head, opts)
    }

    /// Random weights for `config`'s shape, drawn on the device from `seed`.
    pub fn random(
        gpu: Arc<Gpu>,
        config: TargetConfig,
        seed: u64,
        opts: &GpuOptions,
    ) -> Result<GpuTarget<T>> {
        llama_only(&config)?;
        let c = &config;
        let h = c.hidden_size;
        let mut seeds = Seeds(seed);
        let layout = QkvLayout {
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        };
        let layers = (0..c.num_hidden_layers)
            .map(|_| {
                Ok(DeviceLayer {
                    input_norm: DeviceNorm::ones(&gpu, h, c.rms_norm_eps)?,
                    block: DeviceBlock::random(
                        &gpu,
                        h,
                        h,
                        c.intermediate_size,
                        layout,
                        c.rms_norm_eps,
                        &mut seeds,
                    )?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let embed = Arc::new(super::weights::random(
            &gpu,
            c.vocab_size * h,
            seeds.next(),
            1.0,
            0.0,
        )?);
        let norm = DeviceNorm::ones(&gpu, h, c.rms_norm_eps)?;
        let lm_head = DeviceLinear::random(&gpu, c.vocab_size, h, &mut seeds)?;
        Self::assemble(gpu, config, embed, layers, norm, lm_head, opts)
    }

    fn assemble(
        gpu: Arc<Gpu>,
        config: TargetConfig,
        embed: Arc<CudaSlice<T>>,
        layers: Vec<DeviceLayer<T>>,
        norm: DeviceNorm<T>,
        lm_head: DeviceLinear<T>,
        opts: &GpuOptions,
    ) -> Result<GpuTarget<T>> {
        let c = &config;
        let rope = Rope::new(c.head_dim, c.rope_theta, c.rope_scaling);
        let inv_freq = gpu.stream.clone_htod(rope.inv_freq())?;
        let pool = KvPool::new(
            &gpu,
            c.num_hidden_layers,
            opts.slots,
            opts.capacity,
            c.num_key_value_heads * c.head_dim,
        )?;
        Ok(GpuTarget {
            gpu,
            config,
            embed,
            layers,
            norm,
            lm_head,
            inv_freq,
            pool: RefCell::new(pool),
        })
    }

    /// The device embedding table (shared with drafts that have none).
    pub fn embedding(&self) -> Arc<CudaSlice<T>> {
        Arc::clone(&self.embed)
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Bytes of weights one decode step reads: every layer and the LM head
    /// (one embedding row per token is negligible).
    pub fn weight_bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.block.bytes() + l.input_norm.w.len() * T::BYTES)
            .sum::<usize>()
            + self.lm_head.bytes()
            + self.norm.w.len() * T::BYTES
    }

    /// Bytes of the KV pool.
    pub fn kv_bytes(&self) -> usize {
        self.pool.borrow().bytes()
    }
}

impl<T: GpuElement> TargetBackend for GpuTarget<T>
where
    CudaBlas: Gemm<T>,
{
    type Cache = GpuCache;

    fn config(&self) -> &TargetConfig {
        &self.config
    }

    fn device(&self) -> &'static str {
        "cuda"
    }

    fn new_cache(&self) -> Result<GpuCache> {
        self.pool.borrow_mut().take()
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [GpuCache],
        capture: &[usize],
        wanted: LogitsWanted,
    ) -> Result<TargetOutput> {
        let gpu = &*self.gpu;
        let h = self.config.hidden_size;
        let mut pool = self.pool.borrow_mut();
        let mut clock = OpClock::start(gpu);
        let b = BatchOnDevice::upload(gpu, batch, caches, &pool)?;
        let rows = b.rows;
        let s = &gpu.stream;
        let mut x = unsafe { s.alloc::<T>(rows * h) }?;
        embedding_gather(gpu, &mut x, &self.embed, &b.tokens, h)?;
        let aux_w = capture.len() * h;
        let mut aux = unsafe { s.alloc::<T>((rows * aux_w).max(1)) }?;
        let mut inp = unsafe { s.alloc::<T>(rows * h) }?;
        let mut sc = Scratch::new(gpu, &b, &self.layers[0].block, h)?;
        clock.mark(gpu, "upload + embed + buffers");
        for (li, layer) in self.layers.iter().enumerate() {
            let delta = (li > 0).then_some(&sc.mlp);
            let n = &layer.input_norm;
            rms_norm_residual(gpu, &mut inp, &mut x, delta, &n.w, n.eps, h)?;
            for (slot, _) in capture.iter().enumerate().filter(|(_, &p)| p == li) {
                copy_cols(gpu, &mut aux, &x, rows, h, aux_w, slot * h)?;
            }
            clock.mark(gpu, "rms_norm_residual");
            block_forward(
                gpu,
                &layer.block,
                &mut x,
                &inp,
                &b,
                &mut pool,
                li,
                &self.inv_freq,
                &mut sc,
                &mut clock,
            )?;
        }
        let n = &self.norm;
        rms_norm_residual(gpu, &mut inp, &mut x, Some(&sc.mlp), &n.w, n.eps, h)?;
        let nl = b.n_logits;
        let mut last = unsafe { s.alloc::<T>(nl.max(1) * h) }?;
        embedding_gather(gpu, &mut last, &inp, &b.logit_rows, h)?;
        let vocab = self.config.vocab_size;
        let mut logits = unsafe { s.alloc::<T>(nl.max(1) * vocab) }?;
        self.lm_head.forward(gpu, &mut logits, &last, nl.max(1))?;
        clock.mark(gpu, "final norm + lm_head");
        clock.enqueued();
        let (logits_h, argmax) = match wanted {
            LogitsWanted::Argmax => {
                let mut idx = s.alloc_zeros::<i32>(nl.max(1))?;
                let mut scratch = ArgmaxScratch::new(gpu, nl.max(1), vocab)?;
                argmax_split(gpu, &mut idx, &logits, nl.max(1), vocab, &mut scratch)?;
                let ids = s.clone_dtoh(&idx)?;
                (Vec::new(), ids[..nl].iter().map(|&i| i as u32).collect())
            }
            LogitsWanted::Logits => {
                let mut l = download(gpu, &logits)?;
                l.truncate(nl * vocab);
                (l, Vec::new())
            }
        };
        let aux_h = if aux_w == 0 {
            Vec::new()
        } else {
            download(gpu, &aux)?
        };
        clock.mark(gpu, "argmax + downloads");
        clock.finish();
        Ok(TargetOutput {
            logits: logits_h,
            aux: aux_h,
            argmax,
        })
    }

    fn commit(&self, caches: &mut [&mut GpuCache], keeps: &[Vec<usize>]) -> Result<()> {
        self.pool.borrow_mut().commit(&self.gpu, caches, keeps)
    }

    fn commit_all(&self, cache: &mut GpuCache) -> Result<()> {
        cache.committed = cache.len;
        Ok(())
    }

    fn release(&self, cache: GpuCache) {
        self.pool.borrow_mut().give_back(cache);
    }
}
