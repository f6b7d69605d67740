//! The decode loop: prefill, then per step draft -> verify -> accept ->
//! commit, for a batch of sequences of different lengths, each with its own
//! acceptance, until EOS or `max_new_tokens`.

use crate::backend::{LogitsWanted, SequenceCache, TargetBackend};
use crate::error::Result;
use crate::generation::{FinishReason, Generation, SequenceResult};
use crate::model::ForwardBatch;
use crate::speculative::{
    verify_greedy, verify_sampling, Acceptance, DraftRequest, DraftStep, DraftTree, Drafter,
};
use crate::timing::{timed, Span, SpanRecorder};
use choice::{choose, Choices};
use prefill::prefill;
use sequence::{release, take_caches, Sequence};

mod choice;
mod head;
mod params;
mod prefill;
mod sequence;
pub use params::{past_positions, GenerateParams};
pub(crate) use prefill::chunks as prefill_chunks;
pub use prefill::PREFILL_CHUNK_TOKENS;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Generates a continuation of every prompt, speculatively when
/// `params.speculative` has steps (then `drafter` is required).
pub fn generate<B: TargetBackend + ?Sized>(
    target: &B,
    prompts: &[Vec<u32>],
    params: &GenerateParams,
    drafter: Option<&mut dyn Drafter>,
    rec: &mut dyn SpanRecorder,
) -> Result<Generation> {
    generate_until(target, prompts, params, drafter, rec, &|_| false)
}

