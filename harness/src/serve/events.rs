//! A streamed answer: server-sent events (`data: {json}`, then
//! `data: [DONE]`), each sent as its own chunk as soon as it exists, so the
//! client sees the first event when the first token does. When the client
//! goes away the stream's task ends and drops the job's ticket, which
//! cancels the job.

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
    loop {
        let ev = tokio::select! {
            _ = tx.closed() => return,
            ev = ticket.next() => ev,
        };
        match ev {
            Event::First => {
                if tx
                    .send(event(&answering.first_event(&engine)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Event::Finished(result) => {
                let elapsed = t0.elapsed().as_secs_f64();
                for v in answering.last_events(&engine, result, &body, elapsed) {
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
