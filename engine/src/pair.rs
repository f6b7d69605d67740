//! A target with its tokenizer and, optionally, an EAGLE draft wired to
//! the right capture points: what a run loads.

use crate::capture::{AuxCapture, CaptureChoice, CaptureSource};
use crate::error::{EngineError, Result};
use crate::generate::{generate_until, GenerateParams};
use crate::generation::Generation;
use crate::model::{DraftModel, TargetModel};
use crate::speculative::{Drafter, EagleDrafter};
use crate::timing::SpanRecorder;
use crate::tokenizer::TextTokenizer;
use std::path::Path;

/// A loaded model pair.
pub struct ModelPair {
    /// The target.
    pub target: TargetModel,
    /// Its tokenizer.
    pub tokenizer: TextTokenizer,
    /// The draft, if any.
    pub drafter: Option<EagleDrafter>,
}

/// Loads the EAGLE draft (either generation, any published layout) in
/// `dir` for `target`, fed the streams `choice` resolves to: the one place
/// a drafter is built from a draft folder (the CUDA backend uploads
/// drafters built here).
pub fn load_drafter(
    dir: &Path,
    target: &TargetModel,
    choice: &CaptureChoice,
) -> Result<EagleDrafter> {
    let draft = DraftModel::load(dir, target)?;
    let c = draft.config();
    let capture = choice.resolve_for(
        c.kind(),
        c.aux_layer_ids.as_deref(),
        target.config().num_hidden_layers,
    )?;
    if capture.source == CaptureSource::LastHidden && c.hidden_size != target.config().hidden_size {
        return Err(EngineError::config(
            &c.path,
            "hidden_size",
            format!(
                "{}: a draft served as EAGLE takes the target's last hidden state as its own, which is {} wide",
                c.hidden_size,
                target.config().hidden_size
            ),
        ));
    }
    EagleDrafter::new(draft, capture)
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
            Some(dir) => Some(load_drafter(dir, &target, capture)?),
        };
        Ok(ModelPair {
            target,
            tokenizer,
            drafter,
        })
    }

    /// The resolved capture, if a draft is loaded.
    pub fn capture(&self) -> Option<&AuxCapture> {
        self.drafter.as_ref().map(EagleDrafter::capture)
    }

    /// Generates for token-id prompts with the pair's draft (when speculating).
    pub fn generate(
        &mut self,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        self.generate_until(prompts, params, rec, &|_| false)
    }

    /// [`ModelPair::generate`], stopping sequence `i` once `cancelled(i)`
    /// holds (see [`generate_until`]).
    pub fn generate_until(
        &mut self,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
        cancelled: &dyn Fn(usize) -> bool,
    ) -> Result<Generation> {
        let drafter = self.drafter.as_mut().map(|d| d as &mut dyn Drafter);
        generate_until(&self.target, prompts, params, drafter, rec, cancelled)
    }
}
