//! `specula serve`: the built-in engine behind an HTTP server that speaks
//! the SGLang subset (`/generate`, `/health`, `/get_server_info`) and the
//! vLLM subset (`/v1/completions`, `/v1/models`, `/metrics`), so the sweep's
//! `sglang` and `vllm` clients can be tested end to end, and the engine can
//! be benchmarked exactly like the others.
//!
//! Requests are **serialized**: a few HTTP threads accept connections (so
//! `/health` and `/metrics` answer during a generation), and one engine
//! behind a mutex generates one request at a time. Batching would not change
//! any acceptance figure (the kernels are batch-invariant), only throughput.
//! A response is sent when its generation is over; a streamed one comes as
//! one event with the whole text, then `[DONE]` (its TTFT is its end-to-end time).

pub mod metrics;
pub mod sglang_api;
pub mod vllm_api;

use metrics::Counters;
use serde_json::{json, Value};
use specula_engine::generate::GenerateParams;
use specula_engine::pair::ModelPair;
use specula_engine::spec::SpecConfig;
use specula_engine::stats::SequenceResult;
use specula_engine::timing::NullRecorder;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tiny_http::{Header, Method, Request, Response, Server};

/// A deliberate misbehaviour, for the sweep's failure tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `/health` answers 503 forever.
    NeverHealthy,
    /// Generation endpoints answer 200 with a body that is not JSON.
    Garbage,
    /// The process exits when generation request N + 1 arrives.
    ExitAfter(u64),
    /// Generation endpoints never answer.
    Stall,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Fault, String> {
        match s {
            "never-healthy" => Ok(Fault::NeverHealthy),
            "garbage" => Ok(Fault::Garbage),
            "stall" => Ok(Fault::Stall),
            _ => match s.strip_prefix("exit-after=").map(str::parse) {
                Some(Ok(n)) => Ok(Fault::ExitAfter(n)),
                _ => Err(format!(
                    "unknown fault {s:?}: never-healthy, garbage, stall or exit-after=N"
                )),
            },
        }
    }
}

/// One prompt to generate for.
#[derive(Debug, Clone)]
pub struct Job {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Tokens to generate at most.
    pub max_new_tokens: usize,
    /// 0 = greedy.
    pub temperature: f64,
    /// Sampling seed.
    pub seed: u64,
    /// Keep going past EOS.
    pub ignore_eos: bool,
}

/// A finished job.
#[derive(Debug, Clone)]
pub struct Done {
    /// Generated text.
    pub text: String,
    /// The engine's record of the sequence.
    pub result: SequenceResult,
}

/// The engine and what it has counted.
pub struct Engine {
    pair: Mutex<ModelPair>,
    /// The speculation knobs of every request.
    pub spec: SpecConfig,
    /// The model name (`/v1/models`, `model_name` label).
    pub name: String,
    /// Counters since start.
    pub counters: Mutex<Counters>,
    fault: Option<Fault>,
    generations: AtomicU64,
}

/// An HTTP error answer: status and message.
pub type Failure = (u16, String);

impl Engine {
    /// Wraps a loaded pair.
    pub fn new(pair: ModelPair, spec: SpecConfig, name: String, fault: Option<Fault>) -> Engine {
        Engine {
            pair: Mutex::new(pair),
            spec,
            name,
            counters: Mutex::new(Counters::default()),
            fault,
            generations: AtomicU64::new(0),
        }
    }

    /// Token ids of `text` (special tokens added, as the sweep's engine path does without a chat template).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Failure> {
        let pair = self.pair.lock().unwrap_or_else(|e| e.into_inner());
        pair.tokenizer
            .encode_with(text, true)
            .map_err(|e| (400, e.to_string()))
    }

    /// Generates one job (serialized with every other).
    pub fn run(&self, job: &Job) -> Result<Done, Failure> {
        let mut pair = self.pair.lock().unwrap_or_else(|e| e.into_inner());
        let params = GenerateParams {
            spec: self.spec,
            temperature: job.temperature as f32,
            max_new_tokens: job.max_new_tokens,
            seed: job.seed,
            ignore_eos: job.ignore_eos,
        };
        let g = pair
            .generate(
                std::slice::from_ref(&job.prompt),
                &params,
                &mut NullRecorder,
            )
            .map_err(|e| (400, e.to_string()))?;
        let result = g
            .sequences
            .into_iter()
            .next()
            .ok_or((500, "no sequence".to_string()))?;
        let text = pair
            .tokenizer
            .decode(&result.output)
            .map_err(|e| (500, e.to_string()))?;
        self.counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(&result, self.spec);
        Ok(Done { text, result })
    }
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

