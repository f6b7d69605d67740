//! The endpoints of `specula serve` and what each answers. Handlers never
//! take the server down: a panic in one is that request's 500, the body
//! is read within the limits ([`request_body`]), text is tokenized off the
//! async threads a few requests at a time, and a request whose client goes
//! away is cancelled ([`super::batcher::Ticket`]).

use super::batcher::Batcher;
use super::engine::{Engine, Failure, Job};
use super::events;
use super::injected::InjectedFault;
use super::limits::ServeLimits;
use super::protocol::{error_body, Answering, Protocol};
use super::request_body;
use super::{sglang_api, vllm_api};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use futures_util::FutureExt;
use serde_json::{json, Value};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The served engine, its batcher, its limits and its fault hook.
pub struct Service {
    /// The model pair and its counters.
    pub engine: Arc<Engine>,
    /// The queue to the engine thread.
    pub batcher: Batcher,
    /// What the server refuses.
    pub limits: ServeLimits,
    /// The test hook.
    pub fault: Option<InjectedFault>,
    /// Generation requests seen (for `exit-after=N`).
    pub generations: AtomicU64,
    /// Turns to parse and tokenize a request body.
    pub parsing: Semaphore,
    /// The connection permits (`--max-connections` of them): the listener
    /// holds one per open connection; `/metrics` reports how many are taken.
    pub connections: Arc<Semaphore>,
}

type Shared = State<Arc<Service>>;

/// A response with `status`, `content_type` and `body`.
fn respond(status: u16, content_type: &str, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(CONTENT_TYPE, content_type)
        .body(body.into())
        .expect("a valid response")
}

/// A JSON answer.
fn json_response(status: u16, v: &Value) -> Response {
    respond(status, "application/json", v.to_string())
}

/// An error answer in the OpenAI shape.
fn error_response(f: Failure) -> Response {
    json_response(f.0, &error_body(&f))
}

/// Runs a handler; a panic in it becomes a 500 for this request alone.
async fn guarded(work: impl Future<Output = Response>) -> Response {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| error_response((500, "the request handler failed".into())))
}

/// The routes, over `service`.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route(
            "/generate",
            post(|s: Shared, r: Request| guarded(generate(s, r, Protocol::Sglang))),
        )
        .route(
            "/v1/completions",
            post(|s: Shared, r: Request| guarded(generate(s, r, Protocol::Vllm))),
        )
        .route("/health", get(health))
        .route("/health_generate", get(health_generate))
        .route("/get_server_info", get(server_info))
        .route("/server_info", get(current_server_info))
        .route("/version", get(version))
        .route("/get_model_info", get(model_info))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .fallback(|r: Request| async move {
            error_response((404, format!("no route {}", r.uri().path())))
        })
        .with_state(service)
}

/// Applies the fault hook to a generation request: `Some` when it answered.
async fn injected(s: &Service) -> Option<Response> {
    let n = s.generations.fetch_add(1, Ordering::SeqCst);
    match s.fault {
        Some(InjectedFault::ExitAfter(k)) if n >= k => std::process::exit(3),
        Some(InjectedFault::Stall) => std::future::pending().await,
        Some(InjectedFault::Garbage) => {
            Some(respond(200, "application/json", "<html>this is not JSON"))
        }
        _ => None,
    }
}

/// Parses and tokenizes `body` on a blocking thread, in turn.
async fn parse(s: &Arc<Service>, protocol: Protocol, body: Bytes) -> Result<(Value, Job), Failure> {
    let _turn = s
        .parsing
        .acquire()
        .await
        .map_err(|_| (503, "the server is stopping".to_string()))?;
    let engine = Arc::clone(&s.engine);
    let panics = s.fault == Some(InjectedFault::PanicInParse);
    tokio::task::spawn_blocking(move || {
        if panics {
            panic!("injected panic while parsing (--fault=panic-in-parse)");
        }
        protocol.job(&engine, &body)
    })
    .await
    .map_err(|e| (500, format!("parsing the request failed: {e}")))?
}

