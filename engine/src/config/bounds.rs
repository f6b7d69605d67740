//! What a config.json's numbers can be, checked before anything is
//! allocated from them: `num_hidden_layers: 1000000000` once aborted on a
//! 600 GB allocation, and `rope_theta: 0` and an `eos_token_id` past the
//! vocabulary were taken as given.

use super::target::{positive, RopeScaling};
use crate::error::{EngineError, Result};
use std::path::Path;

/// The widest any width of a config may be (hidden, MLP, vocabulary, heads,
/// head size): 2^24, 64 times the widest released model's vocabulary (262144).
pub const MAX_WIDTH: usize = 1 << 24;

/// The most decoder layers a config may declare: 4096, 32 times the deepest
/// released model's (126).
pub const MAX_LAYERS: usize = 1 << 12;

/// A required count of at least 1 and at most `max`.
pub(super) fn bounded(path: &Path, field: &str, v: Option<usize>, max: usize) -> Result<usize> {
    let n = positive(path, field, v)?;
    if n > max {
        return Err(EngineError::config(
            path,
            field,
            format!("{n} is past any model's (at most {max})"),
        ));
    }
    Ok(n)
}

/// A required width ([`bounded`] by [`MAX_WIDTH`]).
pub(super) fn width(path: &Path, field: &str, v: Option<usize>) -> Result<usize> {
    bounded(path, field, v, MAX_WIDTH)
}

/// A real number that must be finite and above 0 (`rope_theta`, `rms_norm_eps`).
pub(super) fn above_zero(path: &Path, field: &str, v: f32) -> Result<f32> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(EngineError::config(
            path,
            field,
            format!("{v} (must be a finite number above 0)"),
        ))
    }
}

/// Refuses a token id of `field` that is not below `vocab_size`.
pub(super) fn in_vocab(path: &Path, field: &str, ids: &[u32], vocab_size: usize) -> Result<()> {
    match ids.iter().find(|&&id| id as usize >= vocab_size) {
        Some(id) => Err(EngineError::config(
            path,
            field,
            format!("token id {id} is past the vocabulary (vocab_size = {vocab_size})"),
        )),
        None => Ok(()),
    }
}

/// Refuses llama3 RoPE scaling that divides by zero or scales by a
/// non-finite or non-positive factor: `factor`, `low_freq_factor` and
/// `original_max_position_embeddings` above 0, `high_freq_factor` above
/// `low_freq_factor`.
pub(super) fn llama3_scaling(path: &Path, field: &str, s: &RopeScaling) -> Result<()> {
    for (key, v) in [
        ("factor", s.factor),
        ("low_freq_factor", s.low_freq_factor),
        ("high_freq_factor", s.high_freq_factor),
    ] {
        above_zero(path, &format!("{field}.{key}"), v)?;
    }
    if s.high_freq_factor <= s.low_freq_factor {
        return Err(EngineError::config(
            path,
            format!("{field}.high_freq_factor"),
            format!(
                "{} is not above low_freq_factor = {}",
                s.high_freq_factor, s.low_freq_factor
            ),
        ));
    }
    if s.original_max_position_embeddings == 0 {
        return Err(EngineError::config(
            path,
            format!("{field}.original_max_position_embeddings"),
            "must be a whole number above 0",
        ));
    }
    Ok(())
}
