//! The EAGLE drafter (EAGLE-3 and EAGLE-1/2 drafts alike): extends its KV
//! cache with the newly verified (target stream, next token) pairs, then
//! grows a tree by feeding its own hidden state back for every further step.

use super::drafter::{DraftRequest, DraftStep, Drafter, PendingAux};
use super::search::{needs_only_top_k, DraftScores};
use super::tree::DraftTree;
use crate::backend::{DraftBackend, SequenceCache};
use crate::capture::AuxCapture;
use crate::error::{EngineError, Result};
use crate::generate::prefill_chunks;
use crate::model::{DraftModel, ForwardBatch, HiddenInput};
use crate::timing::{timed, Span, SpanRecorder};
use std::collections::HashMap;

/// An EAGLE draft (on any backend; the CPU model by default) with its
/// per-sequence KV caches.
pub struct EagleDrafter<D: DraftBackend = DraftModel> {
    model: D,
    capture: AuxCapture,
    target_vocab: usize,
    caches: HashMap<usize, D::Cache>,
    /// The batch's pending aux states laid end to end, kept between calls so
    /// that its pages are touched once, not at every step.
    aux: Vec<f32>,
}

impl<D: DraftBackend> EagleDrafter<D> {
    /// Wraps `model`, fed with the target streams of `capture` (three points).
    pub fn new(model: D, capture: AuxCapture) -> Result<EagleDrafter<D>> {
        capture.check_count()?;
        let target_vocab = model.config().vocab_size;
        Ok(EagleDrafter {
            model,
            capture,
            target_vocab,
            caches: HashMap::new(),
            aux: Vec::new(),
        })
    }

    /// The resolved capture this drafter is fed with.
    pub fn capture(&self) -> &AuxCapture {
        &self.capture
    }

    /// The draft model.
    pub fn model(&self) -> &D {
        &self.model
    }

    /// The draft model and its capture, for a drafter built around the
    /// same model on another backend (the per-sequence caches are dropped).
    pub fn into_parts(self) -> (D, AuxCapture) {
        (self.model, self.capture)
    }
}

