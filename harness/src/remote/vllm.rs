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
    decode_tokens, Acceptance, PromptInput, RemoteError, Reply, RequestOutcome, RequestParams,
    ServingClient,
};
use futures_util::future::LocalBoxFuture;
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

    async fn scrape(&self) -> Result<Metrics, RemoteError> {
        let (status, text) = self.http.get_text("/metrics").await?;
        if status != 200 {
            return Err(RemoteError(format!(
                "{}/metrics: HTTP {status}",
                self.http.base
            )));
        }
        Metrics::parse(&text).map_err(|e| RemoteError(format!("{}/metrics: {e}", self.http.base)))
    }
}

impl ServingClient for VllmClient {
    fn name(&self) -> &'static str {
        "vllm"
    }

    fn healthy(&self) -> LocalBoxFuture<'_, bool> {
        Box::pin(self.health.healthy())
    }

    fn begin_row(&mut self) -> Reply<'_, ()> {
        Box::pin(async {
            self.before = Some(self.scrape().await?);
            Ok(())
        })
    }

    fn request<'a>(
        &'a self,
        prompt: &'a PromptInput,
        p: &'a RequestParams,
    ) -> Reply<'a, RequestOutcome> {
        Box::pin(async move {
            super::openai::complete(
                &self.http,
                &self.model,
                self.stream,
                prompt,
                p,
                &[],
                SpecFields::vllm,
            )
            .await
        })
    }

    fn end_row<'a>(
        &'a mut self,
        outcomes: &'a [RequestOutcome],
        steps: usize,
    ) -> Reply<'a, Acceptance> {
        Box::pin(self.row_acceptance(outcomes, steps))
    }

    fn engine_version(&self) -> LocalBoxFuture<'_, Option<String>> {
        Box::pin(async { version_of(&self.health.get_json("/version").await.ok()?) })
    }
}

impl VllmClient {
    /// The row's acceptance from the counters' change since `begin_row`.
    async fn row_acceptance(
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
        let mut after = self.scrape().await?;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let again = self.scrape().await?;
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
}
