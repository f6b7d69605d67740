//! A target with its tokenizer and, optionally, an EAGLE-3 draft wired to
//! the right capture points: what a run loads.

use crate::capture::{AuxCapture, IdConvention};
use crate::error::{EngineError, Result};
use crate::generate::{generate, GenerateParams};
use crate::model::{Eagle3Draft, TargetModel};
use crate::spec::{Drafter, Eagle3Drafter};
use crate::stats::Generation;
use crate::timing::SpanRecorder;
use crate::tokenizer::TextTokenizer;
use std::path::Path;

/// How to read the draft's aux-layer ids.
#[derive(Debug, Clone, Default)]
pub struct CaptureChoice {
    /// Ids that override the draft config's (`--aux-layers`).
    pub override_ids: Option<Vec<i64>>,
    /// The id convention.
    pub convention: IdConvention,
}

/// A loaded model pair.
pub struct ModelPair {
    /// The target.
    pub target: TargetModel,
    /// Its tokenizer.
    pub tokenizer: TextTokenizer,
    /// The draft, if any.
    pub drafter: Option<Eagle3Drafter>,
}

impl ModelPair {
    /// Loads `target_dir` (config.json, safetensors, tokenizer.json) and, if
    /// given, the EAGLE-3 draft in `draft_dir` with its capture resolved.
    pub fn load(
        target_dir: &Path,
        draft_dir: Option<&Path>,
        capture: &CaptureChoice,
    ) -> Result<ModelPair> {
        let target = TargetModel::load(target_dir)?;
        let tokenizer = TextTokenizer::load(target_dir)?;
        if tokenizer.vocab_size() > target.config().vocab_size {
            return Err(EngineError::config(
                &target.config().path,
                "vocab_size",
                format!(
                    "{}, but {} has {} tokens",
                    target.config().vocab_size,
                    tokenizer.path().display(),
                    tokenizer.vocab_size()
                ),
            ));
        }
        let drafter = match draft_dir {
            None => None,
            Some(dir) => {
                let draft = Eagle3Draft::load(dir, target.config(), target.embedding())?;
                let cap = AuxCapture::resolve(
                    capture.override_ids.as_deref(),
                    draft.config().aux_layer_ids.as_deref(),
                    capture.convention,
                    target.config().num_hidden_layers,
                )?;
                Some(Eagle3Drafter::new(draft, cap)?)
            }
        };
        Ok(ModelPair {
            target,
            tokenizer,
            drafter,
        })
    }

    /// The resolved capture, if a draft is loaded.
    pub fn capture(&self) -> Option<&AuxCapture> {
        self.drafter.as_ref().map(Eagle3Drafter::capture)
    }

    /// Generates for token-id prompts with the pair's draft (when speculating).
    pub fn generate(
        &mut self,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        let drafter = self.drafter.as_mut().map(|d| d as &mut dyn Drafter);
        generate(&self.target, prompts, params, drafter, rec)
    }
}
