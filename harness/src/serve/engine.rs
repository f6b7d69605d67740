//! The engine behind `specula serve`: one model pair behind a mutex, run on
//! batches of jobs ([`super::batcher`]), the counters of every finished
//! request, and the moment the first tokens exist (after prefill), for
//! streamed answers.

use super::limits::ServeLimits;
use super::metrics::Counters;
use specula_engine::generate::{past_positions, GenerateParams};
use specula_engine::generation::{FinishReason, SequenceResult};
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::{Span, SpanRecorder};
use specula_engine::tokenizer::TextTokenizer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Texts past this many bytes hand the tokenizer's freed memory back to the system.
const LARGE_TEXT: usize = 64 << 10;

/// Returns freed heap memory to the system (glibc keeps it otherwise, and a
/// server's resident memory would stay at its largest request's).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of the allocator's heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// One prompt to generate for.
#[derive(Debug, Clone)]
pub struct Job {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Tokens to generate at most.
    pub max_new_tokens: usize,
    /// 0 = greedy.
    pub temperature: f64,
    /// Sampling seed.
    pub seed: u64,
    /// Keep going past EOS.
    pub ignore_eos: bool,
    /// Answer as server-sent events.
    pub stream: bool,
}

/// A finished job.
#[derive(Debug, Clone)]
pub struct Done {
    /// Generated text.
    pub text: String,
    /// The engine's record of the sequence.
    pub result: SequenceResult,
}

/// An HTTP error answer: status and message.
pub type Failure = (u16, String);

/// Hands each step's emitted tokens of each sequence to `on_tokens`, as
/// they exist (the prefill's first token, then each verify step's).
struct StepTokens<'a> {
    on_tokens: &'a mut dyn FnMut(usize, &[u32]),
}

impl SpanRecorder for StepTokens<'_> {
    fn begin(&mut self, _: Span) {}
    fn end(&mut self, _: Span) {}
    fn emitted(&mut self, sequence: usize, tokens: &[u32]) {
        if !tokens.is_empty() {
            (self.on_tokens)(sequence, tokens);
        }
    }
}

/// The model pair and what it has counted.
pub struct Engine {
    pair: Mutex<ModelPair>,
    /// A second copy of the tokenizer, so requests are tokenized without waiting for the engine.
    tokenizer: TextTokenizer,
    vocab: usize,
    /// The target's `max_position_embeddings`, when its config names it.
    max_positions: Option<usize>,
    /// Prompt tokens at most (`--max-prompt-tokens`, else `max_positions`).
    prompt_limit: Option<usize>,
    /// The speculation knobs of every request.
    pub speculative: SpeculativeConfig,
    /// The model name (`/v1/models`, `model_name` label).
    pub name: String,
    /// Counters since start.
    pub counters: Mutex<Counters>,
    /// Which field names answers use (set after [`Engine::new`]).
    pub answers: super::field_set::Answers,
    /// The speculative algorithm `/server_info` names (SGLang's spelling).
    pub algorithm: String,
    /// Prompts past `max_position_embeddings` run ([`Engine::allow_past_context`]).
    past_context: bool,
}

impl Engine {
    /// Wraps a loaded pair and another copy of its tokenizer; prompts are
    /// refused past `max_prompt_tokens` (`None`: the target's
    /// `max_position_embeddings`, the smaller of the two when both are known).
    pub fn new(
        pair: ModelPair,
        tokenizer: TextTokenizer,
        speculative: SpeculativeConfig,
        name: String,
        max_prompt_tokens: Option<usize>,
    ) -> Engine {
        let max_positions = pair.target.config().max_position_embeddings;
        let prompt_limit = match (max_prompt_tokens, max_positions) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Engine {
            vocab: pair.target.config().vocab_size,
            max_positions,
            prompt_limit,
            pair: Mutex::new(pair),
            tokenizer,
            speculative,
            name,
            counters: Mutex::new(Counters::default()),
            answers: Default::default(),
            algorithm: "EAGLE3".into(),
            past_context: false,
        }
    }

    /// Takes prompts whose positions run past the target's
    /// `max_position_embeddings` (`specula serve --allow-past-context`, as
    /// SGLang's `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN` and vLLM's
    /// `VLLM_ALLOW_LONG_MAX_MODEL_LEN` let a server do): prompts are then
    /// bounded by `max_prompt_tokens` alone.
    pub fn allow_past_context(&mut self, max_prompt_tokens: Option<usize>) {
        self.past_context = true;
        self.max_positions = None;
        self.prompt_limit = max_prompt_tokens;
    }

