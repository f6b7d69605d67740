//! The vLLM client: OpenAI-compatible `POST /v1/completions` (`prompt` as
//! text or token ids, `max_tokens`, `temperature`, `ignore_eos`), streamed
//! with `stream_options.include_usage` so the last event carries `usage`;
//! acceptance from the spec-decode counters of `/metrics` read before and
//! after the row (names as vLLM's `v1/spec_decode/metrics.py` registers
//! them; `prometheus_client` adds `_total`):
//! `vllm:spec_decode_num_drafts`, `vllm:spec_decode_num_draft_tokens`,
//! `vllm:spec_decode_num_accepted_tokens`,
//! `vllm:spec_decode_num_accepted_tokens_per_pos{position="0".."k-1"}`.
//! tau = 1 + accepted / drafts; a_k = accepted_per_pos[k-1] / drafts; the
//! accept rate = accepted / `vllm:spec_decode_num_draft_tokens` (the drafts
//! proposed, also under dynamic drafting). A server run with
//! `--per-request-spec-decode-metrics` also answers each request's
//! `metrics.speculative_decoding` on its last chunk ([`super::spec_fields`]):
//! read into the request's record (requests.csv). `/version` gives the
//! engine's version for meta.json.

use super::http_client::Http;
use super::prometheus::Metrics;
use super::spec_fields::{version_of, SpecFields};
use super::{
    decode_tokens, Acceptance, PromptInput, RemoteError, RequestOutcome, RequestParams,
    ServingClient,
};
use serde_json::{json, Value};
use std::time::Duration;

const DRAFTS: &str = "vllm:spec_decode_num_drafts";
const ACCEPTED: &str = "vllm:spec_decode_num_accepted_tokens";
const DRAFT_TOKENS: &str = "vllm:spec_decode_num_draft_tokens";
const PER_POS: &str = "vllm:spec_decode_num_accepted_tokens_per_pos";

/// A client of one vLLM server.
#[derive(Debug, Clone)]
pub struct VllmClient {
    http: Http,
    health: Http,
    model: String,
    stream: bool,
    before: Option<Metrics>,
}

impl VllmClient {
    /// A client of `base` sending `model`, each request bounded by `timeout`.
    pub fn new(base: &str, model: &str, timeout: Duration, stream: bool) -> VllmClient {
        VllmClient {
            http: Http::new(base, timeout),
            health: Http::new(base, Duration::from_secs(5)),
            model: model.to_string(),
            stream,
            before: None,
        }
    }

    fn scrape(&self) -> Result<Metrics, RemoteError> {
        let (status, text) = self.http.get_text("/metrics")?;
        if status != 200 {
            return Err(RemoteError(format!(
                "{}/metrics: HTTP {status}",
                self.http.base
            )));
        }
        Metrics::parse(&text).map_err(|e| RemoteError(format!("{}/metrics: {e}", self.http.base)))
    }
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

fn completion_tokens(v: &Value) -> Option<usize> {
    v.pointer("/usage/completion_tokens")
        .and_then(Value::as_u64)
        .map(|n| n as usize)
}

impl ServingClient for VllmClient {
    fn name(&self) -> &'static str {
        "vllm"
    }

    fn healthy(&self) -> bool {
        self.health.healthy()
    }

    fn begin_row(&mut self) -> Result<(), RemoteError> {
        self.before = Some(self.scrape()?);
        Ok(())
    }

    fn request(
        &self,
        prompt: &PromptInput,
        p: &RequestParams,
    ) -> Result<RequestOutcome, RemoteError> {
        let mut body = json!({
            "model": self.model,
            "max_tokens": p.max_new_tokens,
            "temperature": p.temperature,
            "ignore_eos": p.ignore_eos,
            "stream": self.stream,
        });
        if p.temperature > 0.0 {
            body["seed"] = json!(p.seed);
        }
        if self.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        match prompt {
            PromptInput::Ids(ids) => body["prompt"] = json!(ids),
            PromptInput::Text(t) => body["prompt"] = json!(t),
        }
        let mut usage = None;
        let mut prompt_tokens = None;
        let mut spec = None;
        let mut text = String::new();
        let timed = self
            .http
            .post_timed("/v1/completions", &body, self.stream, |ev| {
                if let Some(n) = completion_tokens(&ev) {
                    usage = Some(n);
                    prompt_tokens = ev
                        .pointer("/usage/prompt_tokens")
                        .and_then(Value::as_u64)
                        .map(|n| n as usize);
                }
                if let Some(f) = SpecFields::vllm(&ev) {
                    spec = Some(f);
                }
                text.push_str(&text_of(&ev)?);
                Ok(ev
                    .get("choices")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty()))
            })?;
        let completion_tokens = usage.ok_or_else(|| {
            RemoteError(if self.stream {
                "/v1/completions: the stream ended without `usage` (stream_options.include_usage)"
                    .into()
            } else {
                "/v1/completions: no `usage.completion_tokens`".into()
            })
        })?;
        let spec = spec.unwrap_or_default();
        Ok(RequestOutcome {
            text,
            completion_tokens,
            prompt_tokens,
            verify_steps: spec.verify_steps,
            accepted_drafts: spec.accepted,
            proposed_drafts: spec.proposed,
            accept_histogram: spec.histogram,
            field_form: spec.form,
            ttft_s: timed.ttft_s,
            e2e_s: timed.e2e_s,
            itl_s: timed.itl_s,
            ..RequestOutcome::default()
        })
    }

    fn end_row(
        &mut self,
        outcomes: &[RequestOutcome],
        steps: usize,
    ) -> Result<Acceptance, RemoteError> {
        let before = self.before.take().unwrap_or_default();
        if steps == 0 {
            return Ok(Acceptance::baseline(decode_tokens(outcomes)));
        }
        // The counters are updated as the engine's steps are reported: read
        // until two scrapes agree (bounded).
        let mut after = self.scrape()?;
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(100));
            let again = self.scrape()?;
            if again == after {
                break;
            }
            after = again;
        }
        if !after.has(DRAFTS) {
            return Err(RemoteError(format!(
                "{}/metrics has no `{DRAFTS}` counter (is the server speculating?)",
                self.http.base
            )));
        }
        let delta = |name: &str| (after.sum(name) - before.sum(name)).max(0.0);
        let drafts = delta(DRAFTS);
        let accepted = delta(ACCEPTED);
        let (pos_after, pos_before) = (
            after.sum_by(PER_POS, "position"),
            before.sum_by(PER_POS, "position"),
        );
        let positions = if drafts > 0.0 && !pos_after.is_empty() {
            (0..steps)
                .map(|k| {
                    let key = k.to_string();
                    let d = pos_after.get(&key).copied().unwrap_or(0.0)
                        - pos_before.get(&key).copied().unwrap_or(0.0);
                    d / drafts
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Acceptance {
            verify_steps: drafts as usize,
            accepted: accepted as usize,
            positions,
            server_tau: None,
            proposed: after
                .has(DRAFT_TOKENS)
                .then(|| delta(DRAFT_TOKENS) as usize),
        })
    }

    fn engine_version(&self) -> Option<String> {
        version_of(&self.health.get_json("/version").ok()?)
    }
}
