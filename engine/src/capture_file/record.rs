//! Recording a capture with the built-in engine: the target's greedy
//! continuation of each prompt, then one forward over prompt + continuation
//! that captures the requested boundaries and the greedy choice at every
//! position.

use super::{round_bf16, PromptStates};
use crate::error::Result;
use crate::generate::{generate, GenerateParams};
use crate::model::{ForwardBatch, TargetModel};
use crate::speculative::SpeculativeConfig;
use crate::timing::NullRecorder;
use specula_kernels::cpu::argmax;
use std::collections::BTreeMap;

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordSettings {
    /// Tokens the target generates greedily after each prompt (EOS does not stop it).
    pub max_new_tokens: usize,
    /// The boundaries to capture, ascending (as `CaptureMeta::boundaries`).
    pub boundaries: Vec<usize>,
}

/// Records every prompt in turn, handing each to `each` (prompt index, its
/// states rounded to bfloat16 as the file stores them) before the next is
/// computed, so memory holds one prompt's states.
pub fn record_prompts(
    target: &TargetModel,
    prompts: &[Vec<u32>],
    settings: &RecordSettings,
    mut each: impl FnMut(usize, PromptStates) -> Result<()>,
) -> Result<()> {
    let params = GenerateParams {
        speculative: SpeculativeConfig::BASELINE,
        temperature: 0.0,
        max_new_tokens: settings.max_new_tokens.max(1),
        seed: 0,
        sequence_seeds: None,
        ignore_eos: true,
        synthetic: None,
        ..GenerateParams::default()
    };
    let g = generate(target, prompts, &params, None, &mut NullRecorder)?;
    let h = target.config().hidden_size;
    let v = target.config().vocab_size;
    let points = &settings.boundaries;
    for (i, (prompt, s)) in prompts.iter().zip(&g.sequences).enumerate() {
        let tokens: Vec<u32> = [prompt.as_slice(), &s.output].concat();
        let t = tokens.len();
        let mut batch = ForwardBatch::default();
        batch.push_causal(0, 0, &tokens, 0, false);
        batch.logit_rows = (0..t).collect();
        let out = target.forward(&batch, &mut [target.new_cache()], points);
        let argmax: Vec<u32> = out
            .logits
            .chunks_exact(v)
            .map(|r| argmax(r).unwrap_or(0) as u32)
            .collect();
        let width = points.len() * h;
        let hidden: BTreeMap<usize, Vec<f32>> = points
            .iter()
            .enumerate()
            .map(|(slot, &b)| {
                let states = (0..t)
                    .flat_map(|r| &out.aux[r * width + slot * h..r * width + (slot + 1) * h])
                    .map(|&x| round_bf16(x))
                    .collect();
                (b, states)
            })
            .collect();
        each(
            i,
            PromptStates {
                prompt_len: prompt.len(),
                tokens,
                argmax,
                hidden,
            },
        )?;
    }
    Ok(())
}
