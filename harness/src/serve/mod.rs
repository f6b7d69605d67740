//! `specula serve`: the built-in engine behind an HTTP server that speaks
//! the SGLang subset (`/generate`, `/health`, `/get_server_info`) and the
//! vLLM subset (`/v1/completions`, `/v1/models`, `/metrics`), so the sweep's
//! `sglang` and `vllm` clients can be tested end to end, and the engine can
//! be benchmarked exactly like the others.
//!
//! Requests are **batched**: HTTP threads accept connections (so `/health`
//! and `/metrics` answer during a generation) and hand jobs to one engine
//! thread ([`batcher`]), which runs every job waiting when it becomes free,
//! with the same sampling settings, as one static batch (the in-process
//! engine's `generate`, [`engine`]). Batching changes no acceptance figure
//! (the kernels are batch-invariant). A streamed answer ([`events`]) sends a
//! first event when the prefill has produced the first token (so TTFT is
//! real) and the whole text in the last event.

pub mod batcher;
pub mod engine;
pub mod events;
pub mod fields;
pub mod metrics;
pub mod sglang_api;
pub mod vllm_api;

use batcher::{Batcher, Event};
use engine::{Done, Engine, Failure, Job};
use events::EventStream;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiny_http::{Header, Method, Request, Response, Server};

/// A deliberate misbehaviour, for the sweep's failure tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedFault {
    /// `/health` answers 503 forever.
    NeverHealthy,
    /// Generation endpoints answer 200 with a body that is not JSON.
    Garbage,
    /// The process exits when generation request N + 1 arrives.
    ExitAfter(u64),
    /// Generation endpoints never answer.
    Stall,
    /// SGLang answers claim a billion times the tokens generated
    /// (impossible counters, which a sweep must refuse).
    Impossible,
}

impl std::str::FromStr for InjectedFault {
    type Err = String;
    fn from_str(s: &str) -> Result<InjectedFault, String> {
        match s {
            "never-healthy" => Ok(InjectedFault::NeverHealthy),
            "garbage" => Ok(InjectedFault::Garbage),
            "stall" => Ok(InjectedFault::Stall),
            "impossible" => Ok(InjectedFault::Impossible),
            _ => match s.strip_prefix("exit-after=").map(str::parse) {
                Some(Ok(n)) => Ok(InjectedFault::ExitAfter(n)),
                _ => Err(format!(
                    "unknown fault {s:?}: never-healthy, garbage, stall, impossible or exit-after=N"
                )),
            },
        }
    }
}

