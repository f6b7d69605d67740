//! The target model on the GPU (Llama, Qwen2, Qwen3, Qwen3-MoE, DeepSeek
//! V2/V3 and Kimi's language model): the CPU model's weights uploaded as
//! `T` (bf16 or f32), or random weights drawn on the device for a config's
//! shape.

use super::batch::{BatchOnDevice, HostBatch};
use super::device_rows::{DeviceRows, SharedRows};
use super::forward::logits_forward;
use super::graph::{Replays, Step};
use super::kv_pool::{GpuCache, KvPool};
use super::layers::{layer_forward, norm_after, scratch_sizes, LayerInputs, TargetLayer};
use super::profile::OpClock;
use super::sparse_forward::SparseBuffers;
use super::weights::{download, upload, DeviceLinear, DeviceNorm, Seeds};
use super::GpuOptions;
use crate::backend::{cuda_supports, LogitsWanted, TargetBackend};
use crate::config::TargetConfig;
use crate::error::Result;
use crate::model::{ForwardBatch, TargetModel, TargetOutput};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::Rope;
use specula_kernels::cuda::{
    argmax_split, copy_cols, embedding_gather, mla_long_rows, ArgmaxScratch, Gpu, GpuElement,
    MlaRope,
};
use std::cell::RefCell;
use std::sync::Arc;

mod measures;

/// The target's weights on the device.
pub(super) struct TargetWeights<T> {
    pub(super) embed: Arc<CudaSlice<T>>,
    pub(super) layers: Vec<TargetLayer<T>>,
    pub(super) norm: DeviceNorm<T>,
    pub(super) lm_head: DeviceLinear<T>,
}

/// A target model on the GPU with its KV pool.
pub struct GpuTarget<T: GpuElement> {
    gpu: Arc<Gpu>,
    config: TargetConfig,
    weights: TargetWeights<T>,
    inv_freq: CudaSlice<f32>,
    /// Latent attention's RoPE inverse frequencies (YaRN-scaled), if any.
    mla_inv_freq: Option<CudaSlice<f32>>,
    /// Experts touched and expert-layer forwards, summed on the device over
    /// decode and verify forwards (at most `INVARIANT_MAX_ROWS` rows).
    expert_stats: RefCell<CudaSlice<u64>>,
    pool: RefCell<KvPool<T>>,
    replays: Replays<StepKey, T, TargetBuffers<T>>,
    /// Where capturing forwards keep their aux states when it is enabled
    /// (drafts on the same device gather them from there).
    aux_rows: SharedRows<T>,
}

/// The shape of a graph-captured forward.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct StepKey {
    rows: usize,
    n_logits: usize,
    capture: Vec<usize>,
    wanted: LogitsWanted,
    /// (causal rows, tree rows): which attention kernels the graph launches.
    attention_kinds: (bool, bool),
    /// Whether a latent-attention target's batch has rows long enough for
    /// the tensor-core form (`mla_long_rows`), which adds its launches.
    long_rows: bool,
}

/// The target's own buffers of one forward shape.
struct TargetBuffers<T> {
    aux: CudaSlice<T>,
    idx: CudaSlice<i32>,
    argmax: ArgmaxScratch,
    sparse: SparseBuffers<T>,
}

/// Every buffer one target forward shape uses.
type TargetStep<T> = Step<T, TargetBuffers<T>>;

