//! What an OpenAI-compatible `/v1/completions` answer says, read event by
//! event (vLLM's client, and SGLang's with `endpoint = "openai"`): the
//! choices' text, `usage` (on the last streamed event with
//! `stream_options.include_usage`), and the per-request speculative fields
//! the caller finds (vLLM `metrics.speculative_decoding`, SGLang
//! `sglext.spec_tokens_details`).

use super::http_client::{Http, Timed};
use super::spec_fields::SpecFields;
use super::{PromptInput, RemoteError, RequestOutcome, RequestParams};
use serde_json::{json, Value};

/// One `/v1/completions` request as both engines take it: the sampling
/// fields, `stream_options.include_usage` when streaming, the prompt as ids
/// or text, and `extra` fields (SGLang's `return_spec_tokens_details`);
/// `spec` reads the engine's per-request speculative fields from an event.
pub async fn complete(
    http: &Http,
    model: &str,
    stream: bool,
    prompt: &PromptInput,
    p: &RequestParams,
    extra: &[(&str, Value)],
    spec: fn(&Value) -> Option<SpecFields>,
) -> Result<RequestOutcome, RemoteError> {
    let mut body = json!({
        "model": model,
        "max_tokens": p.max_new_tokens,
        "temperature": p.temperature,
        "ignore_eos": p.ignore_eos,
        "stream": stream,
    });
    for (k, v) in extra {
        body[*k] = v.clone();
    }
    if p.temperature > 0.0 {
        body["seed"] = json!(p.seed);
    }
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body["prompt"] = match prompt {
        PromptInput::Ids(ids) => json!(ids),
        PromptInput::Text(t) => json!(t),
    };
    let mut got = Completion::default();
    let timed = http
        .post_timed("/v1/completions", &body, stream, |ev| {
            if let Some(f) = spec(&ev) {
                got.spec = Some(f);
            }
            got.read_event(&ev)
        })
        .await?;
    got.outcome(timed, stream)
}

/// A completion as its events arrive.
#[derive(Debug, Clone, Default)]
pub struct Completion {
    /// The text so far (each event carries a new piece).
    pub text: String,
    /// `usage.completion_tokens`, once an event carried it.
    pub completion_tokens: Option<usize>,
    /// `usage.prompt_tokens`, with it.
    pub prompt_tokens: Option<usize>,
    /// The speculative fields, once an event carried them.
    pub spec: Option<SpecFields>,
    /// `specula serve`'s step times (`specula_step_ms`), once an event carried them.
    pub server_step_s: Vec<f64>,
}

fn text_of(v: &Value) -> Result<String, RemoteError> {
    let choices = v.get("choices").and_then(Value::as_array).ok_or_else(|| {
        RemoteError(format!(
            "/v1/completions: no `choices`: {}",
            v.to_string().chars().take(200).collect::<String>()
        ))
    })?;
    Ok(choices
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect())
}

impl Completion {
    /// Reads one event (or the whole answer); says whether it carried output
    /// (a choice with text), which times the first token and the inter-token
    /// gaps (a closing event with only the finish reason does not).
    pub fn read_event(&mut self, ev: &Value) -> Result<bool, RemoteError> {
        if let Some(n) = ev
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
        {
            self.completion_tokens = Some(n as usize);
            self.prompt_tokens = ev
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .map(|n| n as usize);
        }
        if let Some(steps) = super::server_step_times(ev) {
            self.server_step_s = steps;
        }
        let piece = text_of(ev)?;
        self.text.push_str(&piece);
        Ok(!piece.is_empty())
    }

    /// The finished request; an answer without `usage` is an error.
    pub fn outcome(self, timed: Timed, stream: bool) -> Result<RequestOutcome, RemoteError> {
        let completion_tokens = self.completion_tokens.ok_or_else(|| {
            RemoteError(if stream {
                "/v1/completions: the stream ended without `usage` (stream_options.include_usage)"
                    .into()
            } else {
                "/v1/completions: no `usage.completion_tokens`".into()
            })
        })?;
        let spec = self.spec.unwrap_or_default();
        Ok(RequestOutcome {
            text: self.text,
            completion_tokens,
            prompt_tokens: self.prompt_tokens,
            verify_steps: spec.verify_steps,
            accepted_drafts: spec.accepted,
            proposed_drafts: spec.proposed,
            accept_histogram: spec.histogram,
            field_form: spec.form,
            ttft_s: timed.ttft_s,
            e2e_s: timed.e2e_s,
            itl_s: timed.itl_s,
            server_step_s: self.server_step_s,
            ..RequestOutcome::default()
        })
    }
}
