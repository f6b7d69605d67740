//! The SGLang client: `POST /generate` with `text` or `input_ids` and
//! `sampling_params {max_new_tokens, temperature, ignore_eos}`, streamed
//! (`"stream": true`: server-sent events with the cumulative `text` and
//! `meta_info`) or not; `meta_info` gives `completion_tokens` and, on a
//! speculative server, the per-request fields of [`super::spec_fields`]
//! (current names first, the older aliases as a fallback). With `[server]
//! endpoint = "openai"` the requests go to the OpenAI-compatible
//! `POST /v1/completions` instead (`prompt`, `max_tokens`, `ignore_eos`,
//! `stream_options.include_usage` and `return_spec_tokens_details`), whose
//! `usage` gives the token counts and `sglext.spec_tokens_details` the same
//! speculative fields.
//!
//! Row acceptance: tau = tokens emitted by verify steps / verify steps
//! = (sum of completion_tokens - requests) / sum of spec_verify_ct (each
//! request's first token comes from prefill, not from a verify step: the
//! in-process engine's definition); `avg_spec_accept_length` from
//! `/server_info` (else its deprecated alias `/get_server_info`; top level,
//! or the data-parallel ranks of `internal_states` combined) is read for a
//! cross-check, and the server's `version` for meta.json.

use super::http_client::Http;
use super::spec_fields::{sglang_server_tau, version_of, SpecFields};
use super::{
    decode_tokens, Acceptance, PromptInput, RemoteError, Reply, RequestOutcome, RequestParams,
    ServingClient, SglangEndpoint,
};
use futures_util::future::LocalBoxFuture;
use serde_json::{json, Value};
use std::time::Duration;

/// A client of one SGLang server.
#[derive(Debug, Clone)]
pub struct SglangClient {
    http: Http,
    health: Http,
    stream: bool,
    endpoint: SglangEndpoint,
    model: String,
}

impl SglangClient {
    /// A client of `base`, each request bounded by `timeout`, sending to
    /// `endpoint` (`model`: the OpenAI endpoint's `model` field).
    pub fn new(
        base: &str,
        timeout: Duration,
        stream: bool,
        endpoint: SglangEndpoint,
        model: &str,
    ) -> SglangClient {
        SglangClient {
            http: Http::new(base, timeout),
            health: Http::new(base, Duration::from_secs(5)),
            stream,
            endpoint,
            model: model.to_string(),
        }
    }

    /// `/server_info`, else the deprecated `/get_server_info`.
    async fn server_info(&self) -> Option<Value> {
        match self.health.get_json("/server_info").await {
            Ok(v) => Some(v),
            Err(_) => self.health.get_json("/get_server_info").await.ok(),
        }
    }

    async fn server_tau(&self) -> Option<f64> {
        sglang_server_tau(&self.server_info().await?)
    }

    /// One request to `/generate`.
    async fn generate(
        &self,
        prompt: &PromptInput,
        p: &RequestParams,
    ) -> Result<RequestOutcome, RemoteError> {
        let mut body = json!({
            "sampling_params": {
                "max_new_tokens": p.max_new_tokens,
                "temperature": p.temperature,
                "ignore_eos": p.ignore_eos,
            },
            "stream": self.stream,
        });
        if p.temperature > 0.0 {
            body["sampling_params"]["sampling_seed"] = json!(p.seed);
        }
        match prompt {
            PromptInput::Ids(ids) => body["input_ids"] = json!(ids),
            PromptInput::Text(t) => body["text"] = json!(t),
        }
        let mut last = None;
        let mut text = String::new();
        let mut tokens_seen = 0;
        let timed = self
            .http
            .post_timed("/generate", &body, self.stream, |ev| {
                // An event carries output when it brings new tokens (the last
                // one may only repeat the text with the final meta_info).
                let tokens = ev
                    .pointer("/meta_info/completion_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let generated = tokens > tokens_seen;
                tokens_seen = tokens_seen.max(tokens);
                if let Some(t) = ev.get("text").and_then(Value::as_str) {
                    text = merge_text(std::mem::take(&mut text), t);
                }
                last = Some(ev);
                Ok(generated)
            })
            .await?;
        let last = last.ok_or_else(|| RemoteError("/generate: the stream held no event".into()))?;
        let mut out = RequestOutcome {
            ttft_s: timed.ttft_s,
            e2e_s: timed.e2e_s,
            itl_s: timed.itl_s,
            ..RequestOutcome::default()
        };
        read_answer(&last, &mut out)?;
        out.text = text;
        Ok(out)
    }

    /// One request to the OpenAI-compatible `/v1/completions`.
    async fn completions(
        &self,
        prompt: &PromptInput,
        p: &RequestParams,
    ) -> Result<RequestOutcome, RemoteError> {
        super::openai::complete(
            &self.http,
            &self.model,
            self.stream,
            prompt,
            p,
            &[("return_spec_tokens_details", json!(true))],
            SpecFields::sglang_openai,
        )
        .await
    }
}

/// The text so far after a streamed event's `text`: SGLang sends the whole
/// text in every event by default and only the new piece with
/// `--incremental-streaming-output`; a piece that does not extend the text
/// so far is appended.
fn merge_text(so_far: String, event: &str) -> String {
    if event.starts_with(&so_far) {
        event.to_string()
    } else {
        so_far + event
    }
}

fn field_usize(meta: &Value, name: &str) -> Option<usize> {
    meta.get(name).and_then(Value::as_u64).map(|v| v as usize)
}

/// Reads what a `/generate` answer (or its last event) says into `out`.
fn read_answer(v: &Value, out: &mut RequestOutcome) -> Result<(), RemoteError> {
    let bad = |m: &str| {
        RemoteError(format!(
            "/generate: {m}: {}",
            v.to_string().chars().take(200).collect::<String>()
        ))
    };
    let meta = v.get("meta_info").ok_or_else(|| bad("no `meta_info`"))?;
    out.text = v
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `text`"))?
        .to_string();
    out.completion_tokens = field_usize(meta, "completion_tokens")
        .ok_or_else(|| bad("no `meta_info.completion_tokens`"))?;
    out.prompt_tokens = field_usize(meta, "prompt_tokens");
    let f = SpecFields::sglang(meta);
    out.verify_steps = f.verify_steps;
    out.accepted_drafts = f.accepted;
    out.proposed_drafts = f.proposed;
    out.accept_histogram = f.histogram;
    out.field_form = f.form;
    out.server_step_s = super::server_step_times(meta).unwrap_or_default();
    Ok(())
}

impl ServingClient for SglangClient {
    fn name(&self) -> &'static str {
        "sglang"
    }

