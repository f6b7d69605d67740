//! Which protocol a generation request came in by, and the answers it gets
//! in that protocol ([`sglang_api`] or [`vllm_api`]).

use super::engine::{Done, Engine, Failure, Job};
use super::{sglang_api, vllm_api};
use serde_json::{json, Value};

/// The protocol of a generation endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// SGLang's native `POST /generate`.
    Sglang,
    /// vLLM's OpenAI-compatible `POST /v1/completions`.
    Vllm,
}

/// How an answer is written: the protocol, and whether the
/// `--fault=impossible` hook inflates SGLang's counters.
#[derive(Debug, Clone, Copy)]
pub struct Answering {
    /// The request's protocol.
    pub protocol: Protocol,
    /// SGLang answers claim a billion times the tokens generated.
    pub impossible: bool,
}

impl Protocol {
    /// Parses a request body into its JSON and the job it asks for
    /// (tokenizing a text prompt: run it off the async threads).
    pub fn job(self, engine: &Engine, body: &[u8]) -> Result<(Value, Job), Failure> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| (400, format!("malformed JSON: {e}")))?;
        let job = match self {
            Protocol::Sglang => sglang_api::job(engine, &v)?,
            Protocol::Vllm => vllm_api::job(engine, &v)?,
        };
        Ok((v, job))
    }
}

impl Answering {
    /// The whole answer of a finished job (`body`: the request's).
    pub fn answer(self, engine: &Engine, done: &Done, body: &Value, elapsed_s: f64) -> Value {
        match self.protocol {
            Protocol::Sglang => self.tamper(sglang_api::answer(engine, done, elapsed_s)),
            Protocol::Vllm => vllm_api::answer(engine, done, body),
        }
    }

    /// The streamed event of one step: `text` is the whole text so far
    /// (SGLang's events repeat it), `piece` this step's part (vLLM's carry
    /// it), `tokens` the output tokens so far.
    pub fn step_event(self, engine: &Engine, text: &str, piece: &str, tokens: usize) -> Value {
        match self.protocol {
            Protocol::Sglang => sglang_api::step_event(text, tokens),
            Protocol::Vllm => vllm_api::step_event(engine, piece),
        }
    }

    /// The streamed events that end a stream (before `[DONE]`); `streamed`
    /// is the text the step events carried.
    pub fn last_events(
        self,
        engine: &Engine,
        result: Result<Done, Failure>,
        body: &Value,
        streamed: &str,
        elapsed_s: f64,
    ) -> Vec<Value> {
        match (result, self.protocol) {
            (Ok(done), Protocol::Sglang) => vec![self.answer(engine, &done, body, elapsed_s)],
            (Ok(done), Protocol::Vllm) => vllm_api::last_events(engine, &done, body, streamed),
            (Err(f), _) => vec![error_body(&f)],
        }
    }

    /// Whether a step event with this text `piece` counts as output for the
    /// client (SGLang: every step event brings tokens; OpenAI: a choice with text).
    pub fn counts_as_output(self, piece: &str) -> bool {
        self.protocol == Protocol::Sglang || !piece.is_empty()
    }

    /// Adds the server's step times of a stream (`specula_step_ms`: the
    /// milliseconds between the engine steps of consecutive events counted
    /// as output) to its last closing event: in SGLang's `meta_info`, at the
    /// top level of an OpenAI chunk (neither engine sends such a list; the
    /// name says it is this server's). Error answers get none.
    pub fn add_step_times(self, events: &mut [Value], gaps_ms: &[f64]) {
        let Some(last) = events.last_mut().filter(|v| v.get("error").is_none()) else {
            return;
        };
        let at = match self.protocol {
            Protocol::Sglang => match last.get_mut("meta_info") {
                Some(m) => m,
                None => return,
            },
            Protocol::Vllm => last,
        };
        at["specula_step_ms"] = json!(gaps_ms);
    }

    /// With the impossible-counters hook, `completion_tokens` times a billion.
    fn tamper(self, mut answer: Value) -> Value {
        if self.impossible {
            if let Some(n) = answer
                .pointer("/meta_info/completion_tokens")
                .and_then(Value::as_u64)
            {
                answer["meta_info"]["completion_tokens"] = json!(n * 1_000_000_000);
            }
        }
        answer
    }
}

/// An error in the OpenAI shape (`{"error": {"message", "code"}}`), which
/// both protocols' clients read.
pub fn error_body(f: &Failure) -> Value {
    json!({"error": {"message": f.1, "code": f.0}})
}
