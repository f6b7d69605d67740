//! `specula serve`: the built-in engine behind an HTTP server that speaks
//! the SGLang subset (`/generate`, `/health`, `/server_info`) and the vLLM
//! subset (`/v1/completions`, `/v1/models`, `/metrics`), so the sweep's
//! `sglang` and `vllm` clients can be tested end to end, and the engine can
//! be benchmarked exactly like the others.
//!
//! Requests are **batched**: async handlers ([`routes`], on tokio and
//! hyper) take requests in (so `/health` and `/metrics` answer during a
//! generation) and hand jobs to one engine thread ([`batcher`]), which runs
//! every job waiting when it becomes free, with the same sampling settings,
//! as one static batch (the in-process engine's `generate`, [`engine`]).
//! Batching changes no acceptance figure (the kernels are batch-invariant).
//! A streamed answer ([`events`]) sends a first event when the prefill has
//! produced the first token (so TTFT is real) and the whole text in the
//! last event.
//!
//! No client can knock the server over: sizes, times, connections, queue
//! and generation lengths are bounded ([`limits`], each a flag), a client
//! that goes away cancels its request, and a panic costs one request or
//! one batch a 500, never a thread.

pub mod batcher;
pub mod engine;
pub mod events;
pub mod field_set;
pub mod fields;
pub mod injected;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod protocol;
pub mod request_body;
pub mod routes;
pub mod sglang_api;
pub mod vllm_api;

pub use injected::InjectedFault;
pub use limits::ServeLimits;

use crate::sweep::progress::stderr_line;
use batcher::Batcher;
use engine::Engine;
use routes::Service;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::sync::Semaphore;

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
    /// The async runtime could not be started.
    #[error("cannot start the server's threads: {0}")]
    Runtime(String),
}

impl ServeError {
    /// Unusable input (the address given), or the system refusing threads.
    pub fn fault(&self) -> crate::Fault {
        match self {
            ServeError::Listen { .. } => crate::Fault::Input,
            ServeError::Runtime(_) => crate::Fault::Failed,
        }
    }
}

/// How to serve: where, with how many threads, and within which limits.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `host:port` to listen on.
    pub addr: String,
    /// Threads answering HTTP (the engine has its own).
    pub http_threads: usize,
    /// Threads of the engine's CPU kernels (`None`: one per core).
    pub cpu_threads: Option<usize>,
    /// Requests generated together at most.
    pub max_batch: usize,
    /// What the server refuses.
    pub limits: ServeLimits,
    /// The test hook.
    pub fault: Option<InjectedFault>,
}

/// Serves `engine` as `options` say until the process is stopped.
pub fn serve(engine: Engine, options: ServeOptions) -> Result<(), ServeError> {
    let listen_error = |e: std::io::Error| ServeError::Listen {
        addr: options.addr.clone(),
        message: e.to_string(),
    };
    let std_listener = std::net::TcpListener::bind(&options.addr).map_err(listen_error)?;
    std_listener.set_nonblocking(true).map_err(listen_error)?;
    // With port 0 the system picks one: say which.
    let bound = std_listener
        .local_addr()
        .map_or_else(|_| options.addr.clone(), |a| a.to_string());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.http_threads.max(1))
        .thread_name("specula-http")
        .enable_all()
        .build()
        .map_err(|e| ServeError::Runtime(e.to_string()))?;
    stderr_line(&format!(
        "specula serve: listening on http://{bound} ({}; batches of up to {})",
        engine.speculative, options.max_batch
    ));
    let engine = Arc::new(engine);
    let limits = options.limits.clone();
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let service = Arc::new(Service {
        batcher: Batcher::start(
            Arc::clone(&engine),
            options.cpu_threads,
            options.max_batch,
            limits.max_queue,
            options.fault,
        ),
        engine,
        parsing: Semaphore::new(limits.max_parsing.max(1)),
        limits: limits.clone(),
        fault: options.fault,
        generations: AtomicU64::new(0),
        connections: Arc::clone(&connections),
    });
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener).map_err(listen_error)?;
        listener::accept_forever(listener, routes::router(service), limits, connections).await;
        Ok(())
    })
}