    fn healthy(&self) -> LocalBoxFuture<'_, bool> {
        Box::pin(self.health.healthy())
    }

    fn begin_row(&mut self) -> Reply<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    fn request<'a>(
        &'a self,
        prompt: &'a PromptInput,
        p: &'a RequestParams,
    ) -> Reply<'a, RequestOutcome> {
        match self.endpoint {
            SglangEndpoint::Generate => Box::pin(self.generate(prompt, p)),
            SglangEndpoint::Openai => Box::pin(self.completions(prompt, p)),
        }
    }

    fn end_row<'a>(
        &'a mut self,
        outcomes: &'a [RequestOutcome],
        steps: usize,
    ) -> Reply<'a, Acceptance> {
        Box::pin(async move {
            let mut acc = row_acceptance(outcomes, steps, self.endpoint)?;
            if steps > 0 {
                acc.server_tau = self.server_tau().await;
            }
            Ok(acc)
        })
    }

    fn engine_version(&self) -> LocalBoxFuture<'_, Option<String>> {
        Box::pin(async { version_of(&self.server_info().await?) })
    }

    fn served_config(&self) -> LocalBoxFuture<'_, Option<Value>> {
        Box::pin(self.server_info())
    }
}

/// A row's acceptance from its requests' own fields (7.1).
fn row_acceptance(
    outcomes: &[RequestOutcome],
    steps: usize,
    endpoint: SglangEndpoint,
) -> Result<Acceptance, RemoteError> {
    let decode_tokens = decode_tokens(outcomes);
    if steps == 0 {
        return Ok(Acceptance::baseline(decode_tokens));
    }
    let mut verify = 0;
    for o in outcomes {
        verify += o.verify_steps.ok_or_else(|| {
            RemoteError(match endpoint {
                SglangEndpoint::Generate => "/generate: a speculative row's answer has no `meta_info.spec_verify_ct` (is the server speculating?)".into(),
                SglangEndpoint::Openai => "/v1/completions: a speculative row's answer has no `sglext.spec_tokens_details.spec_verify_ct` (is the server speculating, and does it know `return_spec_tokens_details`?)".into(),
            })
        })?;
    }
    let mut positions = Vec::new();
    let hists: Vec<&Vec<u64>> = outcomes
        .iter()
        .filter_map(|o| o.accept_histogram.as_ref())
        .collect();
    if hists.len() == outcomes.len() && verify > 0 {
        for k in 1..=steps {
            let reach: u64 = hists.iter().flat_map(|h| h.iter().skip(k)).sum();
            positions.push(reach as f64 / verify as f64);
        }
    }
    // With adaptive drafting the proposed count is the server's, not steps x (n - 1).
    let proposed = outcomes
        .iter()
        .map(|o| o.proposed_drafts)
        .sum::<Option<usize>>();
    Ok(Acceptance {
        verify_steps: verify,
        accepted: decode_tokens.saturating_sub(verify),
        positions,
        server_tau: None,
        proposed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_is_whole_whether_events_repeat_it_or_carry_pieces() {
        let cumulative = ["", "def", "def f", "def f(x):"];
        let pieces = ["", "def", " f", "(x):"];
        for events in [cumulative, pieces] {
            let text = events
                .iter()
                .fold(String::new(), |acc, e| merge_text(acc, e));
            assert_eq!(text, "def f(x):");
        }
    }
}
