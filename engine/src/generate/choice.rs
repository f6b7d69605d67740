//! The target's choice at every row of a forward: argmax ids when greedy,
//! tempered distributions when sampling; non-finite logits are an error.

use crate::error::{EngineError, Result};
use crate::model::TargetOutput;
use specula_kernels::cpu::{argmax, softmax_with_temperature};

/// Per-row target choices: argmax ids (greedy) or tempered distributions.
pub(super) enum Choices {
    Greedy(Vec<u32>),
    Probs(Vec<Vec<f32>>),
}

/// The target's choice for every row; logits holding a NaN or infinity
/// are an error (a NaN argmax would pass for a token).
pub(super) fn choose(out: &TargetOutput, vocab: usize, temperature: f32) -> Result<Choices> {
    if temperature <= 0.0 && out.logits.is_empty() {
        return Ok(Choices::Greedy(out.argmax.clone()));
    }
    if let Some(i) = out.logits.iter().position(|v| !v.is_finite()) {
        return Err(EngineError::NonFinite(format!(
            "the target's logits hold {} (row {}, token id {})",
            out.logits[i],
            i / vocab,
            i % vocab
        )));
    }
    let rows = out.logits.chunks_exact(vocab);
    Ok(if temperature <= 0.0 {
        Choices::Greedy(rows.map(|r| argmax(r).unwrap_or(0) as u32).collect())
    } else {
        Choices::Probs(
            rows.map(|r| softmax_with_temperature(r, temperature))
                .collect(),
        )
    })
}
