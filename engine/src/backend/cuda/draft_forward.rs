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
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{
    copy_cols, embedding_gather, rms_norm_residual, top_k_logprobs, GpuElement, TopKScratch,
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
}

/// Every buffer one draft forward shape uses.
pub(crate) type DraftStep<T> = Step<T, DraftBuffers<T>>;

impl<T: GpuElement> GpuDraft<T>
where
    CudaBlas: Gemm<T>,
{
    fn new_step(&self, batch: BatchOnDevice, from_aux: bool, k: usize) -> Result<DraftStep<T>> {
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
    fn read(&self, st: &DraftStep<T>, top_k: Option<usize>) -> Result<DraftOutput> {
        let gpu = &*self.gpu;
        let s = &gpu.stream;
        let nl = st.batch.n_logits;
        let mut hidden = download(gpu, &st.own.hidden_out)?;
        hidden.truncate(nl * self.config.hidden_size);
        match top_k {
            Some(k) => {
                let (idx, lp) = (
                    s.clone_dtoh(&st.own.top_idx)?,
                    s.clone_dtoh(&st.own.top_lp)?,
                );
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
            let mut st = self.new_step(b, from_aux, top_k.unwrap_or(1))?;
            st.batch.write(gpu, &host)?;
            fill(&mut st.own.hidden_in)?;
            self.enqueue(&mut st, &mut pool, from_aux, top_k)?;
            return self.read(&st, top_k);
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
            |b| self.new_step(b, from_aux, top_k.unwrap_or(1)),
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
