//! The engine behind `specula serve`: one model pair behind a mutex (one
//! request generates at a time), the counters of every finished request, and
//! the moment the first token exists (after prefill), for streamed answers.

use super::metrics::Counters;
use specula_engine::generate::GenerateParams;
use specula_engine::pair::ModelPair;
use specula_engine::spec::SpecConfig;
use specula_engine::stats::SequenceResult;
use specula_engine::timing::{Span, SpanRecorder};
use std::sync::Mutex;

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

/// Calls `on_first` once, when the first step (the prefill, which yields
/// the first token) is over.
struct FirstToken<'a> {
    on_first: Option<&'a mut dyn FnMut()>,
}

impl SpanRecorder for FirstToken<'_> {
    fn begin(&mut self, _: Span) {}
    fn end(&mut self, _: Span) {}
    fn finish_step(&mut self) {
        if let Some(f) = self.on_first.take() {
            f();
        }
    }
}

/// The model pair and what it has counted.
pub struct Engine {
    pair: Mutex<ModelPair>,
    /// The speculation knobs of every request.
    pub spec: SpecConfig,
    /// The model name (`/v1/models`, `model_name` label).
    pub name: String,
    /// Counters since start.
    pub counters: Mutex<Counters>,
}

impl Engine {
    /// Wraps a loaded pair.
    pub fn new(pair: ModelPair, spec: SpecConfig, name: String) -> Engine {
        Engine {
            pair: Mutex::new(pair),
            spec,
            name,
            counters: Mutex::new(Counters::default()),
        }
    }

    /// Token ids of `text` (special tokens added, as the sweep's engine path does without a chat template).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Failure> {
        let pair = self.pair.lock().unwrap_or_else(|e| e.into_inner());
        pair.tokenizer
            .encode_with(text, true)
            .map_err(|e| (400, e.to_string()))
    }

    /// Generates one job (serialized with every other); `on_first` runs when the first token exists.
    pub fn run(&self, job: &Job, on_first: &mut dyn FnMut()) -> Result<Done, Failure> {
        let mut pair = self.pair.lock().unwrap_or_else(|e| e.into_inner());
        let params = GenerateParams {
            spec: self.spec,
            temperature: job.temperature as f32,
            max_new_tokens: job.max_new_tokens,
            seed: job.seed,
            ignore_eos: job.ignore_eos,
        };
        let mut rec = FirstToken {
            on_first: Some(on_first),
        };
        let g = pair
            .generate(std::slice::from_ref(&job.prompt), &params, &mut rec)
            .map_err(|e| (400, e.to_string()))?;
        let result = g
            .sequences
            .into_iter()
            .next()
            .ok_or((500, "no sequence".to_string()))?;
        let text = pair
            .tokenizer
            .decode(&result.output)
            .map_err(|e| (500, e.to_string()))?;
        self.counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(&result, self.spec);
        Ok(Done { text, result })
    }
}
