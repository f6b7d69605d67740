//! Prefill in chunks: the prompts' tokens go through the target in ragged
//! forwards of at most [`PREFILL_CHUNK_TOKENS`] rows (a long prompt spans
//! several, each chunk attending to the entries the earlier ones committed),
//! as serving engines' chunked prefill does. Activations then stay bounded
//! by the chunk, not by batch x prompt length: 64 prompts of 8192 tokens
//! would otherwise need about 70 GB of activations for an 8B target.

use super::choice::{choose, Choices};
use crate::backend::{LogitsWanted, TargetBackend};
use crate::error::{EngineError, Result};
use crate::model::ForwardBatch;
use crate::timing::{timed, Span, SpanRecorder};

/// Rows per prefill forward at most, by default ([`super::GenerateParams::prefill_chunk_tokens`]).
pub const PREFILL_CHUNK_TOKENS: usize = 16384;

/// One piece of one prompt in a chunk: sequence, first token, end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) seq: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// Splits prompts of `lens` tokens into chunks of at most `chunk` tokens, in
/// (sequence, token) order: concatenating the chunks' rows gives the rows of
/// one unchunked forward, in the same order.
pub(crate) fn chunks(lens: &[usize], chunk: usize) -> Vec<Vec<Piece>> {
    let chunk = chunk.max(1);
    let mut out: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut room = chunk;
    for (seq, &len) in lens.iter().enumerate() {
        let mut start = 0;
        while start < len {
            if room == 0 {
                out.push(Vec::new());
                room = chunk;
            }
            let end = len.min(start + room);
            out.last_mut()
                .expect("never empty")
                .push(Piece { seq, start, end });
            room -= end - start;
            start = end;
        }
    }
    out
}

/// What the prefill gives the decode loop.
pub(super) struct Prefilled {
    /// Captured residual streams of every prompt row, in (sequence, token) order.
    pub(super) aux: Vec<f32>,
    /// When the backend kept them on the device instead (`aux` empty): the
    /// id of the first prompt row's states, the rest following in order.
    pub(super) aux_rows: Option<u32>,
    /// Each sequence's choice at its last prompt token.
    pub(super) choices: Choices,
}

/// Runs the prompts through `target` in chunks of at most `chunk` rows,
/// committing each chunk's entries; `caches[i]` is prompt `i`'s (empty) cache.
#[allow(clippy::too_many_arguments)]
pub(super) fn prefill<B: TargetBackend + ?Sized>(
    target: &B,
    prompts: &[&[u32]],
    chunk: usize,
    caches: &mut [B::Cache],
    capture: &[usize],
    wanted: LogitsWanted,
    temperature: f32,
    rec: &mut dyn SpanRecorder,
) -> Result<Prefilled> {
    let vocab = target.config().vocab_size;
    let lens: Vec<usize> = prompts.iter().map(|p| p.len()).collect();
    let mut aux = Vec::new();
    let mut aux_rows: Option<u32> = None;
    let mut rows_so_far = 0;
    let mut greedy = Vec::new();
    let mut probs = Vec::new();
    for pieces in chunks(&lens, chunk) {
        let mut batch = ForwardBatch::default();
        for p in &pieces {
            let tokens = &prompts[p.seq][p.start..p.end];
            batch.push_causal(p.seq, p.start, tokens, p.start, p.end == lens[p.seq]);
        }
        let out = timed(rec, Span::Prefill, || {
            target.forward(&batch, caches, capture, wanted)
        })?;
        match timed(rec, Span::Sample, || choose(&out, vocab, temperature))? {
            Choices::Greedy(ids) => greedy.extend(ids),
            Choices::Probs(p) => probs.extend(p),
        }
        for p in &pieces {
            target.commit_all(&mut caches[p.seq])?;
        }
        if let Some(first) = out.aux_rows {
            let expected = aux_rows.map_or(first as usize, |a| a as usize + rows_so_far);
            if first as usize != expected {
                return Err(EngineError::setting(
                    "device aux states",
                    format!("a prefill chunk's states start at row {first}, not {expected}"),
                ));
            }
            aux_rows.get_or_insert(first);
        }
        rows_so_far += batch.len();
        if aux.is_empty() {
            aux = out.aux;
        } else {
            aux.extend_from_slice(&out.aux);
        }
    }
    let choices = if probs.is_empty() {
        Choices::Greedy(greedy)
    } else {
        Choices::Probs(probs)
    };
    Ok(Prefilled {
        aux,
        aux_rows,
        choices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flatten(c: &[Vec<Piece>]) -> Vec<(usize, usize)> {
        c.iter()
            .flatten()
            .flat_map(|p| (p.start..p.end).map(move |t| (p.seq, t)))
            .collect()
    }

    #[test]
    fn chunks_keep_the_unchunked_row_order_and_respect_the_bound() {
        let lens = [5, 1, 12, 3];
        for chunk in [1, 2, 4, 7, 21, 100] {
            let c = chunks(&lens, chunk);
            let want: Vec<(usize, usize)> = lens
                .iter()
                .enumerate()
                .flat_map(|(s, &n)| (0..n).map(move |t| (s, t)))
                .collect();
            assert_eq!(flatten(&c), want, "chunk {chunk}");
            for piece_list in &c {
                let rows: usize = piece_list.iter().map(|p| p.end - p.start).sum();
                assert!(rows <= chunk && rows > 0, "chunk {chunk}: {rows} rows");
            }
            let total: usize = lens.iter().sum();
            assert_eq!(c.len(), total.div_ceil(chunk), "chunk {chunk}");
        }
    }

    #[test]
    fn a_short_batch_is_one_chunk() {
        assert_eq!(
            chunks(&[3, 4], PREFILL_CHUNK_TOKENS),
            vec![vec![
                Piece {
                    seq: 0,
                    start: 0,
                    end: 3
                },
                Piece {
                    seq: 1,
                    start: 0,
                    end: 4
                }
            ]]
        );
    }
}