/// [`generate`], where sequence `i` stops before any step at which
/// `cancelled(i)` holds ([`FinishReason::Cancelled`]; a server's request
/// whose client went away), freeing its cache and draft slot at once while
/// the rest of the batch goes on.
pub fn generate_until<B: TargetBackend + ?Sized>(
    target: &B,
    prompts: &[Vec<u32>],
    params: &GenerateParams,
    mut drafter: Option<&mut dyn Drafter>,
    rec: &mut dyn SpanRecorder,
    cancelled: &dyn Fn(usize) -> bool,
) -> Result<Generation> {
    let vocab = target.config().vocab_size;
    let eos = target.config().eos_token_ids.clone();
    params.check(prompts, target.config(), drafter.is_some())?;
    let speculative = !params.speculative.is_baseline();
    let wanted = if params.temperature > 0.0 {
        LogitsWanted::Logits
    } else {
        LogitsWanted::Argmax
    };
    let capture = if speculative {
        drafter
            .as_ref()
            .map(|d| d.capture_points())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let aux_width = capture.len() * target.config().hidden_size;
    let t0 = Instant::now();
    let mut seqs: Vec<Sequence<B::Cache>> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Ok(Sequence {
                tokens: p.clone(),
                cache: Some(target.new_cache()?),
                pending_start: 0,
                pending_aux: Vec::new(),
                pending_rows: Vec::new(),
                pending_prompt: None,
                rng: ChaCha8Rng::seed_from_u64(match &params.sequence_seeds {
                    Some(seeds) => seeds[i],
                    None => params
                        .seed
                        .wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                }),
                result: SequenceResult {
                    prompt_len: p.len(),
                    ..SequenceResult::default()
                },
                done: false,
            })
        })
        .collect::<Result<_>>()?;

    // Prefill every prompt, in ragged chunks of bounded rows.
    let all: Vec<usize> = (0..seqs.len()).collect();
    let mut caches = take_caches(&mut seqs, &all);
    let tokens: Vec<&[u32]> = seqs.iter().map(|s| s.tokens.as_slice()).collect();
    let out = prefill(
        target,
        &tokens,
        params.prefill_chunk_tokens,
        &mut caches,
        &capture,
        wanted,
        params.temperature,
        rec,
    )?;
    let choices = out.choices;
    let prompt_aux = out.aux;
    let mut row = 0;
    for (s, c) in seqs.iter_mut().zip(caches) {
        s.cache = Some(c);
        let n = s.tokens.len();
        match out.aux_rows {
            Some(first) => {
                let first = first + row as u32;
                s.pending_rows = (first..first + n as u32).collect();
            }
            None => s.pending_prompt = Some(row * aux_width..(row + n) * aux_width),
        }
        row += n;
    }
    if let (Some(d), true) = (&mut drafter, speculative) {
        draft_prefill(&mut **d, &mut seqs, &prompt_aux, aux_width, params, rec)?;
    }
    let prefill_s = t0.elapsed().as_secs_f64();
    for (i, s) in seqs.iter_mut().enumerate() {
        let first = match &choices {
            Choices::Greedy(ids) => ids[i],
            Choices::Probs(p) => {
                verify_sampling(&DraftTree::default(), &p[i..i + 1], &mut s.rng).tokens[0]
            }
        };
        s.result.ttft_s = prefill_s;
        let kept = s.emit(&[first], params, &eos, prefill_s);
        rec.emitted(i, &s.result.output[s.result.output.len() - kept..]);
    }
    rec.finish_step();

    let mut steps = 0;
    loop {
        let now = t0.elapsed().as_secs_f64();
        for (i, s) in seqs.iter_mut().enumerate() {
            if !s.done && cancelled(i) {
                s.finish(FinishReason::Cancelled, now);
                release(target, &mut drafter, i, s);
            }
        }
        if seqs.iter().all(|s| s.done) {
            break;
        }
        steps += 1;
        let active: Vec<usize> = (0..seqs.len()).filter(|&i| !seqs[i].done).collect();
        let trees: Vec<DraftTree> = match (&mut drafter, speculative) {
            (Some(d), true) => {
                let requests: Vec<DraftRequest<'_>> = active
                    .iter()
                    .map(|&i| seqs[i].draft_request(i, &prompt_aux))
                    .collect();
                let mut rngs: Vec<ChaCha8Rng> =
                    active.iter().map(|&i| seqs[i].rng.clone()).collect();
                let mut rng_refs: Vec<&mut ChaCha8Rng> = rngs.iter_mut().collect();
                let step = DraftStep {
                    cfg: &params.speculative,
                    temperature: params.temperature,
                    rngs: &mut rng_refs,
                    rec,
                    max_rows: params.prefill_chunk_tokens,
                };
                let trees = d.draft(&requests, step)?;
                for (&i, r) in active.iter().zip(rngs) {
                    seqs[i].rng = r;
                }
                trees
            }
            _ => vec![DraftTree::default(); active.len()],
        };
        // Verify: the root (last emitted token) and the tree, per sequence.
        let mut batch = ForwardBatch::default();
        let mut starts = Vec::with_capacity(active.len());
        for (b, (&i, tree)) in active.iter().zip(&trees).enumerate() {
            let s = &seqs[i];
            let base = s.cache.as_ref().map_or(0, |c| c.len());
            let root_pos = s.tokens.len() - 1;
            starts.push(batch.len());
            batch.push_tree_node(
                b,
                *s.tokens.last().expect("a sequence always has tokens"),
                root_pos,
                base,
                vec![base],
                true,
            );
            for (n, node) in tree.nodes.iter().enumerate() {
                let mut seen = vec![base];
                seen.extend(tree.path_to(n).into_iter().map(|a| base + 1 + a));
                batch.push_tree_node(b, node.token, root_pos + node.depth, base, seen, true);
            }
        }
        let mut caches = take_caches(&mut seqs, &active);
        // Greedy verification on a backend that defers its head runs the
        // head over the positions the walk reaches only (head.rs).
        let deferred = params.temperature <= 0.0 && params.synthetic.is_none();
        let (out, finals) = timed(rec, Span::Verify, || -> Result<_> {
            if deferred {
                if let Some((out, finals)) = target.forward_trunk(&batch, &mut caches, &capture)? {
                    return Ok((out, Some(finals)));
                }
            }
            Ok((target.forward(&batch, &mut caches, &capture, wanted)?, None))
        })?;
        let accepts: Vec<Acceptance> = match finals {
            Some(finals) => {
                let walks = timed(rec, Span::Sample, || {
                    head::greedy_walks(target, &finals, &trees, &starts)
                })?;
                timed(rec, Span::Accept, || {
                    walks
                        .into_iter()
                        .zip(&trees)
                        .map(|(w, tree)| Acceptance {
                            tokens: w
                                .accepted
                                .iter()
                                .map(|&n| tree.nodes[n].token)
                                .chain(w.bonus)
                                .collect(),
                            accepted: w.accepted,
                        })
                        .collect()
                })
            }
            None => {
                let choices = timed(rec, Span::Sample, || {
                    choose(&out, vocab, params.temperature)
                })?;
                timed(rec, Span::Accept, || {
                    active
                        .iter()
                        .zip(&trees)
                        .enumerate()
                        .map(|(b, (&i, tree))| {
                            let range = starts[b]..starts[b] + tree.len() + 1;
                            match (&choices, &params.synthetic) {
                                (Choices::Greedy(ids), Some(profile)) => {
                                    profile.accept(tree, &ids[range], &mut seqs[i].rng)
                                }
                                (Choices::Greedy(ids), None) => verify_greedy(tree, &ids[range]),
                                (Choices::Probs(p), _) => {
                                    verify_sampling(tree, &p[range], &mut seqs[i].rng)
                                }
                            }
                        })
                        .collect()
                })
            }
        };
        rec.begin(Span::KvCommit);
        let now = t0.elapsed().as_secs_f64();
        let keeps: Vec<Vec<usize>> = caches
            .iter()
            .zip(&accepts)
            .map(|(cache, acc)| {
                let base = cache.committed();
                std::iter::once(base)
                    .chain(acc.accepted.iter().map(|&a| base + 1 + a))
                    .collect()
            })
            .collect();
        {
            let mut refs: Vec<&mut B::Cache> = caches.iter_mut().collect();
            target.commit(&mut refs, &keeps)?;
        }
        for (b, ((&i, cache), acc)) in active.iter().zip(caches).zip(&accepts).enumerate() {
            let s = &mut seqs[i];
            s.cache = Some(cache);
            s.pending_start = s.tokens.len() - 1;
            s.pending_prompt = None;
            s.pending_aux.clear();
            s.pending_rows.clear();
            for k in std::iter::once(0).chain(acc.accepted.iter().map(|a| a + 1)) {
                let r = starts[b] + k;
                match out.aux_rows {
                    Some(first) => s.pending_rows.push(first + r as u32),
                    None => s
                        .pending_aux
                        .extend_from_slice(&out.aux[r * aux_width..(r + 1) * aux_width]),
                }
            }
            let kept = s.emit(&acc.tokens, params, &eos, now);
            rec.emitted(i, &s.result.output[s.result.output.len() - kept..]);
            s.result.verify_steps += 1;
            // Credit only accepted drafts that were emitted (EOS or the length
            // limit can cut a step short), so that tau = 1 + mean(accepted).
            s.result
                .accepted_per_step
                .push(acc.accepted.len().min(kept.saturating_sub(1)) as u16);
            s.result.emitted_per_step.push(kept as u16);
            if s.done {
                release(target, &mut drafter, i, s);
            }
        }
        rec.end(Span::KvCommit);
        rec.finish_step();
    }
    let decode_s = t0.elapsed().as_secs_f64() - prefill_s;
    for s in &mut seqs {
        if let Some(c) = s.cache.take() {
            target.release(c);
        }
    }
    Ok(Generation {
        sequences: seqs.into_iter().map(|s| s.result).collect(),
        prefill_s,
        decode_s,
        batch_steps: steps,
        speculative: params.speculative,
    })
}

