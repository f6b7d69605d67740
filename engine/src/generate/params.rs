//! What a generate call is asked to do ([`GenerateParams`]), and the
//! checks that refuse a request before any forward runs.

use super::prefill::PREFILL_CHUNK_TOKENS;
use crate::config::TargetConfig;
use crate::error::{EngineError, Result};
use crate::speculative::{SpeculativeConfig, SyntheticAcceptance};

/// What to generate and how.
#[derive(Debug, Clone)]
pub struct GenerateParams {
    /// Speculation knobs (`SpeculativeConfig::BASELINE` for plain decoding).
    pub speculative: SpeculativeConfig,
    /// 0 = greedy; otherwise sampling at this temperature.
    pub temperature: f32,
    /// Tokens to generate per sequence at most (the prefill's token included).
    pub max_new_tokens: usize,
    /// Seed of every sampling stream (sequence `i` gets its own stream).
    pub seed: u64,
    /// Each sequence's own seed, used as it is whatever its place in the
    /// batch (a server's per-request seeds: the same seed gives the same
    /// stream alone or batched); `None`: derived from `seed` and the index.
    pub sequence_seeds: Option<Vec<u64>>,
    /// Keep generating past EOS (fixed-length benchmarking).
    pub ignore_eos: bool,
    /// Replace verification by draws from this acceptance profile (greedy
    /// only; the output is then not the target's continuation).
    pub synthetic: Option<SyntheticAcceptance>,
    /// Prompt tokens per prefill forward at most (chunked prefill; a long
    /// prompt spans several forwards). Bounds prefill activations.
    pub prefill_chunk_tokens: usize,
    /// Run prompts whose positions reach past the target's
    /// `max_position_embeddings` instead of refusing them (positions the
    /// model was never trained on: to measure how acceptance degrades there).
    pub allow_past_context: bool,
}

impl Default for GenerateParams {
    fn default() -> GenerateParams {
        GenerateParams {
            speculative: SpeculativeConfig::BASELINE,
            temperature: 0.0,
            max_new_tokens: 64,
            seed: 0,
            sequence_seeds: None,
            ignore_eos: false,
            synthetic: None,
            prefill_chunk_tokens: PREFILL_CHUNK_TOKENS,
            allow_past_context: false,
        }
    }
}

fn check_prompts(prompts: &[Vec<u32>], vocab: usize) -> Result<()> {
    for (i, p) in prompts.iter().enumerate() {
        if p.is_empty() {
            return Err(EngineError::setting(
                "prompt",
                format!("prompt {i} is empty"),
            ));
        }
        if let Some(&t) = p.iter().find(|&&t| t as usize >= vocab) {
            return Err(EngineError::setting(
                "prompt",
                format!("prompt {i} holds token id {t}, outside the target vocabulary of {vocab}"),
            ));
        }
    }
    Ok(())
}

/// Whether a prompt of `prompt_tokens` generating `new_tokens` needs more
/// positions than `max_positions` (a target's `max_position_embeddings`;
/// none: no limit): the one rule every refusal of a request past the
/// trained context follows (this engine's, `specula serve`'s, the sweep's
/// and `specula gpu bench`'s).
pub fn past_positions(
    prompt_tokens: usize,
    new_tokens: usize,
    max_positions: Option<usize>,
) -> bool {
    max_positions.is_some_and(|limit| prompt_tokens.saturating_add(new_tokens) > limit)
}

/// Refuses a prompt whose tokens and `max_new_tokens` would run past the
/// target's `max_position_embeddings` (positions it was never trained on;
/// serving engines refuse such a request too), unless
/// [`GenerateParams::allow_past_context`] asks to run it anyway.
fn check_positions(
    prompts: &[Vec<u32>],
    max_new_tokens: usize,
    limit: Option<usize>,
) -> Result<()> {
    let Some(limit) = limit else {
        return Ok(());
    };
    match prompts
        .iter()
        .enumerate()
        .find(|(_, p)| past_positions(p.len(), max_new_tokens, Some(limit)))
    {
        Some((i, p)) => Err(EngineError::setting(
            "max_position_embeddings",
            format!(
                "prompt {i} has {} tokens; with max_new_tokens {max_new_tokens} it would reach position {}, past the target's max_position_embeddings of {limit}",
                p.len(),
                p.len() + max_new_tokens
            ),
        )),
        None => Ok(()),
    }
}

impl GenerateParams {
    /// Refuses a request the decode loop cannot honour, in this order: an
    /// empty prompt or a token outside the vocabulary, `max_new_tokens` 0,
    /// positions past `max_position_embeddings` (unless
    /// `allow_past_context`), per-sequence seeds that do not match the
    /// prompts, synthetic acceptance with sampling, speculation without a
    /// draft.
    pub(super) fn check(
        &self,
        prompts: &[Vec<u32>],
        target: &TargetConfig,
        has_draft: bool,
    ) -> Result<()> {
        check_prompts(prompts, target.vocab_size)?;
        if self.max_new_tokens == 0 {
            return Err(EngineError::setting("max_new_tokens", "must be at least 1"));
        }
        check_positions(
            prompts,
            self.max_new_tokens,
            target
                .max_position_embeddings
                .filter(|_| !self.allow_past_context),
        )?;
        if let Some(seeds) = &self.sequence_seeds {
            if seeds.len() != prompts.len() {
                return Err(EngineError::setting(
                    "sequence_seeds",
                    format!("{} seeds for {} prompts", seeds.len(), prompts.len()),
                ));
            }
        }
        if self.synthetic.is_some() && self.temperature > 0.0 {
            return Err(EngineError::setting(
                "synthetic acceptance",
                "works with greedy decoding only (temperature 0)",
            ));
        }
        if !self.speculative.is_baseline() && !has_draft {
            return Err(EngineError::setting(
                "draft",
                format!("{} needs a draft model", self.speculative),
            ));
        }
        Ok(())
    }
}
