//! The SGLang client: `POST /generate` with `text` or `input_ids` and
//! `sampling_params {max_new_tokens, temperature, ignore_eos}`, streamed
//! (`"stream": true`: server-sent events with the cumulative `text` and
//! `meta_info`) or not; `meta_info` gives `completion_tokens` and, on a
//! speculative server, `spec_verify_ct` (in the last event) and, in newer
//! versions, `spec_accept_histogram` (verify steps by accepted drafts).
//!
//! Row acceptance: tau = tokens emitted by verify steps / verify steps
//! = (sum of completion_tokens - requests) / sum of spec_verify_ct (each
//! request's first token comes from prefill, not from a verify step: the
//! in-process engine's definition); `avg_spec_accept_length` from
//! `/get_server_info` (or `/server_info`; top level or `internal_states[0]`)
//! is read for a cross-check.

use super::http_client::Http;
use super::{
    decode_tokens, Acceptance, PromptInput, RemoteError, RequestOutcome, RequestParams,
    ServingClient,
};
use serde_json::{json, Value};
use std::time::Duration;

/// A client of one SGLang server.
#[derive(Debug, Clone)]
pub struct SglangClient {
    http: Http,
    health: Http,
    stream: bool,
}

impl SglangClient {
    /// A client of `base`, each request bounded by `timeout`.
    pub fn new(base: &str, timeout: Duration, stream: bool) -> SglangClient {
        SglangClient {
            http: Http::new(base, timeout),
            health: Http::new(base, Duration::from_secs(5)),
            stream,
        }
    }

    fn server_tau(&self) -> Option<f64> {
        let info = self
            .health
            .get_json("/get_server_info")
            .or_else(|_| self.health.get_json("/server_info"))
            .ok()?;
        info.get("avg_spec_accept_length")
            .and_then(Value::as_f64)
            .or_else(|| {
                info.pointer("/internal_states/0/avg_spec_accept_length")?
                    .as_f64()
            })
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
    if let Some(n) = field_usize(meta, "spec_verify_ct") {
        out.verify_steps = Some(n);
    }
    if let Some(h) = meta.get("spec_accept_histogram").and_then(Value::as_array) {
        out.accept_histogram = Some(h.iter().map(|x| x.as_u64().unwrap_or(0)).collect());
    }
    Ok(())
}

impl ServingClient for SglangClient {
    fn name(&self) -> &'static str {
        "sglang"
    }

    fn healthy(&self) -> bool {
        self.health.healthy()
    }

    fn begin_row(&mut self) -> Result<(), RemoteError> {
        Ok(())
    }

    fn request(
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
        let (ttft_s, e2e_s) = self
            .http
            .post_timed("/generate", &body, self.stream, |ev| {
                let generated = ev
                    .pointer("/meta_info/completion_tokens")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| n > 0);
                if let Some(t) = ev.get("text").and_then(Value::as_str) {
                    text = merge_text(std::mem::take(&mut text), t);
                }
                last = Some(ev);
                Ok(generated)
            })?;
        let last = last.ok_or_else(|| RemoteError("/generate: the stream held no event".into()))?;
        let mut out = RequestOutcome {
            ttft_s,
            e2e_s,
            ..RequestOutcome::default()
        };
        read_answer(&last, &mut out)?;
        out.text = text;
        Ok(out)
    }

    fn end_row(
        &mut self,
        outcomes: &[RequestOutcome],
        steps: usize,
    ) -> Result<Acceptance, RemoteError> {
        let decode_tokens = decode_tokens(outcomes);
        if steps == 0 {
            return Ok(Acceptance::baseline(decode_tokens));
        }
        let mut verify = 0;
        for o in outcomes {
            verify += o.verify_steps.ok_or_else(|| {
                RemoteError("/generate: a speculative row's answer has no `meta_info.spec_verify_ct` (is the server speculating?)".into())
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
        Ok(Acceptance {
            verify_steps: verify,
            accepted: decode_tokens.saturating_sub(verify),
            positions,
            server_tau: self.server_tau(),
        })
    }
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