    /// Token ids of `text` (special tokens added, as the sweep's engine path
    /// does without a chat template). A text too long to fit the prompt
    /// limit whatever its content is refused without tokenizing it
    /// (tokenizing takes about 100 bytes of memory per byte of text).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Failure> {
        if let (Some(limit), Some(longest)) =
            (self.prompt_limit, self.tokenizer.longest_token_bytes())
        {
            // Normalizers can shrink text (NFC composes 3 Hangul jamo into 1
            // syllable): a slack of 4 keeps the bound safe.
            let most = limit.saturating_mul(longest).saturating_mul(4);
            if text.len() > most {
                return Err((
                    400,
                    format!(
                        "a prompt of {} bytes: more than the {limit} tokens this server takes \
                         (no token of this tokenizer stands for more than {longest} bytes)",
                        text.len()
                    ),
                ));
            }
        }
        let ids = self
            .tokenizer
            .encode_with(text, true)
            .map_err(|e| (400, e.to_string()));
        if text.len() > LARGE_TEXT {
            give_back_freed_memory();
        }
        ids
    }

    /// The text of `ids` (what the answers' text is made of).
    pub fn decode(&self, ids: &[u32]) -> Result<String, Failure> {
        self.tokenizer.decode(ids).map_err(|e| (500, e.to_string()))
    }

    /// Refuses a job the engine would refuse, or that is past `limits`,
    /// before it joins a batch.
    pub fn check(&self, job: &Job, limits: &ServeLimits) -> Result<(), Failure> {
        let vocab = self.vocab;
        if job.prompt.is_empty() {
            return Err((400, "the prompt is empty".into()));
        }
        if let Some(t) = job.prompt.iter().find(|&&t| t as usize >= vocab) {
            return Err((
                400,
                format!("token id {t} is outside the vocabulary of {vocab}"),
            ));
        }
        if job.max_new_tokens == 0 {
            return Err((400, "max tokens must be at least 1".into()));
        }
        if job.max_new_tokens > limits.max_new_tokens {
            return Err((
                400,
                format!(
                    "{} new tokens asked for: this server generates at most {} per request \
                     (specula serve --max-new-tokens)",
                    job.max_new_tokens, limits.max_new_tokens
                ),
            ));
        }
        if let Some(limit) = self.prompt_limit {
            if job.prompt.len() > limit {
                return Err((
                    400,
                    format!(
                        "a prompt of {} tokens: this server takes at most {limit} \
                         (the model's max_position_embeddings, or specula serve --max-prompt-tokens)",
                        job.prompt.len()
                    ),
                ));
            }
        }
        if let Some(limit) = self.max_positions {
            let (p, n) = (job.prompt.len(), job.max_new_tokens);
            if past_positions(p, n, Some(limit)) {
                return Err((
                    400,
                    format!(
                        "a prompt of {p} tokens plus {n} new tokens exceeds the model's \
                         max_position_embeddings of {limit}"
                    ),
                ));
            }
        }
        if !(job.temperature >= 0.0 && job.temperature.is_finite()) {
            return Err((
                400,
                format!("temperature {}: must be finite and >= 0", job.temperature),
            ));
        }
        Ok(())
    }

    /// Generates `jobs` as one batch (their sampling settings are the
    /// first's, but for the seed: each job samples from its own seed's
    /// stream, so a seeded request gives the same output alone or batched);
    /// `on_first` runs when the prefill has produced every first token. Job
    /// `i` stops at the next step once `cancelled[i]` is set (its client went
    /// away); it is not counted as a finished request.
    pub fn run_batch(
        &self,
        jobs: &[Job],
        cancelled: &[Arc<AtomicBool>],
        on_tokens: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Done>, Failure> {
        let Some(job) = jobs.first() else {
            return Ok(Vec::new());
        };
        let mut pair = self.pair.lock().unwrap_or_else(|e| e.into_inner());
        let params = GenerateParams {
            speculative: self.speculative,
            temperature: job.temperature as f32,
            max_new_tokens: job.max_new_tokens,
            seed: job.seed,
            sequence_seeds: Some(jobs.iter().map(|j| j.seed).collect()),
            ignore_eos: job.ignore_eos,
            synthetic: None,
            allow_past_context: self.past_context,
            ..GenerateParams::default()
        };
        let mut rec = StepTokens { on_tokens };
        let prompts: Vec<Vec<u32>> = jobs.iter().map(|j| j.prompt.clone()).collect();
        let stop = |i: usize| cancelled.get(i).is_some_and(|c| c.load(Ordering::Relaxed));
        let g = pair
            .generate_until(&prompts, &params, &mut rec, &stop)
            .map_err(|e| (400, e.to_string()))?;
        self.counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .batch(jobs.len());
        let mut out = Vec::with_capacity(jobs.len());
        for result in g.sequences {
            let text = self
                .tokenizer
                .decode(&result.output)
                .map_err(|e| (500, e.to_string()))?;
            if result.finish != FinishReason::Cancelled {
                self.counters
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .record(&result, self.speculative);
            }
            out.push(Done { text, result });
        }
        Ok(out)
    }
}
