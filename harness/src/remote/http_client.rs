//! HTTP/1.1 calls to one server (reqwest on tokio, plain HTTP): JSON in and
//! out, Prometheus text, and server-sent events read as their chunks arrive
//! ([`super::sse`]). Every call is bounded by the client's timeout (connect,
//! headers and the whole body), so a stalled server fails the call instead of
//! hanging the sweep; dropping a call's future closes its connection, which
//! is how an interrupted point cancels the requests it has in flight.

use super::sse::{SseLine, SseLines};
use super::RemoteError;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The client-side times of one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timed {
    /// Sending to the first event carrying output (the whole request when not streamed).
    pub ttft_s: f64,
    /// Sending to the last byte.
    pub e2e_s: f64,
    /// Gaps between consecutive events carrying output.
    pub itl_s: Vec<f64>,
}

/// A client of the server at `base` (`http://host:port`).
#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    timeout: Duration,
    /// Base URL, without a trailing slash.
    pub base: String,
}

fn clip(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

impl Http {
    /// A client whose every call ends within `timeout`.
    pub fn new(base: &str, timeout: Duration) -> Http {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .unwrap_or_default();
        Http {
            client,
            timeout,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn fail(&self, path: &str, e: impl std::fmt::Display) -> RemoteError {
        RemoteError(format!("{}: {e}", self.url(path)))
    }

    /// A transport error in words: a timeout says so and names the limit;
    /// others give their cause (reqwest's own text names only the URL).
    fn transport(&self, path: &str, e: reqwest::Error) -> RemoteError {
        if e.is_timeout() {
            return self.fail(
                path,
                format!(
                    "timed out after {:.1} s (request_timeout_s)",
                    self.timeout.as_secs_f64()
                ),
            );
        }
        let e = e.without_url();
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text = format!("{text}: {s}");
            source = s.source();
        }
        self.fail(path, text)
    }

    /// GET `path`: the status and the body.
    pub async fn get_text(&self, path: &str) -> Result<(u16, String), RemoteError> {
        let r = self
            .client
            .get(self.url(path))
            .send()
            .await
            .map_err(|e| self.transport(path, e))?;
        let status = r.status().as_u16();
        let body = r.text().await.map_err(|e| self.transport(path, e))?;
        Ok((status, body))
    }

    /// GET `path`, expecting 200 and a JSON body.
    pub async fn get_json(&self, path: &str) -> Result<Value, RemoteError> {
        let (status, body) = self.get_text(path).await?;
        self.json(path, status, &body)
    }

    fn json(&self, path: &str, status: u16, body: &str) -> Result<Value, RemoteError> {
        if status != 200 {
            return Err(self.fail(path, format!("HTTP {status}: {}", clip(body))));
        }
        serde_json::from_str(body)
            .map_err(|e| self.fail(path, format!("malformed JSON ({e}): {}", clip(body))))
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(self.url(path))
            .header("Content-Type", "application/json")
            .body(body.to_string())
    }

    /// POST `body` as JSON to `path`, expecting 200 and a JSON answer.
    pub async fn post_json(&self, path: &str, body: &Value) -> Result<Value, RemoteError> {
        let r = self
            .post(path, body)
            .send()
            .await
            .map_err(|e| self.transport(path, e))?;
        let status = r.status().as_u16();
        let text = r.text().await.map_err(|e| self.transport(path, e))?;
        self.json(path, status, &text)
    }

    /// POST `body` to `path` and hand each server-sent event's JSON `data` to
    /// `on_event` as its chunk arrives, until `data: [DONE]` or the end of
    /// the stream.
    pub async fn post_events(
        &self,
        path: &str,
        body: &Value,
        mut on_event: impl FnMut(Value) -> Result<(), RemoteError>,
    ) -> Result<(), RemoteError> {
        let mut r = self
            .post(path, body)
            .header("Accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| self.transport(path, e))?;
        let status = r.status().as_u16();
        if status != 200 {
            let text = r.text().await.unwrap_or_default();
            return Err(self.fail(path, format!("HTTP {status}: {}", clip(&text))));
        }
        let mut lines = SseLines::default();
        loop {
            let chunk = r.chunk().await.map_err(|e| {
                let e = self.transport(path, e);
                RemoteError(format!("reading the stream: {}", e.0))
            })?;
            let batch = match &chunk {
                Some(bytes) => lines.push(bytes),
                None => lines.finish().into_iter().collect(),
            };
            for line in batch {
                match line {
                    SseLine::Other => {}
                    SseLine::Malformed(l) => {
                        return Err(self.fail(path, format!("malformed event stream: {}", clip(&l))))
                    }
                    SseLine::Data(d) if d == "[DONE]" => return Ok(()),
                    SseLine::Data(d) => {
                        let v: Value = serde_json::from_str(&d).map_err(|e| {
                            self.fail(path, format!("malformed JSON event ({e}): {}", clip(&d)))
                        })?;
                        on_event(v)?;
                    }
                }
            }
            if chunk.is_none() {
                return Ok(());
            }
        }
    }

    /// Whether `GET /health` answers 200 (both protocols' health check).
    pub async fn healthy(&self) -> bool {
        matches!(self.get_text("/health").await, Ok((200, _)))
    }

    /// One timed request: `body` streamed to `path` when `stream` (each
    /// event handed to `on_event`), else posted and its whole answer handed to
    /// `on_event` once. `on_event` says whether its event carries generated
    /// output; the first one that does fixes the time to first token (the
    /// whole time when not streamed), the later ones the inter-token gaps.
    pub async fn post_timed(
        &self,
        path: &str,
        body: &Value,
        stream: bool,
        mut on_event: impl FnMut(Value) -> Result<bool, RemoteError>,
    ) -> Result<Timed, RemoteError> {
        let t0 = Instant::now();
        let mut arrivals: Vec<f64> = Vec::new();
        if stream {
            self.post_events(path, body, |ev| {
                if on_event(ev)? {
                    arrivals.push(t0.elapsed().as_secs_f64());
                }
                Ok(())
            })
            .await?;
        } else {
            on_event(self.post_json(path, body).await?)?;
        }
        let e2e_s = t0.elapsed().as_secs_f64();
        Ok(Timed {
            ttft_s: arrivals.first().copied().unwrap_or(e2e_s),
            e2e_s,
            itl_s: arrivals.windows(2).map(|w| w[1] - w[0]).collect(),
        })
    }
}
