//! The CPU backend: the models of `crate::model` with `KvCache`.

use super::{DraftBackend, LogitsWanted, SequenceCache, TargetBackend};
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCache;
use crate::model::blocks::gather_rows;
use crate::model::{DraftModel, DraftOutput, ForwardBatch, HiddenInput, TargetModel, TargetOutput};
use specula_kernels::cpu::argmax;

impl SequenceCache for KvCache {
    fn len(&self) -> usize {
        KvCache::len(self)
    }
    fn committed(&self) -> usize {
        KvCache::committed(self)
    }
}

impl TargetBackend for TargetModel {
    type Cache = KvCache;

    fn config(&self) -> &TargetConfig {
        TargetModel::config(self)
    }

    fn new_cache(&self) -> Result<KvCache> {
        Ok(TargetModel::new_cache(self))
    }

    /// The CPU backend always returns logits: the decode loop takes their
    /// argmax itself (inside the `sample` span).
    fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        capture: &[usize],
        _wanted: LogitsWanted,
    ) -> Result<TargetOutput> {
        Ok(TargetModel::forward(self, batch, caches, capture))
    }

    fn forward_trunk(
        &self,
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        capture: &[usize],
    ) -> Result<Option<(TargetOutput, Vec<f32>)>> {
        Ok(Some(TargetModel::forward_trunk(
            self, batch, caches, capture,
        )))
    }

    fn head_argmax(&self, finals: &[f32], rows: &[usize]) -> Result<Vec<u32>> {
        let h = self.config().hidden_size;
        let vocab = self.config().vocab_size;
        let picked = gather_rows(finals, h, rows.iter().copied());
        let logits = self.head(&picked);
        if let Some(i) = logits.iter().position(|v| !v.is_finite()) {
            return Err(EngineError::NonFinite(format!(
                "the target's logits hold {} (row {}, token id {})",
                logits[i],
                rows[i / vocab],
                i % vocab
            )));
        }
        Ok(logits
            .chunks_exact(vocab)
            .map(|r| argmax(r).unwrap_or(0) as u32)
            .collect())
    }

    fn commit(&self, caches: &mut [&mut KvCache], keeps: &[Vec<usize>]) -> Result<()> {
        for (c, keep) in caches.iter_mut().zip(keeps) {
            c.commit(keep);
        }
        Ok(())
    }

    fn commit_all(&self, cache: &mut KvCache) -> Result<()> {
        cache.commit_all();
        Ok(())
    }
}

impl DraftBackend for DraftModel {
    type Cache = KvCache;

    fn config(&self) -> &DraftConfig {
        DraftModel::config(self)
    }

    fn draft_to_target(&self) -> &[u32] {
        DraftModel::draft_to_target(self)
    }

    fn new_cache(&self) -> Result<KvCache> {
        Ok(DraftModel::new_cache(self))
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [KvCache],
        _top_k: Option<usize>,
    ) -> Result<DraftOutput> {
        if let HiddenInput::AuxRows(_) = hidden {
            return Err(EngineError::setting(
                "draft hidden input",
                "the CPU draft takes host aux states, not a device's rows",
            ));
        }
        Ok(DraftModel::forward(self, batch, hidden, caches))
    }

    fn commit_all(&self, cache: &mut KvCache) {
        cache.commit_all();
    }

    fn rollback(&self, cache: &mut KvCache) {
        cache.rollback();
    }

    fn truncate(&self, cache: &mut KvCache, len: usize) {
        cache.truncate(len);
    }
}
