//! The vLLM subset of `specula serve`: OpenAI-compatible
//! `POST /v1/completions` (`prompt` as a string or one list of token ids,
//! `max_tokens` (default 16), `temperature` (default 1), `seed`,
//! `ignore_eos`, `stream` with `stream_options.include_usage`) and
//! `GET /v1/models`. The spec-decode counters are on `/metrics` ([`super::metrics`]).

use super::{events_response, json_response, Engine, Failure, Job};
use serde_json::{json, Value};
use specula_engine::stats::FinishReason;
use std::io::Cursor;
use std::time::{SystemTime, UNIX_EPOCH};
use tiny_http::Response;

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
            Some(Value::Array(ids)) if ids.iter().all(Value::is_u64) => ids
                .iter()
                .filter_map(Value::as_u64)
                .map(|n| n as u32)
                .collect(),
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
    let max = match body.get("max_tokens") {
        None | Some(Value::Null) => 16,
        Some(v) => v
            .as_u64()
            .ok_or((400, "`max_tokens` must be a positive integer".to_string()))?
            as usize,
    };
    Ok(Job {
        prompt,
        max_new_tokens: max,
        temperature: body
            .get("temperature")
            .and_then(Value::as_f64)
            .unwrap_or(1.0),
        seed: body.get("seed").and_then(Value::as_u64).unwrap_or(0),
        ignore_eos: body
            .get("ignore_eos")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// `POST /v1/completions`.
pub fn completions(engine: &Engine, body: &Value) -> Result<Response<Cursor<Vec<u8>>>, Failure> {
    let job = job(engine, body)?;
    let done = engine.run(&job)?;
    let r = &done.result;
    let id = format!(
        "cmpl-specula-{}",
        engine
            .counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .requests
    );
    let finish = match r.finish {
        FinishReason::Eos => "stop",
        FinishReason::Length => "length",
    };
    let usage = json!({
        "prompt_tokens": r.prompt_len,
        "completion_tokens": r.output.len(),
        "total_tokens": r.prompt_len + r.output.len(),
    });
    let head = |choices: Value, usage: Value| json!({"id": id, "object": "text_completion", "created": now(), "model": engine.name, "choices": choices, "usage": usage});
    if body.get("stream").and_then(Value::as_bool).unwrap_or(false) {
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut events = vec![head(
            json!([{"index": 0, "text": done.text, "logprobs": null, "finish_reason": finish}]),
            Value::Null,
        )];
        if include_usage {
            events.push(head(json!([]), usage));
        }
        Ok(events_response(&events))
    } else {
        Ok(json_response(
            200,
            &head(
                json!([{"index": 0, "text": done.text, "logprobs": null, "finish_reason": finish}]),
                usage,
            ),
        ))
    }
}

/// `GET /v1/models`.
pub fn models(engine: &Engine) -> Value {
    json!({"object": "list", "data": [{"id": engine.name, "object": "model", "owned_by": "specula"}]})
}
