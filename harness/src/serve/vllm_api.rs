//! The vLLM subset of `specula serve`: OpenAI-compatible
//! `POST /v1/completions` (`prompt` as a string or one list of token ids,
//! `max_tokens` (default 16), `temperature` (default 1), `seed`,
//! `ignore_eos`, `stream` with `stream_options.include_usage`) and
//! `GET /v1/models`. The spec-decode counters are on `/metrics` ([`super::metrics`]).

use super::engine::{Done, Engine, Failure, Job};
use super::field_set::FieldSet;
use super::fields;
use serde_json::{json, Value};
use specula_engine::generation::FinishReason;
use std::time::{SystemTime, UNIX_EPOCH};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The job a `/v1/completions` body asks for.
pub fn job(engine: &Engine, body: &Value) -> Result<Job, Failure> {
    let prompt =
        match body.get("prompt") {
            Some(Value::String(t)) => engine.encode(t)?,
            Some(Value::Array(ids)) if !ids.iter().any(|v| v.is_array() || v.is_string()) => {
                fields::token_ids("prompt", ids)?
            }
            _ => return Err((
                400,
                "`prompt` must be a string or one list of token ids (batches are not supported)"
                    .into(),
            )),
        };
    if let Some(m) = body.get("model").and_then(Value::as_str) {
        if m != engine.name {
            return Err((
                404,
                format!(
                    "The model `{m}` does not exist (this server serves `{}`)",
                    engine.name
                ),
            ));
        }
    }
    fields::whole_distribution(body)?;
    Ok(Job {
        prompt,
        max_new_tokens: fields::u64_field(body, "max_tokens")?.map_or(16, |n| n as usize),
        temperature: fields::f64_field(body, "temperature")?.unwrap_or(1.0),
        seed: fields::u64_field(body, "seed")?.unwrap_or(0),
        ignore_eos: fields::bool_field(body, "ignore_eos")?.unwrap_or(false),
        stream: fields::bool_field(body, "stream")?.unwrap_or(false),
    })
}

fn head(engine: &Engine, choices: Value, usage: Value) -> Value {
    let n = engine
        .counters
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .requests;
    json!({
        "id": format!("cmpl-specula-{n}"),
        "object": "text_completion",
        "created": now(),
        "model": engine.name,
        "choices": choices,
        "usage": usage,
    })
}

/// A streamed step's event: the text that step added.
pub fn step_event(engine: &Engine, piece: &str) -> Value {
    head(
        engine,
        json!([{"index": 0, "text": piece, "logprobs": null, "finish_reason": null}]),
        Value::Null,
    )
}

fn finish(done: &Done) -> &'static str {
    match done.result.finish {
        FinishReason::Eos => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "abort",
    }
}

fn usage(done: &Done) -> Value {
    let r = &done.result;
    json!({
        "prompt_tokens": r.prompt_len,
        "completion_tokens": r.output.len(),
        "total_tokens": r.prompt_len + r.output.len(),
    })
}

/// vLLM's per-request `metrics` object (`--per-request-spec-decode-metrics
/// summary`), when this server answers with it and speculates.
fn per_request_metrics(engine: &Engine, done: &Done) -> Option<Value> {
    let a = engine.answers;
    if !a.per_request_metrics || a.fields != FieldSet::Current || engine.speculative.is_baseline() {
        return None;
    }
    let r = &done.result;
    let accepted: u64 = r.accepted_per_step.iter().map(|&x| x as u64).sum();
    let k = engine.speculative.num_draft_tokens.saturating_sub(1);
    let drafted = (r.verify_steps * k) as u64;
    let steps = r.verify_steps.max(1) as f64;
    Some(json!({"speculative_decoding": {
        "mean_acceptance_length": 1.0 + accepted as f64 / steps,
        "draft_acceptance_rate": if drafted > 0 { accepted as f64 / drafted as f64 } else { 0.0 },
        "acceptance_histogram": super::sglang_api::histogram(engine, done),
        "num_spec_steps": r.verify_steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": k,
    }}))
}

/// The answer to `POST /v1/completions` (with SGLang's `sglext` when the
/// request asked for `return_spec_tokens_details`).
pub fn answer(engine: &Engine, done: &Done, body: &Value) -> Value {
    let choice =
        json!([{"index": 0, "text": done.text, "logprobs": null, "finish_reason": finish(done)}]);
    let mut v = head(engine, choice, usage(done));
    if let Some(m) = per_request_metrics(engine, done) {
        v["metrics"] = m;
    }
    if let Some(x) = super::sglang_api::sglext(engine, done, body) {
        v["sglext"] = x;
    }
    v
}

/// The streamed events after the steps': the finish reason with the text
/// the steps did not carry (`streamed`: the text they did), then `usage`
/// when asked for.
pub fn last_events(engine: &Engine, done: &Done, body: &Value, streamed: &str) -> Vec<Value> {
    let rest = done.text.strip_prefix(streamed).unwrap_or(&done.text);
    let choice =
        json!([{"index": 0, "text": rest, "logprobs": null, "finish_reason": finish(done)}]);
    let mut events = vec![head(engine, choice, Value::Null)];
    if body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        events.push(head(engine, json!([]), usage(done)));
    }
    // vLLM sends the per-request metrics on the last chunk; SGLang's
    // `sglext` goes there too.
    if let (Some(m), Some(last)) = (per_request_metrics(engine, done), events.last_mut()) {
        last["metrics"] = m;
    }
    if let (Some(x), Some(last)) = (
        super::sglang_api::sglext(engine, done, body),
        events.last_mut(),
    ) {
        last["sglext"] = x;
    }
    events
}

/// `GET /v1/models`.
pub fn models(engine: &Engine) -> Value {
    json!({"object": "list", "data": [{"id": engine.name, "object": "model", "owned_by": "specula"}]})
}
