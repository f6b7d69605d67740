//! Prompt sets that do not fit a model's context: a prompt of `p` tokens
//! generating `n` new ones needs `p + n` positions, and a target whose
//! config names `max_position_embeddings` has no more (the in-process
//! engine refuses past it, `specula serve` answers 400, and a real server
//! would run positions the model never saw). By default such a (model,
//! prompt set) is skipped with its reason, kept in meta.json's `skipped`
//! and printed, never dropped silently: a context-tier sweep on a small
//! model says which tiers it could not measure and why. With
//! `allow_past_context` it runs anyway, and the run says so wherever its
//! figures appear: meta.json `past_trained_context`, the requests.csv
//! column `past_trained_context`, analyze and the report.

use super::grid::ModelInfo;
use super::SweepError;
use crate::remote::prompts::prompt_inputs;
use crate::remote::PromptInput;
use crate::run_folder::{PastContextSet, SkippedConfig};
use specula_datasets::PromptSet;
use specula_engine::generate::past_positions;

/// How a prompt set sits in a model's trained context.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextFit {
    /// Every prompt with `max_new_tokens` fits.
    Fits,
    /// Its longest prompt runs past the model's positions.
    Past(PastContextSet),
    /// Not known: the config names no limit, or there is no local tokenizer.
    Unknown,
}

impl ContextFit {
    /// The line saying why the set is skipped (without `allow_past_context`).
    pub fn skipped(&self) -> Option<SkippedConfig> {
        let ContextFit::Past(p) = self else {
            return None;
        };
        Some(SkippedConfig {
            model: p.model.clone(),
            config: format!("prompt_set={}", p.prompt_set),
            reason: format!(
                "{}; set allow_past_context = true (or --allow-past-context) to run it anyway",
                past_reason(p)
            ),
        })
    }
}

/// Why `p` runs past the trained context, in words.
pub fn past_reason(p: &PastContextSet) -> String {
    format!(
        "its longest prompt is {} tokens: that needs {} positions, past the target's \
         max_position_embeddings of {}",
        p.longest_prompt_tokens, p.positions_needed, p.max_position_embeddings
    )
}

/// Whether `set` fits `model`'s `max_positions` with `max_new_tokens` new
/// tokens (prompts tokenized as the sweep sends them, chat template included).
pub fn fit(
    model: &ModelInfo,
    max_positions: Option<usize>,
    set: &PromptSet,
    max_new_tokens: usize,
) -> Result<ContextFit, SweepError> {
    let Some(limit) = max_positions else {
        return Ok(ContextFit::Unknown);
    };
    if !model.target_dir.join("tokenizer.json").exists() {
        return Ok(ContextFit::Unknown);
    }
    let longest = prompt_inputs(model, set)?
        .iter()
        .filter_map(|p| match p {
            PromptInput::Ids(ids) => Some(ids.len()),
            PromptInput::Text(_) => None,
        })
        .max()
        .unwrap_or(0);
    if !past_positions(longest, max_new_tokens, Some(limit)) {
        return Ok(ContextFit::Fits);
    }
    Ok(ContextFit::Past(PastContextSet {
        model: model.name.clone(),
        prompt_set: set.name.clone(),
        longest_prompt_tokens: longest,
        positions_needed: longest + max_new_tokens,
        max_position_embeddings: limit,
    }))
}

/// Whether one request ran past `limit` positions: its prompt and output
/// tokens together exceed it (the engine's own check, with the tokens it
/// produced); `None` when either is unknown.
pub fn request_past(
    limit: Option<usize>,
    prompt_tokens: Option<usize>,
    output_tokens: usize,
) -> Option<bool> {
    Some(past_positions(prompt_tokens?, output_tokens, Some(limit?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_past_only_when_known_and_over_the_limit() {
        assert_eq!(request_past(Some(2048), Some(2016), 32), Some(false));
        assert_eq!(request_past(Some(2048), Some(2017), 32), Some(true));
        assert_eq!(request_past(None, Some(5000), 32), None);
        assert_eq!(request_past(Some(2048), None, 32), None);
    }

    #[test]
    fn a_skipped_set_names_the_opt_in() {
        let p = PastContextSet {
            model: "tiny".into(),
            prompt_set: "ctx4k".into(),
            longest_prompt_tokens: 3967,
            positions_needed: 3999,
            max_position_embeddings: 2048,
        };
        let s = ContextFit::Past(p).skipped().unwrap();
        assert_eq!(s.config, "prompt_set=ctx4k");
        assert!(s.reason.contains("3999 positions"), "{}", s.reason);
        assert!(s.reason.contains("allow_past_context"), "{}", s.reason);
        assert!(ContextFit::Fits.skipped().is_none());
    }
}