/// `POST /generate` or `POST /v1/completions`: whole or streamed.
async fn generate(State(s): Shared, req: Request, protocol: Protocol) -> Response {
    let (head, body) = req.into_parts();
    let body = match request_body::read(&head.headers, body, &s.limits).await {
        Ok(b) => b,
        Err(f) => return error_response(f),
    };
    if let Some(answer) = injected(&s).await {
        return answer;
    }
    let (v, job) = match parse(&s, protocol, body).await {
        Ok(x) => x,
        Err(f) => return error_response(f),
    };
    if let Err(f) = s.engine.check(&job, &s.limits) {
        return error_response(f);
    }
    let t0 = Instant::now();
    let mut ticket = match s.batcher.submit(job.clone()) {
        Ok(t) => t,
        Err(f) => return error_response(f),
    };
    let answering = Answering {
        protocol,
        impossible: s.fault == Some(InjectedFault::Impossible),
    };
    if job.stream {
        return events::stream(Arc::clone(&s.engine), answering, v, ticket, t0);
    }
    match ticket.finished().await {
        Ok(done) => json_response(
            200,
            &answering.answer(&s.engine, &done, &v, t0.elapsed().as_secs_f64()),
        ),
        Err(f) => error_response(f),
    }
}

/// `GET /health`: the process answers.
async fn health(State(s): Shared) -> Response {
    if s.fault == Some(InjectedFault::NeverHealthy) {
        respond(503, "text/plain", "starting")
    } else {
        respond(200, "text/plain", "")
    }
}

/// `GET /health_generate`: the engine generates one token within 20 s.
async fn health_generate(State(s): Shared) -> Response {
    if s.fault == Some(InjectedFault::NeverHealthy) {
        return respond(503, "text/plain", "starting");
    }
    let probe = Job {
        prompt: vec![0],
        max_new_tokens: 1,
        temperature: 0.0,
        seed: 0,
        ignore_eos: true,
        stream: false,
    };
    let mut ticket = match s.batcher.submit(probe) {
        Ok(t) => t,
        Err(f) => return error_response(f),
    };
    match tokio::time::timeout(Duration::from_secs(20), ticket.finished()).await {
        Ok(Ok(_)) => respond(200, "text/plain", ""),
        Ok(Err(f)) => error_response(f),
        Err(_) => error_response((
            503,
            "the engine did not generate a token within 20 s".into(),
        )),
    }
}

/// `GET /get_server_info` and `/server_info`.
async fn server_info(State(s): Shared) -> Response {
    json_response(200, &sglang_api::server_info(&s.engine))
}

/// `GET /server_info`: what `/get_server_info` answers; absent (404) in the
/// legacy field set, as on SGLang versions before the rename.
async fn current_server_info(State(s): Shared) -> Response {
    if s.engine.answers.fields == super::field_set::FieldSet::Legacy {
        return error_response((404, "no route /server_info".into()));
    }
    json_response(200, &sglang_api::server_info(&s.engine))
}

/// `GET /version` (vLLM's).
async fn version(State(_s): Shared) -> Response {
    json_response(
        200,
        &json!({"version": format!("specula {}", env!("CARGO_PKG_VERSION"))}),
    )
}

/// `GET /get_model_info`.
async fn model_info(State(s): Shared) -> Response {
    json_response(
        200,
        &json!({"model_path": s.engine.name, "is_generation": true}),
    )
}

/// `GET /v1/models`.
async fn models(State(s): Shared) -> Response {
    json_response(200, &vllm_api::models(&s.engine))
}

/// `GET /metrics`: the Prometheus text.
async fn metrics(State(s): Shared) -> Response {
    let e = &s.engine;
    let text = e
        .counters
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .prometheus(&e.name, e.speculative, e.answers.fields);
    let open = s.limits.max_connections.max(1) - s.connections.available_permits();
    let text = format!(
        "{text}# HELP specula_open_connections Connections open now (this one included).\n\
         # TYPE specula_open_connections gauge\nspecula_open_connections {open}\n"
    );
    respond(200, "text/plain; version=0.0.4", text)
}