impl<T: GpuElement> GpuTarget<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU-loaded target.
    pub fn from_cpu(gpu: Arc<Gpu>, cpu: &TargetModel, opts: &GpuOptions) -> Result<GpuTarget<T>> {
        let c = cpu.config().clone();
        cuda_supports(&c)?;
        let layers = cpu
            .layers
            .iter()
            .map(|l| TargetLayer::upload(&gpu, l))
            .collect::<Result<Vec<_>>>()?;
        let weights = TargetWeights {
            embed: Arc::new(upload(&gpu, &cpu.embed)?),
            layers,
            norm: DeviceNorm::upload(&gpu, &cpu.norm)?,
            lm_head: DeviceLinear::upload(&gpu, &[&cpu.lm_head])?,
        };
        Self::assemble(gpu, c, weights, opts)
    }

    /// Random weights for `config`'s shape, drawn on the device from `seed`.
    pub fn random(
        gpu: Arc<Gpu>,
        config: TargetConfig,
        seed: u64,
        opts: &GpuOptions,
    ) -> Result<GpuTarget<T>> {
        let c = &config;
        cuda_supports(c)?;
        let h = c.hidden_size;
        let mut seeds = Seeds(seed);
        let layers = (0..c.num_hidden_layers)
            .map(|i| TargetLayer::random(&gpu, c, i, &mut seeds))
            .collect::<Result<Vec<_>>>()?;
        let weights = TargetWeights {
            embed: Arc::new(super::weights::random(
                &gpu,
                c.vocab_size * h,
                seeds.next(),
                1.0,
                0.0,
            )?),
            layers,
            norm: DeviceNorm::ones(&gpu, h, c.rms_norm_eps)?,
            lm_head: DeviceLinear::random(&gpu, c.vocab_size, h, &mut seeds)?,
        };
        Self::assemble(gpu, config, weights, opts)
    }

    pub(super) fn assemble(
        gpu: Arc<Gpu>,
        config: TargetConfig,
        weights: TargetWeights<T>,
        opts: &GpuOptions,
    ) -> Result<GpuTarget<T>> {
        let c = &config;
        let rope = Rope::new(c.head_dim, c.rope_theta, c.rope_scaling);
        let inv_freq = gpu.stream.clone_htod(rope.inv_freq())?;
        let (width, keys_only) = match &c.mla {
            Some(m) => (m.kv_lora_rank + m.qk_rope_head_dim, true),
            None => (c.num_key_value_heads * c.head_dim, false),
        };
        let mla_inv_freq = match &c.mla {
            Some(m) => Some(gpu.stream.clone_htod(&m.inv_freq)?),
            None => None,
        };
        let pool = KvPool::new(
            &gpu,
            c.num_hidden_layers,
            opts.slots,
            opts.capacity,
            width,
            keys_only,
        )?;
        Ok(GpuTarget {
            expert_stats: RefCell::new(gpu.stream.alloc_zeros(2)?),
            gpu,
            config,
            weights,
            inv_freq,
            mla_inv_freq,
            replays: Replays::new(opts.graphs, pool.capacity),
            pool: RefCell::new(pool),
            aux_rows: DeviceRows::shared(),
        })
    }

    fn new_step(&self, batch: BatchOnDevice, n_capture: usize) -> Result<TargetStep<T>> {
        let gpu = &*self.gpu;
        let (rows, nl) = (batch.rows, batch.n_logits.max(1));
        let h = self.config.hidden_size;
        let vocab = self.config.vocab_size;
        let s = &gpu.stream;
        let own = TargetBuffers {
            aux: s.alloc_zeros((rows * n_capture * h).max(1))?,
            idx: s.alloc_zeros(nl)?,
            argmax: ArgmaxScratch::new(gpu, nl, vocab)?,
            sparse: SparseBuffers::new(gpu, &batch, &self.weights.layers)?,
        };
        let sizes = scratch_sizes(&self.weights.layers, h);
        Step::new(gpu, batch, sizes, vocab, own)
    }

    /// Launches the whole forward of `st`'s batch (no host synchronisation).
    fn enqueue(
        &self,
        st: &mut TargetStep<T>,
        pool: &mut KvPool<T>,
        capture: &[usize],
        wanted: LogitsWanted,
        clock: &mut OpClock,
    ) -> Result<()> {
        let gpu = &*self.gpu;
        let h = self.config.hidden_size;
        let rows = st.batch.rows;
        let aux_w = capture.len() * h;
        st.batch.unpack(gpu)?;
        let w = &self.weights;
        embedding_gather(gpu, &mut st.x, &w.embed, &st.batch.tokens, h)?;
        clock.mark(gpu, "upload + embed + buffers");
        for (li, layer) in w.layers.iter().enumerate() {
            let prev = li.checked_sub(1).map(|p| &w.layers[p]);
            let (sc, sparse) = (&st.sc, &st.own.sparse);
            let n = &layer.input_norm;
            norm_after(gpu, &mut st.norm_out, &mut st.x, prev, sc, sparse, n)?;
            for (slot, _) in capture.iter().enumerate().filter(|(_, &p)| p == li) {
                copy_cols(gpu, &mut st.own.aux, &st.x, rows, h, aux_w, slot * h)?;
            }
            clock.mark(gpu, "rms_norm_residual");
            let mut stats = self.expert_stats.borrow_mut();
            let inputs = LayerInputs {
                batch: &st.batch,
                layer: li,
                inv_freq: &self.inv_freq,
                mla_rope: self.mla_rope(),
                stats: Some(&mut *stats),
            };
            let sparse = &mut st.own.sparse;
            layer_forward(
                gpu,
                layer,
                &mut st.x,
                &st.norm_out,
                pool,
                inputs,
                &mut st.sc,
                sparse,
                clock,
            )?;
        }
        let (sc, sparse) = (&st.sc, &st.own.sparse);
        let last = w.layers.last();
        norm_after(gpu, &mut st.norm_out, &mut st.x, last, sc, sparse, &w.norm)?;
        logits_forward(gpu, &w.lm_head, st)?;
        if wanted == LogitsWanted::Argmax {
            let (nl, vocab) = (st.batch.n_logits.max(1), self.config.vocab_size);
            let own = &mut st.own;
            argmax_split(gpu, &mut own.idx, &st.logits, nl, vocab, &mut own.argmax)?;
        }
        clock.mark(gpu, "final norm + lm_head");
        clock.enqueued();
        Ok(())
    }

    /// Copies what the decode loop needs back to the host (waits for the GPU).
    fn read(
        &self,
        st: &TargetStep<T>,
        n_capture: usize,
        wanted: LogitsWanted,
    ) -> Result<TargetOutput> {
        let gpu = &*self.gpu;
        let nl = st.batch.n_logits;
        let vocab = self.config.vocab_size;
        let (logits, argmax) = match wanted {
            LogitsWanted::Argmax => {
                let ids = gpu.stream.clone_dtoh(&st.own.idx)?;
                (Vec::new(), ids[..nl].iter().map(|&i| i as u32).collect())
            }
            LogitsWanted::Logits => {
                let mut l = download(gpu, &st.logits)?;
                l.truncate(nl * vocab);
                (l, Vec::new())
            }
        };
        let mut kept = self.aux_rows.lock().expect("aux store lock");
        let (aux, aux_rows) = if n_capture == 0 {
            (Vec::new(), None)
        } else if kept.enabled() {
            let (rows, h) = (st.batch.rows, self.config.hidden_size);
            let first = kept.append(gpu, &st.own.aux, rows, n_capture * h)?;
            (Vec::new(), Some(first))
        } else {
            (download(gpu, &st.own.aux)?, None)
        };
        Ok(TargetOutput {
            logits,
            aux,
            aux_rows,
            argmax,
        })
    }

    /// The device embedding table (shared with drafts that have none).
    pub fn embedding(&self) -> Arc<CudaSlice<T>> {
        Arc::clone(&self.weights.embed)
    }

    /// The store capturing forwards keep their aux states in when enabled.
    pub(super) fn aux_rows(&self) -> SharedRows<T> {
        Arc::clone(&self.aux_rows)
    }

    /// Keeps the captured aux states of later forwards on the device
    /// ([`TargetOutput::aux_rows`]) instead of downloading them, or stops.
    pub(super) fn keep_aux_on_device(&self, on: bool) {
        self.aux_rows
            .lock()
            .expect("aux store lock")
            .set_enabled(on);
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Latent attention's RoPE and softmax scale, if the model has it.
    fn mla_rope(&self) -> Option<(MlaRope<'_>, f32)> {
        let m = self.config.mla.as_ref()?;
        let inv_freq = self.mla_inv_freq.as_ref()?;
        Some((
            MlaRope {
                inv_freq,
                interleave: m.rope_interleave,
                factor: m.rope_attention_factor,
            },
            m.softmax_scale,
        ))
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
        let mut pool = self.pool.borrow_mut();
        let host = HostBatch::new(batch, caches, &pool)?;
        if !self.replays.graphable(&host) {
            let mut step = self.new_step(BatchOnDevice::exact(gpu, &host)?, capture.len())?;
            step.batch.write(gpu, &host)?;
            let mut clock = OpClock::start(gpu, host.rows);
            self.enqueue(&mut step, &mut pool, capture, wanted, &mut clock)?;
            let out = self.read(&step, capture.len(), wanted);
            clock.mark(gpu, "argmax + downloads");
            clock.finish();
            return out;
        }
        let key = StepKey {
            rows: host.rows,
            n_logits: host.n_logits,
            capture: capture.to_vec(),
            wanted,
            attention_kinds: host.attention_kinds(),
            long_rows: self.config.mla.is_some() && mla_long_rows(host.max_keys),
        };
        self.replays.replay(
            gpu,
            &host,
            key,
            |b| self.new_step(b, capture.len()),
            |_| Ok(()),
            |st| self.enqueue(st, &mut pool, capture, wanted, &mut OpClock::off()),
            |st| self.read(st, capture.len(), wanted),
        )
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
