//! The EAGLE-3 draft's forward on the GPU (its `DraftBackend`), with
//! CUDA-graph replay for shapes of up to `INVARIANT_MAX_ROWS` rows (see
//! `graph.rs`).

use super::batch::{BatchOnDevice, HostBatch};
use super::draft::GpuDraft;
use super::forward::{block_forward, head_forward, ScratchSizes};
use super::graph::Step;
use super::kv_pool::{GpuCache, KvPool};
use super::profile::OpClock;
use super::weights::download;
use crate::backend::DraftBackend;
use crate::capture::AUX_STATES;
use crate::config::DraftConfig;
use crate::error::{EngineError, Result};
use crate::model::{DraftOutput, ForwardBatch, HiddenInput};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::{CudaSlice, PinnedHostSlice};
use specula_kernels::cuda::{
    copy_cols, embedding_gather, rms_norm_residual, top_k_logprobs, Gpu, GpuElement, TopKScratch,
    INVARIANT_MAX_ROWS,
};
use specula_kernels::switch::Switch;

/// Whether the GPU draft asks for padded extends of up to the rows a graph
/// replays (`SPECULA_DRAFT_PAD`: on, the default, with CUDA graphs: one
/// extend graph a batch size; off: one
/// per row count, each run eagerly at its first use and captured at its
/// second, as before results/h200/state-2026-12-07); read once.
fn draft_extend_padded() -> bool {
    static PAD: Switch<bool> = Switch::on_off("SPECULA_DRAFT_PAD", true);
    PAD.get()
}

/// Whether a replayed draft forward's outputs go through page-locked
/// copies waited for once (`SPECULA_DRAFT_PINNED`: off, the default, until
/// a GPU run shows the same proposals and a shorter step; on: the pinned
/// form) rather than three pageable copies; read once.
fn draft_outputs_pinned() -> bool {
    static PINNED: Switch<bool> = Switch::on_off("SPECULA_DRAFT_PINNED", false);
    PINNED.get()
}

/// The shape of a graph-captured draft forward.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DraftStepKey {
    rows: usize,
    n_logits: usize,
    from_aux: bool,
    top_k: Option<usize>,
    /// (causal rows, tree rows): which attention kernels the graph launches.
    attention_kinds: (bool, bool),
}

/// The draft's own buffers of one forward shape.
pub(crate) struct DraftBuffers<T> {
    hidden_in: CudaSlice<T>,
    /// The logit rows' midlayer outputs, gathered for the host.
    hidden_out: CudaSlice<T>,
    e: CudaSlice<T>,
    cat: CudaSlice<T>,
    top_idx: CudaSlice<i32>,
    top_lp: CudaSlice<f32>,
    /// The split top-k's chunks (maxima, sums, candidates).
    top_scratch: TopKScratch,
    /// Page-locked copies of the outputs for a replayed shape (None for an
    /// eager forward, run once: pinning costs more than it saves there).
    host: Option<DraftHostCopies<T>>,
}

/// Page-locked host buffers a replayed draft forward's outputs are copied
/// into: a read queues every copy, then waits once (a pageable copy waits
/// for the stream each time: three round trips a forward).
pub(crate) struct DraftHostCopies<T> {
    hidden: PinnedHostSlice<T>,
    top_idx: PinnedHostSlice<i32>,
    top_lp: PinnedHostSlice<f32>,
}

impl<T: GpuElement> DraftHostCopies<T> {
    /// Buffers as long as `own`'s device outputs.
    fn new(gpu: &Gpu, own: &DraftBuffers<T>) -> Result<DraftHostCopies<T>> {
        // Flags 0: cached host memory (the default write-combined memory is
        // slow for the host to read).
        // SAFETY: every buffer is written by a copy before it is read.
        unsafe {
            Ok(DraftHostCopies {
                hidden: gpu.ctx.alloc_pinned_with_flags(own.hidden_out.len(), 0)?,
                top_idx: gpu.ctx.alloc_pinned_with_flags(own.top_idx.len(), 0)?,
                top_lp: gpu.ctx.alloc_pinned_with_flags(own.top_lp.len(), 0)?,
            })
        }
    }
}

/// Every buffer one draft forward shape uses.
pub(crate) type DraftStep<T> = Step<T, DraftBuffers<T>>;

