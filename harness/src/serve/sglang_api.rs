//! The SGLang subset of `specula serve`: `POST /generate` with `text` or
//! `input_ids` (one prompt) and `sampling_params {max_new_tokens,
//! temperature, ignore_eos, sampling_seed}`, answering `text`, `output_ids`
//! and `meta_info {id, prompt_tokens, completion_tokens, finish_reason,
//! e2e_latency}` plus, when speculating, `spec_verify_ct`,
//! `spec_accept_histogram` (verify steps by accepted draft tokens),
//! `spec_accept_length` and `spec_accept_rate`; and `GET /get_server_info`
//! with `avg_spec_accept_length` (top level and in `internal_states[0]`)
//! and this server's own `specula_batches` and `specula_largest_batch`.

use super::engine::{Done, Engine, Failure, Job};
use super::fields::{self, present};
use serde_json::{json, Value};
use specula_engine::generation::FinishReason;

/// The job a `/generate` body asks for; every field read strictly ([`fields`]).
pub fn job(engine: &Engine, body: &Value) -> Result<Job, Failure> {
    let prompt = match (present(body, "input_ids"), present(body, "text")) {
        (Some(Value::Array(ids)), _) => fields::token_ids("input_ids", ids)?,
        (Some(other), _) => {
            return Err((
                400,
                format!("`input_ids` must be one list of token ids (batches are not supported; got {other})"),
            ))
        }
        (None, Some(Value::String(t))) => engine.encode(t)?,
        _ => {
            return Err((
                400,
                "give `text` (a string) or `input_ids` (a list of ids)".into(),
            ))
        }
    };
    let sp = match present(body, "sampling_params") {
        None => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(v) => {
            return Err((
                400,
                format!("`sampling_params` must be an object (got {v})"),
            ))
        }
    };
    fields::whole_distribution(&sp)?;
    Ok(Job {
        prompt,
        max_new_tokens: fields::u64_field(&sp, "max_new_tokens")?.map_or(128, |n| n as usize),
        temperature: fields::f64_field(&sp, "temperature")?.unwrap_or(1.0),
        seed: fields::u64_field(&sp, "sampling_seed")?.unwrap_or(0),
        ignore_eos: fields::bool_field(&sp, "ignore_eos")?.unwrap_or(false),
        stream: fields::bool_field(body, "stream")?.unwrap_or(false),
    })
}

/// The first streamed event, sent when the first token exists (its text
/// comes with the last event, which holds the whole text as SGLang's do).
pub fn first_event() -> Value {
    json!({"text": "", "meta_info": {"completion_tokens": 1}})
}

/// The answer to `/generate` (also the last streamed event).
pub fn answer(engine: &Engine, done: &Done, elapsed_s: f64) -> Value {
    let r = &done.result;
    let mut meta = json!({
        "id": format!("specula-{}", engine.counters.lock().unwrap_or_else(|e| e.into_inner()).requests),
        "prompt_tokens": r.prompt_len,
        "completion_tokens": r.output.len(),
        "finish_reason": match r.finish {
            FinishReason::Eos => json!({"type": "stop"}),
            FinishReason::Length => json!({"type": "length", "length": r.output.len()}),
            FinishReason::Cancelled => json!({"type": "abort", "message": "the client went away"}),
        },
        "e2e_latency": elapsed_s,
    });
    if !engine.speculative.is_baseline() {
        let mut hist = vec![0u64; engine.speculative.steps + 1];
        for &a in &r.accepted_per_step {
            hist[(a as usize).min(engine.speculative.steps)] += 1;
        }
        let accepted: u64 = r.accepted_per_step.iter().map(|&a| a as u64).sum();
        let slots = (r.verify_steps * engine.speculative.num_draft_tokens.saturating_sub(1)) as f64;
        meta["spec_verify_ct"] = json!(r.verify_steps);
        meta["spec_accept_histogram"] = json!(hist);
        meta["spec_accept_length"] = json!(r.tau());
        meta["spec_accept_rate"] = json!(if slots > 0.0 {
            accepted as f64 / slots
        } else {
            0.0
        });
    }
    json!({"text": done.text, "output_ids": r.output, "meta_info": meta})
}

/// `GET /get_server_info`.
pub fn server_info(engine: &Engine) -> Value {
    let c = engine
        .counters
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let avg = c.avg_accept_length();
    let s = engine.speculative;
    json!({
        "model_path": engine.name,
        "speculative_algorithm": if s.is_baseline() { Value::Null } else { json!("EAGLE3") },
        "speculative_num_steps": s.steps,
        "speculative_eagle_topk": s.topk,
        "speculative_num_draft_tokens": s.num_draft_tokens,
        "avg_spec_accept_length": avg,
        "internal_states": [{"avg_spec_accept_length": avg}],
        "specula_batches": c.batches,
        "specula_largest_batch": c.largest_batch,
        "version": format!("specula {}", env!("CARGO_PKG_VERSION")),
    })
}
