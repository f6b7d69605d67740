//! The SGLang subset of `specula serve`: `POST /generate` with `text` or
//! `input_ids` (one prompt) and `sampling_params {max_new_tokens,
//! temperature, ignore_eos, sampling_seed}`, answering `text`, `output_ids`
//! and `meta_info {id, prompt_tokens, completion_tokens, finish_reason,
//! e2e_latency}` plus, when speculating, the current field set
//! (`spec_verify_ct`, `spec_num_correct_drafts`, `spec_num_proposed_drafts`,
//! `spec_correct_drafts_histogram`, `spec_accept_length` = completion tokens
//! / verify steps as SGLang computes it, `spec_accept_rate`, and the aliases
//! SGLang still sends) or, with `--field-set legacy`, the older one
//! (`spec_verify_ct`, `spec_accept_histogram`); and `GET /server_info` (alias
//! `/get_server_info`; legacy: only the alias) with `avg_spec_accept_length`
//! (top level and per data-parallel rank in `internal_states`, with the
//! rank's `num_reqs`), the speculative settings it runs, its `version`, and
//! this server's own `specula_batches` and `specula_largest_batch`.

use super::engine::{Done, Engine, Failure, Job};
use super::field_set::FieldSet;
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

/// A streamed step's event: the whole text so far and the tokens so far,
/// as SGLang's (non-incremental) stream sends them; the last event is the
/// whole answer.
pub fn step_event(text: &str, tokens: usize) -> Value {
    json!({"text": text, "meta_info": {"completion_tokens": tokens}})
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
        spec_fields(engine, done, &mut meta);
    }
    json!({"text": done.text, "output_ids": r.output, "meta_info": meta})
}

/// Verify steps by accepted draft tokens (index j: steps that accepted j).
pub fn histogram(engine: &Engine, done: &Done) -> Vec<u64> {
    let steps = engine.speculative.steps;
    let mut hist = vec![0u64; steps + 1];
    for &a in &done.result.accepted_per_step {
        hist[(a as usize).min(steps)] += 1;
    }
    hist
}

/// Writes the speculative fields of `done` into `meta` in the engine's field set.
pub fn spec_fields(engine: &Engine, done: &Done, meta: &mut Value) {
    let r = &done.result;
    let hist = histogram(engine, done);
    meta["spec_verify_ct"] = json!(r.verify_steps);
    if engine.answers.fields == FieldSet::Legacy {
        meta["spec_accept_histogram"] = json!(hist);
        return;
    }
    let correct: u64 = r.accepted_per_step.iter().map(|&a| a as u64).sum();
    let proposed = (r.verify_steps * engine.speculative.num_draft_tokens.saturating_sub(1)) as u64;
    meta["spec_num_correct_drafts"] = json!(correct);
    meta["spec_num_proposed_drafts"] = json!(proposed);
    meta["spec_correct_drafts_histogram"] = json!(hist);
    if proposed > 0 {
        meta["spec_accept_rate"] = json!(correct as f64 / proposed as f64);
        meta["spec_accept_length"] = json!(r.output.len() as f64 / r.verify_steps as f64);
    }
    // SGLang still sends these aliases, marked for removal.
    meta["spec_accepted_drafts"] = json!(correct);
    meta["spec_proposed_drafts"] = json!(proposed);
    meta["spec_accept_histogram"] = json!(hist);
}

/// SGLang's `sglext` object of an OpenAI-compatible answer when the request
/// carried `return_spec_tokens_details` and the server speculates: the
/// `meta_info` speculative fields under `spec_tokens_details` (SGLang's
/// `entrypoints/openai/utils.py` `spec_tokens_details_from_meta_info`).
pub fn sglext(engine: &Engine, done: &Done, body: &Value) -> Option<Value> {
    let asked = body
        .get("return_spec_tokens_details")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !asked || engine.speculative.is_baseline() {
        return None;
    }
    let mut details = json!({});
    spec_fields(engine, done, &mut details);
    Some(json!({"spec_tokens_details": details}))
}

/// `GET /server_info` (and `/get_server_info`).
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
        "speculative_algorithm": if s.is_baseline() { Value::Null } else { json!(engine.algorithm) },
        "speculative_num_steps": if s.is_baseline() { Value::Null } else { json!(s.steps) },
        "speculative_eagle_topk": if s.is_baseline() { Value::Null } else { json!(s.topk) },
        "speculative_num_draft_tokens": if s.is_baseline() { Value::Null } else { json!(s.num_draft_tokens) },
        "avg_spec_accept_length": avg,
        "internal_states": [{"avg_spec_accept_length": avg, "num_reqs": c.requests}],
        "specula_batches": c.batches,
        "specula_largest_batch": c.largest_batch,
        "version": format!("specula {}", env!("CARGO_PKG_VERSION")),
    })
}
