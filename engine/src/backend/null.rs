//! Backends that do no model work: every forward returns outputs of the
//! right shapes at once (zero hidden states, a fixed next token per input
//! token, a fixed top-k for the draft). Running the decode loop on them
//! times the loop's own host work (tree search, batch building, acceptance,
//! bookkeeping) apart from any model, at a real model's sizes.

use super::{DraftBackend, LogitsWanted, SequenceCache, TargetBackend};
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::{DraftOutput, ForwardBatch, HiddenInput, TargetOutput};

/// A cache that only counts entries.
#[derive(Debug, Clone, Default)]
pub struct NullCache {
    len: usize,
    committed: usize,
}

impl SequenceCache for NullCache {
    fn len(&self) -> usize {
        self.len
    }
    fn committed(&self) -> usize {
        self.committed
    }
}

/// Appends each row of `batch` to its cache's count.
fn append(batch: &ForwardBatch, caches: &mut [NullCache]) -> Result<()> {
    for r in &batch.rows {
        let c = caches.get_mut(r.cache).ok_or_else(|| {
            EngineError::setting("forward batch", format!("row names cache {}", r.cache))
        })?;
        c.len += 1;
    }
    Ok(())
}

/// The next token the null target predicts after `token`: a fixed
/// permutation-like map, so greedy output is deterministic.
pub fn null_next_token(token: u32, vocab: usize) -> u32 {
    ((u64::from(token) * 7919 + 17) % vocab as u64) as u32
}

/// A target of `config`'s shape that does no work.
#[derive(Debug, Clone)]
pub struct NullTarget {
    config: TargetConfig,
}

impl NullTarget {
    /// A null target with `config`'s sizes.
    pub fn new(config: TargetConfig) -> NullTarget {
        NullTarget { config }
    }
}

impl TargetBackend for NullTarget {
    type Cache = NullCache;

    fn config(&self) -> &TargetConfig {
        &self.config
    }

    fn new_cache(&self) -> Result<NullCache> {
        Ok(NullCache::default())
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [NullCache],
        capture: &[usize],
        wanted: LogitsWanted,
    ) -> Result<TargetOutput> {
        append(batch, caches)?;
        let vocab = self.config.vocab_size;
        let aux = vec![0.0; batch.rows.len() * capture.len() * self.config.hidden_size];
        let next = batch
            .logit_rows
            .iter()
            .map(|&r| null_next_token(batch.rows[r].token, vocab));
        Ok(match wanted {
            LogitsWanted::Argmax => TargetOutput {
                logits: Vec::new(),
                aux,
                aux_rows: None,
                argmax: next.collect(),
            },
            LogitsWanted::Logits => {
                let mut logits = vec![0.0; batch.logit_rows.len() * vocab];
                for (i, t) in next.enumerate() {
                    logits[i * vocab + t as usize] = 10.0;
                }
                TargetOutput {
                    logits,
                    aux,
                    aux_rows: None,
                    argmax: Vec::new(),
                }
            }
        })
    }

    fn commit(&self, caches: &mut [&mut NullCache], keeps: &[Vec<usize>]) -> Result<()> {
        for (c, keep) in caches.iter_mut().zip(keeps) {
            c.committed += keep.len();
            c.len = c.committed;
        }
        Ok(())
    }

    fn commit_all(&self, cache: &mut NullCache) -> Result<()> {
        cache.committed = cache.len;
        Ok(())
    }
}

/// An EAGLE-3 draft of `config`'s shape that does no work: its best guess
/// after a token is the null target's next token, except after every third
/// token id (so some drafts are accepted and some rejected), then the ids
/// after it, with falling log-probabilities.
#[derive(Debug, Clone)]
pub struct NullDraft {
    config: DraftConfig,
    d2t: Vec<u32>,
}

impl NullDraft {
    /// A null draft with `config`'s sizes, draft id `i` mapping to target id `i`.
    pub fn new(config: DraftConfig) -> NullDraft {
        let d2t = (0..config.draft_vocab_size as u32).collect();
        NullDraft { config, d2t }
    }
}

impl NullDraft {
    /// The draft id guessed after `token`.
    fn guess(&self, token: u32) -> usize {
        let v = self.config.draft_vocab_size;
        let right = null_next_token(token, self.config.vocab_size) as usize;
        if token.is_multiple_of(3) || right >= v {
            (right + 1) % v
        } else {
            right
        }
    }
}

