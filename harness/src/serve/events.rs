//! A streamed answer: server-sent events (`data: {json}`, then
//! `data: [DONE]`), one per engine step carrying output (the prefill's first
//! token, then each verify step's accepted tokens, as SGLang and vLLM
//! stream), each sent as its own chunk as soon as it exists, so the client's
//! time to first token and inter-token gaps are the engine's steps. The
//! final event(s) add what ends the answer (`meta_info`, `usage`, the
//! speculative fields) and no new text. When the client goes away the
//! stream's task ends and drops the job's ticket, which cancels the job.

use super::batcher::{Event, Ticket};
use super::engine::Engine;
use super::protocol::Answering;
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
    loop {
        let ev = tokio::select! {
            _ = tx.closed() => return,
            ev = ticket.next() => ev,
        };
        match ev {
            Event::Tokens(tokens) => {
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
                if tx.send(event(&v)).await.is_err() {
                    return;
                }
            }
            Event::Finished(result) => {
                let elapsed = t0.elapsed().as_secs_f64();
                for v in answering.last_events(&engine, result, &body, &text, elapsed) {
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