/// The drafter's catch-up over the prompts (its [`Drafter::prefill`]):
/// each sequence's prompt pairs but the last, whose scores the first decode
/// step computes from its root; what the drafter took leaves the pending
/// states.
fn draft_prefill<C>(
    drafter: &mut dyn Drafter,
    seqs: &mut [Sequence<C>],
    prompt_aux: &[f32],
    aux_width: usize,
    params: &GenerateParams,
    rec: &mut dyn SpanRecorder,
) -> Result<()> {
    // Before the first output token is chosen, a prompt of n tokens has n
    // states but n - 1 pairs: its last state waits for that token.
    let requests: Vec<DraftRequest<'_>> = seqs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut q = s.draft_request(i, prompt_aux);
            let pairs = q.pending_pairs();
            if s.pending_prompt.is_some() {
                q.pending_aux.end = q.pending_aux.start + pairs * aux_width;
            }
            q.pending_rows = &q.pending_rows[..pairs.min(q.pending_rows.len())];
            q
        })
        .collect();
    let taken = drafter.prefill(&requests, params.prefill_chunk_tokens, rec)?;
    for (s, &n) in seqs.iter_mut().zip(&taken) {
        s.pending_start += n;
        if let Some(range) = &mut s.pending_prompt {
            range.start += n * aux_width;
        }
        s.pending_rows.drain(..n.min(s.pending_rows.len()));
    }
    Ok(())
}