impl<D: DraftBackend> EagleDrafter<D> {
    /// Each request's draft cache, taken out of the drafter (a new one for a
    /// sequence it has not seen).
    fn take_caches(&mut self, requests: &[DraftRequest<'_>]) -> Result<Vec<D::Cache>> {
        requests
            .iter()
            .map(|q| match self.caches.remove(&q.slot) {
                Some(c) => Ok(c),
                None => self.model.new_cache(),
            })
            .collect()
    }

    /// Extends each request's draft cache with its pending (aux_i, x_{i+1})
    /// pairs, in causal forwards of at most `max_rows` rows (a prompt's
    /// catch-up after the prefill spans several, as the prefill did), and
    /// returns each sequence's scores and hidden state at its last pair;
    /// each forward is recorded as a `span`.
    fn extend(
        &mut self,
        requests: &[DraftRequest<'_>],
        caches: &mut [D::Cache],
        max_rows: usize,
        top_k: Option<usize>,
        span: Span,
        rec: &mut dyn SpanRecorder,
    ) -> Result<(Vec<DraftScores>, Vec<Vec<f32>>)> {
        let h = self.model.config().hidden_size;
        // The first call after a prefill folds in every prompt token's aux
        // states (megabytes at 8B sizes): read in place when they lie end to
        // end (one sequence, or a prefill's output), else laid end to end in
        // a buffer kept between calls.
        let pending: Vec<PendingAux<'_>> = requests.iter().map(|q| q.pending_aux).collect();
        // States the target kept on the device are gathered there by id.
        let on_device = requests.iter().any(|q| !q.pending_rows.is_empty());
        let ids: Vec<u32> = requests
            .iter()
            .flat_map(|q| q.pending_rows.iter().copied())
            .collect();
        let joined = PendingAux::joined(&pending).filter(|_| !on_device);
        let mut aux = std::mem::take(&mut self.aux);
        aux.clear();
        if joined.is_none() && !on_device {
            aux.reserve(pending.iter().map(|p| p.end - p.start).sum());
        }
        for (r, q) in requests.iter().enumerate() {
            if let Err(e) = check_pending(q, caches[r].len()) {
                self.aux = aux;
                return Err(e);
            }
            if joined.is_none() && !on_device {
                aux.extend_from_slice(q.pending_aux.rows());
            }
        }
        // Pending pairs per sequence: tokens pending_start + 1 ..= root.
        let lens: Vec<usize> = requests.iter().map(DraftRequest::pending_pairs).collect();
        let states: &[f32] = joined.unwrap_or(&aux);
        let width = states.len() / lens.iter().sum::<usize>().max(1);
        let model = &self.model;
        let vocab = model.config().draft_vocab_size;
        let mut run = || -> Result<(Vec<DraftScores>, Vec<Vec<f32>>)> {
            let (mut first, mut last_hidden) = (Vec::new(), Vec::new());
            let mut row0 = 0;
            for pieces in prefill_chunks(&lens, max_rows) {
                let mut batch = ForwardBatch::default();
                for p in &pieces {
                    let q = &requests[p.seq];
                    let from = q.pending_start + 1;
                    batch.push_causal(
                        p.seq,
                        caches[p.seq].len(),
                        &q.tokens[from + p.start..from + p.end],
                        q.pending_start + p.start,
                        p.end == lens[p.seq],
                    );
                }
                let rows = row0..row0 + batch.len();
                let hidden = if on_device {
                    HiddenInput::AuxRows(&ids[rows.clone()])
                } else {
                    HiddenInput::Aux(&states[rows.start * width..rows.end * width])
                };
                let out = timed(rec, span, || model.forward(&batch, hidden, caches, top_k))?;
                caches.iter_mut().for_each(|c| model.commit_all(c));
                first.extend(scores_of(&out, vocab));
                last_hidden.extend(out.hidden.chunks_exact(h).map(<[f32]>::to_vec));
                row0 = rows.end;
            }
            Ok((first, last_hidden))
        };
        let out = run();
        self.aux = aux;
        let (first, last_hidden) = out?;
        extended(first, last_hidden, requests.len())
    }

    /// [`Self::extend`] as one forward of `pad` rows a sequence (for a
    /// backend that [pads extends](DraftBackend::extend_pad_rows)): each
    /// sequence's pending pairs, then copies of its last pair at the
    /// positions after it, which no real row sees (they come later in the
    /// causal order) and whose cache entries are dropped after the forward.
    /// Every request must have 1..=pad pending pairs.
    fn extend_padded(
        &mut self,
        requests: &[DraftRequest<'_>],
        caches: &mut [D::Cache],
        pad: usize,
        top_k: Option<usize>,
        rec: &mut dyn SpanRecorder,
    ) -> Result<(Vec<DraftScores>, Vec<Vec<f32>>)> {
        let model = &self.model;
        let (h, vocab) = (model.config().hidden_size, model.config().draft_vocab_size);
        let on_device = requests.iter().any(|q| !q.pending_rows.is_empty());
        let mut batch = ForwardBatch::default();
        let (mut ids, mut states) = (Vec::new(), Vec::new());
        let mut real = Vec::with_capacity(requests.len());
        for (r, q) in requests.iter().enumerate() {
            let len = caches[r].len();
            check_pending(q, len)?;
            let tokens = &q.tokens[q.pending_start + 1..];
            let n = tokens.len();
            let dummies = pad - n;
            batch.push_causal(r, len, tokens, q.pending_start, true);
            batch.push_causal(
                r,
                len + n,
                &vec![tokens[n - 1]; dummies],
                q.pending_start + n,
                false,
            );
            if on_device {
                ids.extend_from_slice(q.pending_rows);
                ids.extend(std::iter::repeat_n(q.pending_rows[n - 1], dummies));
            } else {
                let rows = q.pending_aux.rows();
                let last = &rows[rows.len() / n * (n - 1)..];
                states.extend_from_slice(rows);
                (0..dummies).for_each(|_| states.extend_from_slice(last));
            }
            real.push(len + n);
        }
        let hidden = if on_device {
            HiddenInput::AuxRows(&ids)
        } else {
            HiddenInput::Aux(&states)
        };
        let out = timed(rec, Span::Draft, || {
            model.forward(&batch, hidden, caches, top_k)
        })?;
        for (c, &len) in caches.iter_mut().zip(&real) {
            model.truncate(c, len);
            model.commit_all(c);
        }
        let hidden = out.hidden.chunks_exact(h).map(<[f32]>::to_vec).collect();
        extended(scores_of(&out, vocab), hidden, requests.len())
    }
}

impl<D: DraftBackend> Drafter for EagleDrafter<D> {
    fn capture_points(&self) -> Vec<usize> {
        self.capture.points.clone()
    }

    fn draft(
        &mut self,
        requests: &[DraftRequest<'_>],
        step: DraftStep<'_, '_>,
    ) -> Result<Vec<DraftTree>> {
        let h = self.model.config().hidden_size;
        let mut caches = self.take_caches(requests)?;
        let topk = step.cfg.topk;
        let top_k = needs_only_top_k(topk, step.temperature).then_some(topk);
        // A decode step's pending pairs (the accepted drafts and the root)
        // number at most steps + 1 a sequence; the prompt's catch-up more.
        let pad = step.cfg.steps + 1;
        let padded = self
            .model
            .extend_pad_rows()
            .is_some_and(|most| pad * requests.len() <= most.min(step.max_rows))
            && requests
                .iter()
                .all(|q| (1..=pad).contains(&q.pending_pairs()));
        let (first, last_hidden) = if padded {
            self.extend_padded(requests, &mut caches, pad, top_k, step.rec)?
        } else {
            let (max_rows, rec) = (step.max_rows, &mut *step.rec);
            self.extend(requests, &mut caches, max_rows, top_k, Span::Draft, rec)?
        };
        let model = &self.model;
        let vocab = model.config().draft_vocab_size;
        // Per sequence and candidate: the cache entry of its expansion and the hidden state it produced.
        let mut entry: Vec<HashMap<usize, usize>> = vec![HashMap::new(); requests.len()];
        let mut produced: Vec<HashMap<usize, Vec<f32>>> = vec![HashMap::new(); requests.len()];
        let roots: Vec<usize> = requests.iter().map(|q| q.tokens.len() - 1).collect();
        let trees = step.grow(
            &first,
            model.draft_to_target(),
            self.target_vocab,
            |states, rec| {
                let mut batch = ForwardBatch::default();
                let mut hidden = Vec::new();
                let mut owners = Vec::new();
                for (r, st) in states.iter().enumerate() {
                    for (next_entry, &n) in (caches[r].len()..).zip(&st.frontier) {
                        let c = &st.pool[n];
                        let mut seen = Vec::new();
                        let mut cur = c.parent;
                        while let Some(p) = cur {
                            seen.push(entry[r][&p]);
                            cur = st.pool[p].parent;
                        }
                        seen.reverse();
                        seen.push(next_entry);
                        entry[r].insert(n, next_entry);
                        batch.push_tree_node(
                            r,
                            c.token,
                            roots[r] + c.depth - 1,
                            caches[r].committed(),
                            seen,
                            true,
                        );
                        hidden.extend_from_slice(
                            c.parent.map_or(&last_hidden[r], |p| &produced[r][&p]),
                        );
                        owners.push((r, n));
                    }
                }
                let out = timed(rec, Span::Draft, || {
                    model.forward(&batch, HiddenInput::Own(&hidden), &mut caches, top_k)
                })?;
                let mut scores: Vec<Vec<DraftScores>> = vec![Vec::new(); states.len()];
                for ((row, &(r, n)), s) in owners.iter().enumerate().zip(scores_of(&out, vocab)) {
                    produced[r].insert(n, out.hidden[row * h..(row + 1) * h].to_vec());
                    scores[r].push(s);
                }
                Ok(scores)
            },
        )?;
        for (q, mut c) in requests.iter().zip(caches) {
            model.rollback(&mut c);
            self.caches.insert(q.slot, c);
        }
        Ok(trees)
    }

    fn prefill(
        &mut self,
        requests: &[DraftRequest<'_>],
        max_rows: usize,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Vec<usize>> {
        let taken: Vec<usize> = requests.iter().map(DraftRequest::pending_pairs).collect();
        let ahead: Vec<DraftRequest<'_>> = requests
            .iter()
            .filter(|q| q.pending_pairs() > 0)
            .copied()
            .collect();
        if ahead.is_empty() {
            return Ok(taken);
        }
        let mut caches = self.take_caches(&ahead)?;
        // Only the caches matter: the scores at each prompt's last pair are
        // the first decode step's to compute (from one more pair).
        let out = self.extend(
            &ahead,
            &mut caches,
            max_rows,
            Some(1),
            Span::DraftPrefill,
            rec,
        );
        for (q, c) in ahead.iter().zip(caches) {
            self.caches.insert(q.slot, c);
        }
        out.map(|_| taken)
    }

    fn release(&mut self, slot: usize) {
        if let Some(c) = self.caches.remove(&slot) {
            self.model.release(c);
        }
    }
}

/// `Ok` when `q`'s draft cache holds `len` entries, as many as its pending
/// aux states start at.
fn check_pending(q: &DraftRequest<'_>, len: usize) -> Result<()> {
    if len == q.pending_start {
        return Ok(());
    }
    Err(EngineError::setting(
        "draft state",
        format!(
            "sequence {} draft cache holds {len} entries, pending aux starts at {}",
            q.slot, q.pending_start
        ),
    ))
}

/// An extend's scores and hidden states, one of each a sequence (its last
/// pending pair's logit row), or an error naming the counts.
fn extended(
    first: Vec<DraftScores>,
    last_hidden: Vec<Vec<f32>>,
    sequences: usize,
) -> Result<(Vec<DraftScores>, Vec<Vec<f32>>)> {
    if first.len() != sequences || last_hidden.len() != sequences {
        return Err(EngineError::setting(
            "draft state",
            format!(
                "the draft's extend gave {} scores and {} hidden states for {sequences} sequences",
                first.len(),
                last_hidden.len(),
            ),
        ));
    }
    Ok((first, last_hidden))
}

/// One [`DraftScores`] per logit row of a draft forward.
fn scores_of(out: &crate::model::DraftOutput, vocab: usize) -> Vec<DraftScores> {
    if out.top.is_empty() {
        out.logits
            .chunks_exact(vocab)
            .map(|l| DraftScores::Logits(l.to_vec()))
            .collect()
    } else {
        out.top
            .iter()
            .cloned()
            .map(DraftScores::TopLogProbs)
            .collect()
    }
}