impl<T: GpuElement> GpuDraft<T>
where
    CudaBlas: Gemm<T>,
{
    /// The buffers of a forward shape; `pinned`: with page-locked host
    /// copies of its outputs (a shape that replays).
    fn new_step(
        &self,
        batch: BatchOnDevice,
        from_aux: bool,
        k: usize,
        pinned: bool,
    ) -> Result<DraftStep<T>> {
        let gpu = &*self.gpu;
        let s = &gpu.stream;
        let h = self.config.hidden_size;
        let (rows, nl) = (batch.rows, batch.n_logits.max(1));
        let in_w = if from_aux {
            AUX_STATES * self.config.target_hidden_size
        } else {
            h
        };
        let own = DraftBuffers {
            hidden_in: s.alloc_zeros(rows * in_w)?,
            hidden_out: s.alloc_zeros(nl * h)?,
            e: s.alloc_zeros(rows * h)?,
            cat: s.alloc_zeros(rows * 2 * h)?,
            top_idx: s.alloc_zeros(nl * k.max(1))?,
            top_lp: s.alloc_zeros(nl * k.max(1))?,
            top_scratch: TopKScratch::new(gpu, nl, self.config.draft_vocab_size, k)?,
            host: None,
        };
        let own = DraftBuffers {
            host: pinned
                .then(|| DraftHostCopies::new(gpu, &own))
                .transpose()?,
            ..own
        };
        let dv = self.config.draft_vocab_size;
        Step::new(gpu, batch, ScratchSizes::of_block(&self.block, h), dv, own)
    }

    /// Launches the draft forward of `st`'s batch (no host synchronisation).
    fn enqueue(
        &self,
        st: &mut DraftStep<T>,
        pool: &mut KvPool<T>,
        from_aux: bool,
        top_k: Option<usize>,
    ) -> Result<()> {
        let gpu = &*self.gpu;
        let h = self.config.hidden_size;
        let rows = st.batch.rows;
        st.batch.unpack(gpu)?;
        let own = &mut st.own;
        if from_aux {
            self.fc.forward(gpu, &mut st.x, &own.hidden_in, rows)?;
        } else {
            copy_cols(gpu, &mut st.x, &own.hidden_in, rows, h, h, 0)?;
        }
        embedding_gather(gpu, &mut own.e, &self.embed, &st.batch.tokens, h)?;
        let (n, tmp) = (&self.input_norm, &mut st.norm_out);
        rms_norm_residual(gpu, tmp, &mut own.e, None, &n.w, n.eps, h)?;
        copy_cols(gpu, &mut own.cat, tmp, rows, h, 2 * h, 0)?;
        let n = &self.hidden_norm;
        rms_norm_residual(gpu, tmp, &mut st.x, None, &n.w, n.eps, h)?;
        copy_cols(gpu, &mut own.cat, tmp, rows, h, 2 * h, h)?;
        block_forward(
            gpu,
            &self.block,
            &mut st.x,
            &own.cat,
            &st.batch,
            pool,
            0,
            &self.inv_freq,
            &mut st.sc,
            &mut OpClock::off(),
        )?;
        head_forward(gpu, &self.norm, &self.lm_head, st)?;
        // Only the logit rows' states go back to the host (a prompt's
        // extend would otherwise download every row of it).
        embedding_gather(gpu, &mut st.own.hidden_out, &st.x, &st.batch.logit_rows, h)?;
        if let Some(k) = top_k {
            let (nl, dv) = (st.batch.n_logits.max(1), self.config.draft_vocab_size);
            let own = &mut st.own;
            top_k_logprobs(
                gpu,
                &mut own.top_idx,
                &mut own.top_lp,
                &st.logits,
                (nl, dv, k),
                &mut own.top_scratch,
            )?;
        }
        Ok(())
    }

    /// Copies the hidden states and the scores back (waits for the GPU).
    fn read(&self, st: &mut DraftStep<T>, top_k: Option<usize>) -> Result<DraftOutput> {
        let gpu = &*self.gpu;
        let s = &gpu.stream;
        let nl = st.batch.n_logits;
        let h = self.config.hidden_size;
        let own = &mut st.own;
        let (hidden, top) = match (&mut own.host, top_k) {
            (Some(host), Some(k)) => {
                s.memcpy_dtoh(&own.top_idx, &mut host.top_idx)?;
                s.memcpy_dtoh(&own.top_lp, &mut host.top_lp)?;
                s.memcpy_dtoh(&own.hidden_out, &mut host.hidden)?;
                // The context does not track events (device.rs), so the
                // pinned slices' own events are never recorded and their
                // reads would not wait: one wait for the stream here. (Without
                // it the host read the previous forward's outputs: the trained
                // pair's tau fell from 3.4 to 1.06, draft-prefill-2026-12-07.)
                s.synchronize()?;
                let (idx, lp) = (host.top_idx.as_slice()?, host.top_lp.as_slice()?);
                let hidden = host.hidden.as_slice()?[..nl * h].iter().map(|v| v.to_f32());
                (hidden.collect(), Some(top_pairs(idx, lp, nl, k)))
            }
            (_, Some(k)) => {
                let mut hidden = download(gpu, &own.hidden_out)?;
                hidden.truncate(nl * h);
                let (idx, lp) = (s.clone_dtoh(&own.top_idx)?, s.clone_dtoh(&own.top_lp)?);
                (hidden, Some(top_pairs(&idx, &lp, nl, k)))
            }
            (_, None) => {
                let mut hidden = download(gpu, &own.hidden_out)?;
                hidden.truncate(nl * h);
                (hidden, None)
            }
        };
        match top {
            Some(top) => Ok(DraftOutput {
                hidden,
                logits: Vec::new(),
                top,
            }),
            None => {
                let mut logits = download(gpu, &st.logits)?;
                logits.truncate(nl * self.config.draft_vocab_size);
                Ok(DraftOutput {
                    hidden,
                    logits,
                    top: Vec::new(),
                })
            }
        }
    }
}

