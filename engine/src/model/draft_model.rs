//! A draft of either EAGLE generation on the CPU, loaded from any published
//! layout: what a draft folder becomes.

use super::batch::ForwardBatch;
use super::draft::{DraftOutput, Eagle3Draft, HiddenInput};
use super::draft_layout::settle_kind;
use super::eagle_draft::EagleDraft;
use super::target::TargetModel;
use crate::checkpoint::Checkpoint;
use crate::config::{DraftConfig, DraftKind};
use crate::error::Result;
use crate::kv_cache::KvCache;
use std::path::Path;

/// Reads the draft config in `dir` with its generation settled: from the
/// architecture name, or (the EAGLE authors' plain `LlamaForCausalLM`)
/// from the width of `fc.weight` in its checkpoint.
pub fn draft_config(dir: &Path) -> Result<DraftConfig> {
    let mut config = DraftConfig::load(dir)?;
    if config.kind.is_none() {
        settle_kind(&mut config, &Checkpoint::open(dir)?)?;
    }
    Ok(config)
}

/// An EAGLE-3 or EAGLE-1/2 draft.
pub enum DraftModel {
    /// An EAGLE-3 draft.
    Eagle3(Eagle3Draft),
    /// An EAGLE-1/2 draft.
    Eagle(EagleDraft),
}

impl DraftModel {
    /// Loads the draft in `dir` for `target`: the generation from the
    /// config's architecture or the width of `fc`, the weights from
    /// safetensors or `pytorch_model.bin` in any published layout.
    pub fn load(dir: &Path, target: &TargetModel) -> Result<DraftModel> {
        let mut config = DraftConfig::load(dir)?;
        let ck = Checkpoint::open(dir)?;
        Ok(match settle_kind(&mut config, &ck)? {
            DraftKind::Eagle3 => DraftModel::Eagle3(Eagle3Draft::from_checkpoint(
                config,
                &ck,
                target.config(),
                target.embedding(),
            )?),
            DraftKind::Eagle => {
                DraftModel::Eagle(EagleDraft::from_checkpoint(config, &ck, target)?)
            }
        })
    }

    /// The config it was loaded with.
    pub fn config(&self) -> &DraftConfig {
        match self {
            DraftModel::Eagle3(d) => d.config(),
            DraftModel::Eagle(d) => d.config(),
        }
    }

    /// The EAGLE-3 draft, if it is one.
    pub fn as_eagle3(&self) -> Option<&Eagle3Draft> {
        match self {
            DraftModel::Eagle3(d) => Some(d),
            DraftModel::Eagle(_) => None,
        }
    }

    /// Target token id of each draft token id.
    pub fn draft_to_target(&self) -> &[u32] {
        match self {
            DraftModel::Eagle3(d) => d.draft_to_target(),
            DraftModel::Eagle(d) => d.draft_to_target(),
        }
    }

    /// A fresh KV cache for one sequence.
    pub fn new_cache(&self) -> KvCache {
        match self {
            DraftModel::Eagle3(d) => d.new_cache(),
            DraftModel::Eagle(d) => d.new_cache(),
        }
    }

    /// Runs `batch` with the given hidden inputs (see each generation's forward).
    pub fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [KvCache],
    ) -> DraftOutput {
        match self {
            DraftModel::Eagle3(d) => d.forward(batch, hidden, caches),
            DraftModel::Eagle(d) => d.forward(batch, hidden, caches),
        }
    }
}
