//! Dynamic batching for `specula serve`: HTTP threads submit jobs; one
//! engine thread takes every job waiting when it becomes free (up to
//! `max_batch`), groups those with the same sampling settings, and runs each
//! group as one batch (static: the batch ends when its last sequence does).
//! Each job's submitter hears `First` when the prefill has produced its
//! first token, then `Finished` with its result.

use super::engine::{Done, Engine, Failure, Job};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

/// What a submitter hears about its job.
#[derive(Debug)]
pub enum Event {
    /// The first token exists.
    First,
    /// The job is over.
    Finished(Result<Done, Failure>),
}

struct Pending {
    job: Job,
    reply: Sender<Event>,
}

/// The submitting side of the engine thread.
#[derive(Clone)]
pub struct Batcher {
    tx: Sender<Pending>,
}

impl Batcher {
    /// Starts the engine thread over `engine`, with batches of at most `max_batch` jobs.
    pub fn start(engine: Arc<Engine>, max_batch: usize) -> Batcher {
        let (tx, rx) = channel::<Pending>();
        std::thread::spawn(move || run(&engine, &rx, max_batch.max(1)));
        Batcher { tx }
    }

    /// Queues `job`; its events come on the returned receiver.
    pub fn submit(&self, job: Job) -> Receiver<Event> {
        let (reply, events) = channel();
        if let Err(e) = self.tx.send(Pending { job, reply }) {
            let _ =
                e.0.reply
                    .send(Event::Finished(Err((503, "the engine has stopped".into()))));
        }
        events
    }
}

/// Jobs that may share a batch: the same sampling settings (each keeps
/// its own seed: [`Engine::run_batch`] gives every job its seed's stream).
fn same_settings(a: &Job, b: &Job) -> bool {
    a.max_new_tokens == b.max_new_tokens
        && a.temperature.to_bits() == b.temperature.to_bits()
        && a.ignore_eos == b.ignore_eos
}

fn run(engine: &Engine, rx: &Receiver<Pending>, max_batch: usize) {
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        while waiting.len() < max_batch {
            match rx.try_recv() {
                Ok(p) => waiting.push(p),
                Err(_) => break,
            }
        }
        while !waiting.is_empty() {
            let lead = waiting[0].job.clone();
            let (group, rest): (Vec<Pending>, Vec<Pending>) = waiting
                .into_iter()
                .partition(|p| same_settings(&p.job, &lead));
            waiting = rest;
            let jobs: Vec<Job> = group.iter().map(|p| p.job.clone()).collect();
            let result = engine.run_batch(&jobs, &mut || {
                for p in &group {
                    let _ = p.reply.send(Event::First);
                }
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
