//! Blocking HTTP/1.1 calls to one server (ureq, plain HTTP): JSON in and
//! out, Prometheus text, and server-sent events. Every call is bounded by the
//! client's timeout (connect, headers and the whole body), so a stalled
//! server fails the call instead of hanging the sweep.

use super::RemoteError;
use serde_json::Value;
use std::io::{BufRead, BufReader};
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
    agent: ureq::Agent,
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
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Http {
            agent,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn fail(&self, path: &str, e: impl std::fmt::Display) -> RemoteError {
        RemoteError(format!("{}: {e}", self.url(path)))
    }

    /// GET `path`: the status and the body.
    pub fn get_text(&self, path: &str) -> Result<(u16, String), RemoteError> {
        let mut r = self
            .agent
            .get(self.url(path))
            .call()
            .map_err(|e| self.fail(path, e))?;
        let status = r.status().as_u16();
        let body = r
            .body_mut()
            .read_to_string()
            .map_err(|e| self.fail(path, e))?;
        Ok((status, body))
    }

    /// GET `path`, expecting 200 and a JSON body.
    pub fn get_json(&self, path: &str) -> Result<Value, RemoteError> {
        let (status, body) = self.get_text(path)?;
        self.json(path, status, &body)
    }

    fn json(&self, path: &str, status: u16, body: &str) -> Result<Value, RemoteError> {
        if status != 200 {
            return Err(self.fail(path, format!("HTTP {status}: {}", clip(body))));
        }
        serde_json::from_str(body)
            .map_err(|e| self.fail(path, format!("malformed JSON ({e}): {}", clip(body))))
    }

    /// POST `body` as JSON to `path`, expecting 200 and a JSON answer.
    pub fn post_json(&self, path: &str, body: &Value) -> Result<Value, RemoteError> {
        let mut r = self
            .agent
            .post(self.url(path))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .map_err(|e| self.fail(path, e))?;
        let status = r.status().as_u16();
        let text = r
            .body_mut()
            .read_to_string()
            .map_err(|e| self.fail(path, e))?;
        self.json(path, status, &text)
    }

    /// POST `body` to `path` and hand each server-sent event's JSON `data` to
    /// `on_event`, until `data: [DONE]` or the end of the stream.
    pub fn post_events(
        &self,
        path: &str,
        body: &Value,
        mut on_event: impl FnMut(Value) -> Result<(), RemoteError>,
    ) -> Result<(), RemoteError> {
        let r = self
            .agent
            .post(self.url(path))
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream")
            .send(body.to_string())
            .map_err(|e| self.fail(path, e))?;
        let status = r.status().as_u16();
        let mut reader = BufReader::new(r.into_body().into_reader());
        if status != 200 {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut reader, &mut text);
            return Err(self.fail(path, format!("HTTP {status}: {}", clip(&text))));
        }
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| self.fail(path, format!("reading the stream: {e}")))?;
            if n == 0 {
                return Ok(());
            }
            let trimmed = line.trim_end();
            let Some(data) = trimmed.strip_prefix("data:") else {
                let field = ["event:", "id:", "retry:", ":"];
                if trimmed.is_empty() || field.iter().any(|f| trimmed.starts_with(f)) {
                    continue;
                }
                return Err(self.fail(path, format!("malformed event stream: {}", clip(trimmed))));
            };
            let data = data.trim();
            if data == "[DONE]" {
                return Ok(());
            }
            let v: Value = serde_json::from_str(data).map_err(|e| {
                self.fail(path, format!("malformed JSON event ({e}): {}", clip(data)))
            })?;
            on_event(v)?;
        }
    }

    /// Whether `GET /health` answers 200 (both protocols' health check).
    pub fn healthy(&self) -> bool {
        matches!(self.get_text("/health"), Ok((200, _)))
    }

    /// One timed request: `body` streamed to `path` when `stream` (each
    /// event handed to `on_event`), else posted and its whole answer handed to
    /// `on_event` once. `on_event` says whether its event carries generated
    /// output; the first one that does fixes the time to first token (the
    /// whole time when not streamed), the later ones the inter-token gaps.
    pub fn post_timed(
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
            })?;
        } else {
            on_event(self.post_json(path, body)?)?;
        }
        let e2e_s = t0.elapsed().as_secs_f64();
        Ok(Timed {
            ttft_s: arrivals.first().copied().unwrap_or(e2e_s),
            e2e_s,
            itl_s: arrivals.windows(2).map(|w| w[1] - w[0]).collect(),
        })
    }
}
