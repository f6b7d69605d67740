//! Remote (served) engines: SGLang ([`sglang`]) and vLLM ([`vllm`]) over
//! HTTP, started from a command template ([`server_process`]) or attached
//! to by URL, and driven at concurrency = batch size ([`rows`]). The
//! in-process engine runs in [`crate::sweep::runner`]; a spec picks one with
//! its `backend` field ([`EngineKind`]).
//!
//! Each client speaks its server's protocol through [`ServingClient`]: one
//! call per request (text or token ids in; completion tokens, client-side
//! timings and per-request acceptance fields out), and one acceptance reading
//! per row (SGLang: `meta_info` sums; vLLM: `/metrics` counters before and after).

pub mod config;
pub mod connect;
pub mod http_client;
pub mod methods;
pub mod openai;
pub mod plausible;
pub mod prometheus;
pub mod prompts;
pub mod records;
pub mod row;
pub mod rows;
pub mod served_config;
pub mod server_process;
pub mod sglang;
pub mod spec_fields;
pub mod sse;
pub mod template;
pub mod vllm;

pub use config::{EngineKind, ServerSpec, SglangEndpoint};

use futures_util::future::LocalBoxFuture;
use serde_json::Value;

/// What a client call answers, later: the client runs on a tokio runtime of
/// the runner's ([`rows`]), one thread polling every request in flight.
pub type Reply<'a, T> = LocalBoxFuture<'a, Result<T, RemoteError>>;

/// What a prompt is sent as.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptInput {
    /// Token ids (the target's tokenizer is available locally: exactly the in-process engine's prompt).
    Ids(Vec<u32>),
    /// Text (the server tokenizes).
    Text(String),
}

/// The sampling settings of every request of a row.
#[derive(Debug, Clone, Copy)]
pub struct RequestParams {
    /// Tokens to generate at most.
    pub max_new_tokens: usize,
    /// 0 = greedy.
    pub temperature: f64,
    /// Sampling seed.
    pub seed: u64,
    /// Keep generating past end-of-sequence.
    pub ignore_eos: bool,
}

/// One finished request, as the client saw it.
#[derive(Debug, Clone, Default)]
pub struct RequestOutcome {
    /// Generated text (compared with the baseline's for `lossless`).
    pub text: String,
    /// Generated tokens (the server's count).
    pub completion_tokens: usize,
    /// Prompt tokens (the server's count), when reported.
    pub prompt_tokens: Option<usize>,
    /// Verify steps of the request (SGLang `spec_verify_ct`, vLLM
    /// `num_spec_steps`), when reported.
    pub verify_steps: Option<usize>,
    /// Accepted draft tokens of the request, when reported.
    pub accepted_drafts: Option<usize>,
    /// Proposed draft tokens of the request, when reported.
    pub proposed_drafts: Option<usize>,
    /// Verify steps by accepted draft tokens (SGLang
    /// `spec_correct_drafts_histogram`, vLLM `acceptance_histogram`), when reported.
    pub accept_histogram: Option<Vec<u64>>,
    /// Which field names the server used ([`spec_fields::FieldForm`]).
    pub field_form: Option<spec_fields::FieldForm>,
    /// Seconds from the row's start to sending (set by the row runner).
    pub sent_at_s: f64,
    /// Seconds from the row's start at which the open-loop schedule had the
    /// request leave (`None` in a closed loop): `sent_at_s` minus this is the
    /// send lag (a full concurrency bound, or a late wake-up).
    pub scheduled_at_s: Option<f64>,
    /// Seconds between consecutive streamed events carrying output (empty
    /// when not streamed or when one event carried everything).
    pub itl_s: Vec<f64>,
    /// Seconds from sending to the first streamed event with generated output
    /// (SGLang: `completion_tokens` grew; OpenAI endpoints: a choice with text);
    /// the whole time when not streamed.
    pub ttft_s: f64,
    /// Seconds from sending to the last byte.
    pub e2e_s: f64,
    /// The server's own clock of the streamed events counted as output:
    /// seconds between the engine steps that produced consecutive ones
    /// (`specula serve`'s `specula_step_ms`; empty where a server does not say).
    pub server_step_s: Vec<f64>,
}

/// The server's step times of a stream (`specula_step_ms` in `v`, milliseconds), in seconds.
pub fn server_step_times(v: &Value) -> Option<Vec<f64>> {
    let list = v.get("specula_step_ms")?.as_array()?;
    list.iter().map(|g| g.as_f64().map(|ms| ms / 1e3)).collect()
}

/// A row's acceptance as the server reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Acceptance {
    /// Verify steps (0 for a baseline).
    pub verify_steps: usize,
    /// Accepted draft tokens.
    pub accepted: usize,
    /// a_k for k = 1..=steps (empty when the server does not report it).
    pub positions: Vec<f64>,
    /// The server's own running acceptance length (SGLang `avg_spec_accept_length`), for a cross-check.
    pub server_tau: Option<f64>,
    /// Draft tokens proposed, when the server reports them (adaptive
    /// drafting proposes fewer than verify steps x (num_draft_tokens - 1)).
    pub proposed: Option<usize>,
}

impl Acceptance {
    /// A baseline row's: every decode token is one verify step, nothing drafted.
    pub fn baseline(decode_tokens: usize) -> Acceptance {
        Acceptance {
            verify_steps: decode_tokens,
            ..Acceptance::default()
        }
    }
}

/// The decode-phase tokens of a row's requests: each request's first token
/// comes from its prefill, not from a verify step.
pub fn decode_tokens(outcomes: &[RequestOutcome]) -> usize {
    outcomes
        .iter()
        .map(|o| o.completion_tokens.saturating_sub(1))
        .sum()
}

/// Why a request or a server failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct RemoteError(pub String);

impl RemoteError {
    /// An error with `context: what`.
    pub fn new(context: &str, what: impl std::fmt::Display) -> RemoteError {
        RemoteError(format!("{context}: {what}"))
    }
}

/// A client of one serving protocol, called by the row runner. Calls are
/// futures: a row keeps many requests in flight on one thread, and dropping a
/// call's future (an interrupt) closes its connection.
pub trait ServingClient {
    /// The `backend` column (`sglang`, `vllm`).
    fn name(&self) -> &'static str;
    /// Whether the server answers its health check.
    fn healthy(&self) -> LocalBoxFuture<'_, bool>;
    /// Called before a row's first request (e.g. reads counters).
    fn begin_row(&mut self) -> Reply<'_, ()>;
    /// Sends one prompt and waits for the whole answer (streamed where the protocol allows).
    fn request<'a>(
        &'a self,
        prompt: &'a PromptInput,
        params: &'a RequestParams,
    ) -> Reply<'a, RequestOutcome>;
    /// Called after a row's last request: the row's acceptance.
    fn end_row<'a>(
        &'a mut self,
        outcomes: &'a [RequestOutcome],
        steps: usize,
    ) -> Reply<'a, Acceptance>;
    /// The engine's version as the server reports it (SGLang `/server_info`,
    /// vLLM `/version`), if it does.
    fn engine_version(&self) -> LocalBoxFuture<'_, Option<String>>;
    /// What the server says it loaded (SGLang `/server_info`), if it says.
    fn served_config(&self) -> LocalBoxFuture<'_, Option<serde_json::Value>> {
        Box::pin(async { None })
    }
}