/// The served engine with its fault hook.
struct Service {
    engine: Arc<Engine>,
    batcher: Batcher,
    fault: Option<InjectedFault>,
    generations: AtomicU64,
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

type Answer = Response<std::io::Cursor<Vec<u8>>>;

/// A JSON answer.
fn json_response(status: u16, v: &Value) -> Answer {
    Response::from_data(v.to_string().into_bytes())
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json"))
}

/// An error answer in the OpenAI shape (`{"error": {"message"}}`).
fn error_response(f: Failure) -> Answer {
    json_response(f.0, &json!({"error": {"message": f.1, "code": f.0}}))
}

/// Applies the fault hook to a generation request; `false` when it answered already.
fn fault(s: &Service, req: Request) -> Option<Request> {
    let n = s.generations.fetch_add(1, Ordering::SeqCst);
    match s.fault {
        Some(InjectedFault::ExitAfter(k)) if n >= k => std::process::exit(3),
        Some(InjectedFault::Stall) => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Some(InjectedFault::Garbage) => {
            let _ = req.respond(
                Response::from_string("<html>this is not JSON")
                    .with_header(header("Content-Type", "application/json")),
            );
            None
        }
        _ => Some(req),
    }
}

/// An SGLang answer as the fault hook has it: with
/// [`InjectedFault::Impossible`], `completion_tokens` times a billion.
fn tamper(s: &Service, mut answer: Value) -> Value {
    if s.fault == Some(InjectedFault::Impossible) {
        if let Some(n) = answer
            .pointer("/meta_info/completion_tokens")
            .and_then(Value::as_u64)
        {
            answer["meta_info"]["completion_tokens"] = json!(n * 1_000_000_000);
        }
    }
    answer
}

/// `POST /generate` or `POST /v1/completions`: whole or streamed.
fn generate(s: &Service, req: Request, sglang: bool, body: &str) {
    let e = &s.engine;
    let job: Result<(Value, Job), Failure> = serde_json::from_str::<Value>(body)
        .map_err(|err| (400, format!("malformed JSON: {err}")))
        .and_then(|v| {
            let job = if sglang {
                sglang_api::job(e, &v)
            } else {
                vllm_api::job(e, &v)
            }?;
            Ok((v, job))
        });
    let (v, job) = match job {
        Ok(x) => x,
        Err(f) => {
            let _ = req.respond(error_response(f));
            return;
        }
    };
    if let Err(f) = e.check(&job) {
        let _ = req.respond(error_response(f));
        return;
    }
    let t0 = Instant::now();
    let events = s.batcher.submit(job.clone());
    let finished = |ev: Event| -> Result<Done, Failure> {
        match ev {
            Event::Finished(r) => r,
            Event::First => Err((500, "the engine sent a second first token".into())),
        }
    };
    let next = || {
        events
            .recv()
            .unwrap_or(Event::Finished(Err((503, "the engine has stopped".into()))))
    };
    if !job.stream {
        let mut ev = next();
        if matches!(ev, Event::First) {
            ev = next();
        }
        let answer = finished(ev).map(|done| {
            if sglang {
                tamper(s, sglang_api::answer(e, &done, t0.elapsed().as_secs_f64()))
            } else {
                vllm_api::answer(e, &done)
            }
        });
        let _ = req.respond(match answer {
            Ok(a) => json_response(200, &a),
            Err(f) => error_response(f),
        });
        return;
    }
    let Ok(mut stream) = EventStream::start(req) else {
        return;
    };
    let mut ev = next();
    if matches!(ev, Event::First) {
        let first = if sglang {
            sglang_api::first_event()
        } else {
            vllm_api::first_event(e)
        };
        if stream.send(&first).is_err() {
            return;
        }
        ev = next();
    }
    let last = match finished(ev) {
        Ok(done) if sglang => vec![tamper(
            s,
            sglang_api::answer(e, &done, t0.elapsed().as_secs_f64()),
        )],
        Ok(done) => vllm_api::last_events(e, &done, &v),
        Err(f) => vec![json!({"error": {"message": f.1, "code": f.0}})],
    };
    for ev in &last {
        if stream.send(ev).is_err() {
            return;
        }
    }
    let _ = stream.finish();
}

fn handle(s: &Service, mut req: Request) {
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let method = req.method().clone();
    let mut body = String::new();
    if method == Method::Post {
        if let Err(e) = std::io::Read::read_to_string(req.as_reader(), &mut body) {
            let _ = req.respond(error_response((400, format!("unreadable body: {e}"))));
            return;
        }
    }
    let e = &s.engine;
    let resp = match (method, path.as_str()) {
        (Method::Post, "/generate" | "/v1/completions") => {
            if let Some(req) = fault(s, req) {
                generate(s, req, path == "/generate", &body);
            }
            return;
        }
        (Method::Get, "/health" | "/health_generate") => {
            if s.fault == Some(InjectedFault::NeverHealthy) {
                Response::from_string("starting").with_status_code(503)
            } else {
                Response::from_string("")
            }
        }
        (Method::Get, "/get_server_info" | "/server_info") => {
            json_response(200, &sglang_api::server_info(e))
        }
        (Method::Get, "/get_model_info") => {
            json_response(200, &json!({"model_path": e.name, "is_generation": true}))
        }
        (Method::Get, "/v1/models") => json_response(200, &vllm_api::models(e)),
        (Method::Get, "/metrics") => {
            let text = e
                .counters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .prometheus(&e.name, e.speculative);
            Response::from_string(text)
                .with_header(header("Content-Type", "text/plain; version=0.0.4"))
        }
        (_, p) => error_response((404, format!("no route {p}"))),
    };
    let _ = req.respond(resp);
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be listened on (in use, not this machine's).
    #[error("cannot listen on {addr}: {message}")]
    Listen {
        /// `host:port`.
        addr: String,
        /// What the system said.
        message: String,
    },
}

impl ServeError {
    /// Unusable input: the address given.
    pub fn fault(&self) -> crate::Fault {
        crate::Fault::Input
    }
}

/// Serves `engine` on `addr` until the process is stopped, with `threads`
/// HTTP threads and batches of at most `max_batch` requests.
pub fn serve(
    engine: Engine,
    fault: Option<InjectedFault>,
    addr: &str,
    threads: usize,
    max_batch: usize,
) -> Result<(), ServeError> {
    let server = Arc::new(Server::http(addr).map_err(|e| ServeError::Listen {
        addr: addr.to_string(),
        message: e.to_string(),
    })?);
    eprintln!(
        "specula serve: listening on http://{addr} ({}; batches of up to {max_batch})",
        engine.speculative
    );
    let engine = Arc::new(engine);
    let service = Arc::new(Service {
        batcher: Batcher::start(Arc::clone(&engine), max_batch),
        engine,
        fault,
        generations: AtomicU64::new(0),
    });
    let workers: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let (server, service) = (Arc::clone(&server), Arc::clone(&service));
            std::thread::spawn(move || {
                for req in server.incoming_requests() {
                    handle(&service, req);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}
