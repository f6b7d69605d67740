//! Dynamic batching for `specula serve`: request handlers submit jobs; one
//! engine thread takes every job waiting when it becomes free (up to
//! `max_batch`), groups those with the same sampling settings, and runs each
//! group as one batch (static: the batch ends when its last sequence does).
//! Each job's submitter hears `First` when the prefill has produced its
//! first token, then `Finished` with its result.
//!
//! A job whose [`Ticket`] is dropped (its client went away) is cancelled:
//! skipped if it has not started, stopped at the next step if it has. The
//! queue is bounded (503 past it), and a panic in the engine fails that
//! batch with 500 while the thread goes on serving.

use super::engine::{Done, Engine, Failure, Job};
use super::injected::InjectedFault;
use crate::sweep::progress::stderr_line;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// What a submitter hears about its job.
#[derive(Debug)]
pub enum Event {
    /// The job's tokens of one step (prefill or verify), as they exist, and
    /// when the engine produced them (the server's clock of the step).
    Tokens(Vec<u32>, Instant),
    /// The job is over.
    Finished(Result<Done, Failure>),
}

struct Pending {
    job: Job,
    cancelled: Arc<AtomicBool>,
    reply: UnboundedSender<Event>,
}

/// A submitted job: its events, and its cancellation when dropped.
pub struct Ticket {
    /// `Tokens` per step, then `Finished`.
    pub events: UnboundedReceiver<Event>,
    cancelled: Arc<AtomicBool>,
}

impl Ticket {
    /// The next event; the engine having stopped reads as a 503.
    pub async fn next(&mut self) -> Event {
        self.events
            .recv()
            .await
            .unwrap_or(Event::Finished(Err((503, "the engine has stopped".into()))))
    }

    /// The job's result, past its `Tokens` events.
    pub async fn finished(&mut self) -> Result<Done, Failure> {
        loop {
            if let Event::Finished(r) = self.next().await {
                return r;
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// The submitting side of the engine thread.
#[derive(Clone)]
pub struct Batcher {
    tx: Sender<Pending>,
    queued: Arc<AtomicUsize>,
    max_queue: usize,
}

impl Batcher {
    /// Starts the engine thread over `engine` with `cpu_threads` kernel
    /// threads, batches of at most `max_batch` jobs and at most `max_queue`
    /// jobs waiting (`fault`: the test hook, which may make batches panic).
    pub fn start(
        engine: Arc<Engine>,
        cpu_threads: Option<usize>,
        max_batch: usize,
        max_queue: usize,
        fault: Option<InjectedFault>,
    ) -> Batcher {
        let (tx, rx) = channel::<Pending>();
        let queued = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&queued);
        std::thread::Builder::new()
            .name("specula-engine".into())
            .spawn(move || {
                let panics = fault == Some(InjectedFault::PanicInEngine);
                let work = move || run(&engine, &rx, &count, max_batch.max(1), panics);
                if let Err(e) = specula_kernels::cpu::with_cpu_threads(cpu_threads, work) {
                    stderr_line(&format!("specula serve: the engine cannot start: {e}"));
                }
            })
            .expect("the system starts the engine thread");
        Batcher {
            tx,
            queued,
            max_queue,
        }
    }

    /// Queues `job`; a full queue is a 503, as the serving engines answer when overloaded.
    pub fn submit(&self, job: Job) -> Result<Ticket, Failure> {
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queue {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return Err((
                503,
                format!(
                    "{} requests are waiting for the engine already (specula serve --max-queue); retry later",
                    self.max_queue
                ),
            ));
        }
        let (reply, events) = unbounded_channel();
        let cancelled = Arc::new(AtomicBool::new(false));
        let pending = Pending {
            job,
            cancelled: Arc::clone(&cancelled),
            reply,
        };
        if self.tx.send(pending).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return Err((503, "the engine has stopped".into()));
        }
        Ok(Ticket { events, cancelled })
    }
}

/// Jobs that may share a batch: the same sampling settings (each keeps
/// its own seed: [`Engine::run_batch`] gives every job its seed's stream).
fn same_settings(a: &Job, b: &Job) -> bool {
    a.max_new_tokens == b.max_new_tokens
        && a.temperature.to_bits() == b.temperature.to_bits()
        && a.ignore_eos == b.ignore_eos
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

fn run(
    engine: &Engine,
    rx: &Receiver<Pending>,
    queued: &AtomicUsize,
    max_batch: usize,
    panics: bool,
) {
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        while waiting.len() < max_batch {
            match rx.try_recv() {
                Ok(p) => waiting.push(p),
                Err(_) => break,
            }
        }
        queued.fetch_sub(waiting.len(), Ordering::SeqCst);
        waiting.retain(|p| !p.cancelled.load(Ordering::Relaxed));
        while !waiting.is_empty() {
            let lead = waiting[0].job.clone();
            let (group, rest): (Vec<Pending>, Vec<Pending>) = waiting
                .into_iter()
                .partition(|p| same_settings(&p.job, &lead));
            waiting = rest;
            let jobs: Vec<Job> = group.iter().map(|p| p.job.clone()).collect();
            let cancelled: Vec<Arc<AtomicBool>> =
                group.iter().map(|p| Arc::clone(&p.cancelled)).collect();
            let result = catch_unwind(AssertUnwindSafe(|| {
                if panics {
                    panic!("injected panic in the engine (--fault=panic-in-engine)");
                }
                engine.run_batch(&jobs, &cancelled, &mut |i, tokens| {
                    if let Some(p) = group.get(i) {
                        let _ = p.reply.send(Event::Tokens(tokens.to_vec(), Instant::now()));
                    }
                })
            }))
            .unwrap_or_else(|panic| {
                let why = panic_message(panic.as_ref());
                stderr_line(&format!(
                    "specula serve: the engine panicked on a batch ({why}); serving on"
                ));
                Err((500, format!("the engine failed on this batch: {why}")))
            });
            match result {
                Ok(done) => {
                    for (p, d) in group.iter().zip(done) {
                        let _ = p.reply.send(Event::Finished(Ok(d)));
                    }
                }
                Err(f) => {
                    for p in &group {
                        let _ = p.reply.send(Event::Finished(Err(f.clone())));
                    }
                }
            }
        }
    }
}