/// Each of `rows` logit rows' `k` (id, log-probability) pairs, best first.
fn top_pairs(idx: &[i32], lp: &[f32], rows: usize, k: usize) -> Vec<Vec<(usize, f32)>> {
    (0..rows)
        .map(|r| {
            (r * k..(r + 1) * k)
                .map(|j| (idx[j] as usize, lp[j]))
                .collect()
        })
        .collect()
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
        let dv = self.config.draft_vocab_size;
        let top_k = top_k.filter(|&k| (1..=32).contains(&k) && k <= dv);
        let mut pool = self.pool.borrow_mut();
        let host = HostBatch::new(batch, caches, &pool)?;
        let (from_aux, values, ids) = match hidden {
            HiddenInput::Aux(a) => (true, a, None),
            HiddenInput::Own(g) => (false, g, None),
            HiddenInput::AuxRows(ids) => (true, &[][..], Some(ids)),
        };
        let in_w = if from_aux {
            AUX_STATES * self.config.target_hidden_size
        } else {
            self.config.hidden_size
        };
        let given = ids.map_or(values.len(), |i| i.len() * in_w);
        if given != host.rows * in_w {
            return Err(EngineError::setting(
                "draft hidden input",
                format!("{given} values for {} rows of {in_w}", host.rows),
            ));
        }
        // Device rows are gathered as stored (the same elements the host
        // path's f32 round trip gives back: every `T` converts exactly).
        let target_aux = self.target_aux.borrow();
        let store = match (ids, target_aux.as_ref()) {
            (None, _) => None,
            (Some(_), Some(s)) => Some(s.lock().expect("aux store lock")),
            (Some(_), None) => {
                return Err(EngineError::setting(
                    "draft hidden input",
                    "device aux rows, but this draft reads no target's store",
                ))
            }
        };
        if let Some(s) = &store {
            if s.width() != in_w {
                return Err(EngineError::setting(
                    "draft hidden input",
                    format!(
                        "device aux rows of {} values, the draft takes {in_w}",
                        s.width()
                    ),
                ));
            }
        }
        let mut store = store;
        let values: Vec<T> = values.iter().map(|&v| T::from_f32(v)).collect();
        let mut fill = |hidden_in: &mut CudaSlice<T>| -> Result<()> {
            match (&mut store, ids) {
                (Some(s), Some(ids)) => s.gather(gpu, hidden_in, ids),
                _ => Ok(gpu.stream.memcpy_htod(&values, hidden_in)?),
            }
        };
        if !self.replays.graphable(&host) {
            let b = BatchOnDevice::exact(gpu, &host)?;
            let mut st = self.new_step(b, from_aux, top_k.unwrap_or(1), false)?;
            st.batch.write(gpu, &host)?;
            fill(&mut st.own.hidden_in)?;
            self.enqueue(&mut st, &mut pool, from_aux, top_k)?;
            return self.read(&mut st, top_k);
        }
        let key = DraftStepKey {
            rows: host.rows,
            n_logits: host.n_logits,
            from_aux,
            top_k,
            attention_kinds: host.attention_kinds(),
        };
        self.replays.replay(
            gpu,
            &host,
            key,
            |b| self.new_step(b, from_aux, top_k.unwrap_or(1), draft_outputs_pinned()),
            |st| fill(&mut st.own.hidden_in),
            |st| self.enqueue(st, &mut pool, from_aux, top_k),
            |st| self.read(st, top_k),
        )
    }

    fn commit_all(&self, cache: &mut GpuCache) {
        cache.committed = cache.len;
    }

    fn rollback(&self, cache: &mut GpuCache) {
        cache.len = cache.committed;
    }

    fn truncate(&self, cache: &mut GpuCache, len: usize) {
        cache.len = len.clamp(cache.committed, cache.len);
    }

    fn extend_pad_rows(&self) -> Option<usize> {
        (self.replays.graphs() && draft_extend_padded()).then_some(INVARIANT_MAX_ROWS)
    }

    fn release(&self, cache: GpuCache) {
        self.pool.borrow_mut().give_back(cache);
    }
}
