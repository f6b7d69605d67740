//! The capture file: a target's residual streams and greedy tokens on a few
//! prompts, so a draft can be audited without loading the target
//! (docs/DESIGN.md section 5.1).
//!
//! One safetensors file. Per prompt `i`: `prompt.{i}.tokens` (I64 `[t]`, the
//! prompt then the target's greedy continuation), `prompt.{i}.argmax` (I64
//! `[t]`, the target's greedy choice after each position) and, per stored
//! boundary `b`, `prompt.{i}.hidden.{b}` (BF16 `[t, hidden]`, Hugging Face
//! `hidden_states[b]`: the residual stream entering decoder layer `b`, 0 the
//! embedding output). The `__metadata__` map names the format, the writer
//! and the target (see [`CaptureMeta`]). Writing streams prompts to disk and
//! reading maps the file, so memory holds one prompt's boundary at a time.

mod meta;
mod read;
mod record;
mod write;

pub use meta::{CaptureMeta, FORMAT, FORMAT_VERSION};
pub use read::CaptureFile;
pub use record::{record_prompts, RecordSettings};
pub use write::CaptureWriter;

use std::collections::BTreeMap;

/// One prompt's captured states, as written or as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptStates {
    /// Tokens of the prompt (the rest of `tokens` is the continuation).
    pub prompt_len: usize,
    /// The prompt then the target's greedy continuation.
    pub tokens: Vec<u32>,
    /// The target's greedy choice after each position of `tokens`.
    pub argmax: Vec<u32>,
    /// `[tokens.len(), hidden]` per boundary, for the boundaries asked for.
    pub hidden: BTreeMap<usize, Vec<f32>>,
}

/// Name of the token tensor of prompt `i`.
pub fn tokens_name(i: usize) -> String {
    format!("prompt.{i}.tokens")
}

/// Name of the greedy-choice tensor of prompt `i`.
pub fn argmax_name(i: usize) -> String {
    format!("prompt.{i}.argmax")
}

/// Name of the residual stream of prompt `i` at boundary `b`.
pub fn hidden_name(i: usize, b: usize) -> String {
    format!("prompt.{i}.hidden.{b}")
}

/// Where captured states come from: a capture file, or a capture held in
/// memory (the in-process audit). Prompts are handed out one at a time.
pub trait StatesSource {
    /// What the capture is of.
    fn meta(&self) -> &CaptureMeta;
    /// Number of prompts.
    fn prompt_count(&self) -> usize;
    /// Prompt `i` with the residual streams of `boundaries` (each stored).
    fn prompt(&self, i: usize, boundaries: &[usize]) -> crate::Result<PromptStates>;
    /// Where the states are, for messages (`in memory` or a file path).
    fn origin(&self) -> String;
}

/// A capture held in memory.
pub struct MemoryStates {
    /// What it is of.
    pub meta: CaptureMeta,
    /// Every prompt, with every stored boundary.
    pub prompts: Vec<PromptStates>,
}

impl StatesSource for MemoryStates {
    fn meta(&self) -> &CaptureMeta {
        &self.meta
    }
    fn prompt_count(&self) -> usize {
        self.prompts.len()
    }
    fn prompt(&self, i: usize, boundaries: &[usize]) -> crate::Result<PromptStates> {
        let p = &self.prompts[i];
        let mut hidden = BTreeMap::new();
        for &b in boundaries {
            let h = p.hidden.get(&b).ok_or_else(|| {
                crate::EngineError::setting("boundaries", format!("boundary {b} was not captured"))
            })?;
            hidden.insert(b, h.clone());
        }
        Ok(PromptStates {
            prompt_len: p.prompt_len,
            tokens: p.tokens.clone(),
            argmax: p.argmax.clone(),
            hidden,
        })
    }
    fn origin(&self) -> String {
        "the in-process capture".into()
    }
}

/// `x` rounded to the nearest bfloat16, as the file stores it.
pub fn round_bf16(x: f32) -> f32 {
    half::bf16::from_f32(x).to_f32()
}