impl DraftBackend for NullDraft {
    type Cache = NullCache;

    fn config(&self) -> &DraftConfig {
        &self.config
    }

    fn draft_to_target(&self) -> &[u32] {
        &self.d2t
    }

    fn new_cache(&self) -> Result<NullCache> {
        Ok(NullCache::default())
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        _hidden: HiddenInput<'_>,
        caches: &mut [NullCache],
        top_k: Option<usize>,
    ) -> Result<DraftOutput> {
        append(batch, caches)?;
        let v = self.config.draft_vocab_size;
        let hidden = vec![0.0; batch.logit_rows.len() * self.config.hidden_size];
        let guesses: Vec<usize> = batch
            .logit_rows
            .iter()
            .map(|&r| self.guess(batch.rows[r].token))
            .collect();
        Ok(match top_k {
            Some(k) => DraftOutput {
                hidden,
                logits: Vec::new(),
                top: guesses
                    .iter()
                    .map(|&g| (0..k).map(|i| ((g + i) % v, -0.1 - i as f32)).collect())
                    .collect(),
            },
            None => {
                let mut logits = vec![0.0; guesses.len() * v];
                for (row, &g) in logits.chunks_exact_mut(v).zip(&guesses) {
                    for i in 0..8.min(v) {
                        row[(g + i) % v] = 8.0 - i as f32;
                    }
                }
                DraftOutput {
                    hidden,
                    logits,
                    top: Vec::new(),
                }
            }
        })
    }

    fn commit_all(&self, cache: &mut NullCache) {
        cache.committed = cache.len;
    }

    fn rollback(&self, cache: &mut NullCache) {
        cache.len = cache.committed;
    }

    fn truncate(&self, cache: &mut NullCache, len: usize) {
        cache.len = len.clamp(cache.committed, cache.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::CaptureChoice;
    use crate::config::default_draft_config;
    use crate::generate::{generate, GenerateParams};
    use crate::speculative::{EagleDrafter, SpeculativeConfig};
    use crate::timing::NullRecorder;

    fn target() -> NullTarget {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../bench/configs/llama-3.1-8b.json"
        );
        let mut c = TargetConfig::load_file(std::path::Path::new(path)).unwrap();
        c.vocab_size = 997; // small, so that the draft's guesses land in its vocabulary
        NullTarget::new(c)
    }

    fn run(
        t: &NullTarget,
        prompts: &[Vec<u32>],
        speculative: SpeculativeConfig,
    ) -> (Vec<Vec<u32>>, f64) {
        let capture = CaptureChoice::default().resolve(None, 32).unwrap();
        let mut d =
            EagleDrafter::new(NullDraft::new(default_draft_config(t.config())), capture).unwrap();
        let params = GenerateParams {
            speculative,
            max_new_tokens: 40,
            ignore_eos: true,
            ..GenerateParams::default()
        };
        let drafter: Option<&mut dyn crate::speculative::Drafter> =
            (!speculative.is_baseline()).then_some(&mut d as &mut dyn crate::speculative::Drafter);
        let g = generate(t, prompts, &params, drafter, &mut NullRecorder).unwrap();
        let tau = g.tau();
        (g.sequences.into_iter().map(|s| s.output).collect(), tau)
    }

    #[test]
    fn the_null_target_is_followed_greedily_and_speculation_is_lossless_on_it() {
        let t = target();
        let prompts: Vec<Vec<u32>> = (0..3u32).map(|i| vec![5 + i, 40 + i, 300 + i]).collect();
        let (base, _) = run(&t, &prompts, SpeculativeConfig::BASELINE);
        for (p, out) in prompts.iter().zip(&base) {
            let mut prev = *p.last().unwrap();
            for &tok in out {
                assert_eq!(tok, null_next_token(prev, 997));
                prev = tok;
            }
            assert_eq!(out.len(), 40);
        }
        for speculative in [
            SpeculativeConfig::chain(3),
            SpeculativeConfig::new(3, 2, 6).unwrap(),
        ] {
            let (out, tau) = run(&t, &prompts, speculative);
            assert_eq!(out, base, "{speculative}");
            // The draft is right after two token ids in three: some drafts are
            // accepted, some rejected.
            assert!(tau > 1.2 && tau < 4.0, "{speculative}: tau {tau}");
            assert_eq!(
                run(&t, &prompts[..1], speculative).0[0],
                base[0],
                "{speculative} alone"
            );
        }
    }
}