/// A JSON answer.
pub fn json_response(status: u16, v: &Value) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_data(v.to_string().into_bytes())
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json"))
}

/// A server-sent-events answer: each value as one `data:` event, then `[DONE]`.
pub fn events_response(events: &[Value]) -> Response<std::io::Cursor<Vec<u8>>> {
    let mut body = String::new();
    for e in events {
        body.push_str(&format!("data: {e}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    Response::from_data(body.into_bytes()).with_header(header("Content-Type", "text/event-stream"))
}

/// An error answer in the OpenAI shape (`{"error": {"message"}}`).
pub fn error_response(f: Failure) -> Response<std::io::Cursor<Vec<u8>>> {
    json_response(f.0, &json!({"error": {"message": f.1, "code": f.0}}))
}

fn handle(engine: &Engine, mut req: Request) {
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let method = req.method().clone();
    let mut body = String::new();
    if method == Method::Post {
        if let Err(e) = std::io::Read::read_to_string(req.as_reader(), &mut body) {
            let _ = req.respond(error_response((400, format!("unreadable body: {e}"))));
            return;
        }
    }
    let generating = method == Method::Post && (path == "/generate" || path == "/v1/completions");
    if generating {
        let n = engine.generations.fetch_add(1, Ordering::SeqCst);
        match engine.fault {
            Some(Fault::ExitAfter(k)) if n >= k => std::process::exit(3),
            Some(Fault::Stall) => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            Some(Fault::Garbage) => {
                let _ = req.respond(
                    Response::from_string("<html>this is not JSON")
                        .with_header(header("Content-Type", "application/json")),
                );
                return;
            }
            _ => {}
        }
    }
    let parsed =
        || serde_json::from_str::<Value>(&body).map_err(|e| (400, format!("malformed JSON: {e}")));
    let resp = match (method, path.as_str()) {
        (Method::Get, "/health" | "/health_generate") => {
            if engine.fault == Some(Fault::NeverHealthy) {
                Response::from_string("starting").with_status_code(503)
            } else {
                Response::from_string("")
            }
        }
        (Method::Get, "/get_server_info" | "/server_info") => {
            json_response(200, &sglang_api::server_info(engine))
        }
        (Method::Get, "/get_model_info") => json_response(
            200,
            &json!({"model_path": engine.name, "is_generation": true}),
        ),
        (Method::Post, "/generate") => parsed()
            .and_then(|v| sglang_api::generate(engine, &v))
            .unwrap_or_else(error_response),
        (Method::Get, "/v1/models") => json_response(200, &vllm_api::models(engine)),
        (Method::Post, "/v1/completions") => parsed()
            .and_then(|v| vllm_api::completions(engine, &v))
            .unwrap_or_else(error_response),
        (Method::Get, "/metrics") => {
            let text = engine
                .counters
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .prometheus(&engine.name, engine.spec);
            Response::from_string(text)
                .with_header(header("Content-Type", "text/plain; version=0.0.4"))
        }
        (_, p) => error_response((404, format!("no route {p}"))),
    };
    let _ = req.respond(resp);
}

/// Serves `engine` on `addr` until the process is stopped, with `threads` HTTP threads.
pub fn serve(engine: Engine, addr: &str, threads: usize) -> Result<(), String> {
    let server = Arc::new(Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?);
    let engine = Arc::new(engine);
    eprintln!(
        "specula serve: listening on http://{addr} ({}; requests are serialized)",
        engine.spec
    );
    let workers: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let (server, engine) = (Arc::clone(&server), Arc::clone(&engine));
            std::thread::spawn(move || {
                for req in server.incoming_requests() {
                    handle(&engine, req);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}
