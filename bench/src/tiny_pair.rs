//! The trained tiny pair after a prompt, as the CPU benches time it: the
//! target and its EAGLE-3 draft (models/tiny-llama) with their caches
//! filled by one prefill, and the draft's state for the last prompt token.

use specula_engine::capture::CaptureChoice;
use specula_engine::kv_cache::KvCache;
use specula_engine::model::{Eagle3Draft, ForwardBatch, HiddenInput};
use specula_engine::pair::ModelPair;
use std::path::{Path, PathBuf};

/// Tokens in the cache before a timed step.
pub const CONTEXT: usize = 128;

/// The models the benches run.
pub fn model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/tiny-llama")
}

/// The target and draft after a prefill of [`CONTEXT`] tokens.
pub struct Prefilled {
    /// The target (with its capture points for the draft).
    pub pair: ModelPair,
    /// The EAGLE-3 draft.
    pub draft: Eagle3Draft,
    /// The target's cache after the prompt.
    pub target_cache: KvCache,
    /// The draft's cache after the prompt.
    pub draft_cache: KvCache,
    /// The draft's hidden output for the last prompt token.
    pub draft_hidden: Vec<f32>,
}

/// Loads models/tiny-llama with its eagle3 draft and runs both over a
/// [`CONTEXT`]-token prompt.
pub fn prefill() -> Prefilled {
    let dir = model_dir();
    let pair = ModelPair::load(&dir, Some(&dir.join("eagle3")), &CaptureChoice::default())
        .expect("models/tiny-llama with its eagle3 draft");
    let draft = Eagle3Draft::load(
        &dir.join("eagle3"),
        pair.target.config(),
        pair.target.embedding(),
    )
    .expect("models/tiny-llama/eagle3");
    let vocab = pair.target.config().vocab_size as u32;
    let prompt: Vec<u32> = (0..CONTEXT as u32).map(|i| (i * 37 + 11) % vocab).collect();
    let capture = pair.capture().expect("a draft is loaded").points.clone();
    let mut batch = ForwardBatch::default();
    batch.push_causal(0, 0, &prompt, 0, true);
    let mut caches = vec![pair.target.new_cache()];
    let out = pair.target.forward(&batch, &mut caches, &capture);
    let mut target_cache = caches.pop().expect("one cache");
    target_cache.commit_all();
    let mut caches = vec![draft.new_cache()];
    let d = draft.forward(&batch, HiddenInput::Aux(&out.aux), &mut caches);
    let mut draft_cache = caches.pop().expect("one cache");
    draft_cache.commit_all();
    let h = draft.config().hidden_size;
    // The draft returns its logit rows' states only: the last prompt token's.
    let draft_hidden = d.hidden[d.hidden.len() - h..].to_vec();
    Prefilled {
        pair,
        draft,
        target_cache,
        draft_cache,
        draft_hidden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cpu_speed bench indexed the draft's hidden output as if it held
    /// every prompt row (it holds the logit rows' only since the draft
    /// stopped returning the others) and panicked before timing anything.
    #[test]
    fn regression_the_cpu_bench_read_the_draft_state_of_a_row_it_no_longer_returns() {
        let p = prefill();
        let h = p.draft.config().hidden_size;
        assert_eq!(p.draft_hidden.len(), h);
        assert!(p.draft_hidden.iter().all(|v| v.is_finite()));
        assert!(p.draft_hidden.iter().any(|&v| v != 0.0));
        assert_eq!(p.target_cache.committed(), CONTEXT);
        assert_eq!(p.draft_cache.committed(), CONTEXT);
    }
}
