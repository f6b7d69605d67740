//! A streamed answer: server-sent events (`data: {json}`, then
//! `data: [DONE]`), one per engine step carrying output (the prefill's first
//! token, then each verify step's accepted tokens, as SGLang and vLLM
//! stream), each sent as its own chunk as soon as it exists, so the client's
//! time to first token and inter-token gaps are the engine's steps. The
//! final event(s) add what ends the answer (`meta_info`, `usage`, the
//! speculative fields) and no new text. When the client goes away the
//! stream's task ends and drops the job's ticket, which cancels the job.
//!
//! The closing event also says how far apart, on the server's clock, the
//! engine steps were whose tokens the events brought (`StepClock`):
//! `specula_step_ms` (in SGLang's `meta_info`; top level in the OpenAI
//! form), one entry per gap between events the client counts as output, so
//! the client can set its inter-token gaps beside the engine's own.

use super::batcher::{Event, Ticket};
use super::engine::Engine;
use super::protocol::{Answering, Protocol};
use axum::body::{Body, Bytes};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::Response;
use serde_json::Value;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::{channel, Receiver, Sender};

/// One `data:` event.
fn event(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// The server's clock of a stream: when the engine produced the step whose
/// tokens each event counted as output brought (a step held back, its
/// tokens not yet whole characters, goes out with a later one, whose time
/// is then that later step's).
#[derive(Debug, Default)]
struct StepClock {
    /// When the step of the last event carrying output was produced.
    last_carried: Option<Instant>,
    /// When the latest step not yet carried was produced.
    held: Option<Instant>,
    /// Milliseconds between the steps of consecutive events carrying output.
    gaps_ms: Vec<f64>,
}

impl StepClock {
    /// The engine produced a step at `at`.
    fn produced(&mut self, at: Instant) {
        self.held = Some(at);
    }

    /// An event counted as output went out with every step held so far.
    fn carried(&mut self) {
        if let Some(at) = self.held.take() {
            if let Some(prev) = self.last_carried {
                self.gaps_ms
                    .push(at.saturating_duration_since(prev).as_secs_f64() * 1e3);
            }
            self.last_carried = Some(at);
        }
    }
}

/// Sends the job's events to `tx` until the job ends or the client goes away.
async fn relay(
    engine: Arc<Engine>,
    answering: Answering,
    body: Value,
    mut ticket: Ticket,
    t0: Instant,
    tx: Sender<Bytes>,
) {
    let (mut output, mut text) = (Vec::new(), String::new());
    let mut clock = StepClock::default();
    loop {
        let ev = tokio::select! {
            _ = tx.closed() => return,
            ev = ticket.next() => ev,
        };
        match ev {
            Event::Tokens(tokens, at) => {
                clock.produced(at);
                output.extend_from_slice(&tokens);
                // The text so far; a step whose tokens do not yet make whole
                // characters sends its piece with the next step.
                let Ok(now) = engine.decode(&output) else {
                    continue;
                };
                let Some(piece) = now.strip_prefix(text.as_str()).map(str::to_string) else {
                    continue;
                };
                text = now;
                let v = answering.step_event(&engine, &text, &piece, output.len());
                if answering.counts_as_output(&piece) {
                    clock.carried();
                }
                if tx.send(event(&v)).await.is_err() {
                    return;
                }
            }
            Event::Finished(result) => {
                let elapsed = t0.elapsed().as_secs_f64();
                // The closing events count as output when they bring tokens
                // (SGLang: a held step's count) or text (OpenAI) not yet sent.
                let rest = result.as_ref().is_ok_and(|d| match answering.protocol {
                    Protocol::Sglang => clock.held.is_some(),
                    Protocol::Vllm => d.text.len() > text.len(),
                });
                if rest {
                    clock.carried();
                }
                let mut last = answering.last_events(&engine, result, &body, &text, elapsed);
                answering.add_step_times(&mut last, &clock.gaps_ms);
                for v in last {
                    if tx.send(event(&v)).await.is_err() {
                        return;
                    }
                }
                let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
                return;
            }
        }
    }
}

/// The 200 `text/event-stream` answer of a submitted job.
pub fn stream(
    engine: Arc<Engine>,
    answering: Answering,
    body: Value,
    ticket: Ticket,
    t0: Instant,
) -> Response {
    let (tx, rx) = channel::<Bytes>(4);
    tokio::spawn(relay(engine, answering, body, ticket, t0, tx));
    let chunks = futures_util::stream::unfold(rx, |mut rx: Receiver<Bytes>| async move {
        rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx))
    });
    Response::builder()
        .header(CONTENT_TYPE, "text/event-stream")
        .header(CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(chunks))
        .expect("a valid streamed response")
}
