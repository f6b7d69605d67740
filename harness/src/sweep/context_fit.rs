//! Prompt sets that do not fit a model's context: a prompt of `p` tokens
//! generating `n` new ones needs `p + n` positions, and a target whose
//! config names `max_position_embeddings` has no more (the in-process
//! engine refuses past it, `specula serve` answers 400, and a real server
//! would run positions the model never saw). Such a (model, prompt set) is
//! skipped with its reason, kept in meta.json's `skipped` and printed,
//! never dropped silently: a context-tier sweep on a small model says which
//! tiers it could not measure and why.

use super::grid::ModelInfo;
use super::SweepError;
use crate::remote::prompts::prompt_inputs;
use crate::remote::PromptInput;
use crate::run_folder::SkippedConfig;
use specula_datasets::PromptSet;

/// Why `set` does not fit `model`'s `max_positions` with `max_new_tokens`
/// new tokens, if it does not (prompts tokenized as the sweep sends them,
/// chat template included); `None` when it fits or nothing is known.
pub fn unfit(
    model: &ModelInfo,
    max_positions: Option<usize>,
    set: &PromptSet,
    max_new_tokens: usize,
) -> Result<Option<SkippedConfig>, SweepError> {
    let Some(limit) = max_positions else {
        return Ok(None);
    };
    if !model.target_dir.join("tokenizer.json").exists() {
        return Ok(None);
    }
    let longest = prompt_inputs(model, set)?
        .iter()
        .filter_map(|p| match p {
            PromptInput::Ids(ids) => Some(ids.len()),
            PromptInput::Text(_) => None,
        })
        .max()
        .unwrap_or(0);
    if longest + max_new_tokens <= limit {
        return Ok(None);
    }
    Ok(Some(SkippedConfig {
        model: model.name.clone(),
        config: format!("prompt_set={}", set.name),
        reason: format!(
            "its longest prompt is {longest} tokens: with max_new_tokens {max_new_tokens} that needs \
             {} positions, past the target's max_position_embeddings of {limit}",
            longest + max_new_tokens
        ),
    }))
}
