//! How the published draft layouts name, and leave out, their tensors: the
//! decoder layer under `midlayer.` (EAGLE-3: the EAGLE authors, SGLang,
//! SpecForge) or `layers.0.` (EAGLE-1/2, and vLLM's naming), with or
//! without a `model.` prefix; `d2t` absent when the draft scores the whole
//! vocabulary; `embed_tokens` absent when the draft shares the target's.

use crate::checkpoint::Checkpoint;
use crate::config::{DraftConfig, DraftKind, TargetConfig};
use crate::error::{EngineError, Result};
use std::sync::Arc;

/// The name prefix of the draft's one decoder layer in `ck`.
pub(crate) fn layer_prefix(ck: &Checkpoint) -> &'static str {
    ["midlayer", "layers.0"]
        .into_iter()
        .find(|p| ck.contains(&format!("{p}.self_attn.q_proj.weight")))
        .unwrap_or("midlayer")
}

/// Settles `config`'s generation from the width of `fc.weight`.
pub(crate) fn settle_kind(config: &mut DraftConfig, ck: &Checkpoint) -> Result<DraftKind> {
    let Some(shape) = ck.shape("fc.weight") else {
        return Err(EngineError::MissingTensor {
            path: ck.dir().to_path_buf(),
            name: "fc.weight (every EAGLE draft has one)".into(),
        });
    };
    if shape.len() != 2 {
        return Err(EngineError::WeightFile {
            path: ck.file_of("fc.weight"),
            message: format!("tensor `fc.weight` has shape {shape:?}, not [out, in]"),
        });
    }
    config.settle_kind(&shape, &ck.file_of("fc.weight"))
}

/// Refuses an EAGLE-3 draft that does not fit `target`: its fc must read
/// the target's hidden states (`target_hidden_size`, or `hidden_size` when
/// absent) and its vocabulary must be the target's ([`check_vocab`]).
pub(crate) fn check_eagle3_fits(c: &DraftConfig, target: &TargetConfig) -> Result<()> {
    if c.target_hidden_size != target.hidden_size {
        return Err(EngineError::config(
            &c.path,
            "target_hidden_size",
            format!(
                "{} (or hidden_size when absent), but the target's hidden_size is {}",
                c.target_hidden_size, target.hidden_size
            ),
        ));
    }
    check_vocab(c, target)
}

/// Refuses a draft whose vocabulary is not the target's.
pub(crate) fn check_vocab(c: &DraftConfig, target: &TargetConfig) -> Result<()> {
    if c.vocab_size == target.vocab_size {
        return Ok(());
    }
    Err(EngineError::config(
        &c.path,
        "vocab_size",
        format!(
            "{}, but the target's vocab_size is {}",
            c.vocab_size, target.vocab_size
        ),
    ))
}

/// The draft's token embedding: its own `embed_tokens.weight` when it has
/// one, else the target's (which needs the widths to agree).
pub(crate) fn draft_embedding(
    ck: &Checkpoint,
    c: &DraftConfig,
    target: &TargetConfig,
    target_embed: Arc<Vec<f32>>,
) -> Result<Arc<Vec<f32>>> {
    let h = c.hidden_size;
    if ck.contains("embed_tokens.weight") {
        Ok(Arc::new(ck.f32(
            "embed_tokens.weight",
            &[c.vocab_size, h],
            "vocab_size, hidden_size",
        )?))
    } else if h == target.hidden_size {
        Ok(target_embed)
    } else {
        Err(EngineError::MissingTensor {
            path: ck.dir().to_path_buf(),
            name: "embed_tokens.weight (needed: the draft hidden_size differs from the target's)"
                .into(),
        })
    }
}

/// Target token id of each draft token id: from `d2t` (offsets, SGLang /
/// SpecForge / EAGLE), or the identity when the draft scores the whole
/// vocabulary and ships no `d2t` (the EAGLE authors drop it then).
pub(crate) fn draft_to_target(ck: &Checkpoint, c: &DraftConfig) -> Result<Vec<u32>> {
    if !ck.contains("d2t") {
        if c.draft_vocab_size == c.vocab_size {
            return Ok((0..c.vocab_size as u32).collect());
        }
        return Err(EngineError::MissingTensor {
            path: ck.dir().to_path_buf(),
            name: format!(
                "d2t (needed: draft_vocab_size = {} is smaller than vocab_size = {}, so draft ids must be mapped to target ids)",
                c.draft_vocab_size, c.vocab_size
            ),
        });
    }
    let raw = ck.i64("d2t", &[c.draft_vocab_size], "draft_vocab_size")?;
    raw.iter()
        .enumerate()
        .map(|(d, &off)| {
            let t = d as i64 + off;
            if t < 0 || t as usize >= c.vocab_size {
                Err(EngineError::WeightFile {
                    path: ck.file_of("d2t"),
                    message: format!(
                        "tensor `d2t`: draft id {d} maps to target id {t}, outside 0..{}",
                        c.vocab_size
                    ),
                })
            } else {
                Ok(t as u32)
            }
        })
        .collect()
}
