//! Sending an open-loop point: request `i` leaves at `schedule[i]` seconds
//! after the start, on its own thread (the harness's clients are blocking),
//! so arrivals never wait for answers; only the concurrency bound can hold
//! an arrival back (then it leaves when a slot frees, as `vllm bench serve
//! --max-concurrency` does). Each outcome records when it was really sent.

use crate::remote::{PromptInput, RemoteError, RequestOutcome, RequestParams, ServingClient};
use crate::sweep::interrupt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Slots of in-flight requests.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn take(&self, stop: &AtomicBool) -> bool {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            if stop.load(Ordering::SeqCst) || interrupt::requested() {
                return false;
            }
            free = self
                .freed
                .wait_timeout(free, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *free -= 1;
        true
    }

    fn give(&self) {
        *self.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.freed.notify_one();
    }
}

/// Sends `prompts[i % prompts.len()]` at `schedule[i]`, at most
/// `concurrency` in flight; the first error stops the arrivals. Returns the
/// outcomes in arrival order, each with `sent_at_s` set, and the prompt
/// index each one used.
pub fn send_open_loop(
    client: &dyn ServingClient,
    prompts: &[PromptInput],
    params: &RequestParams,
    schedule: &[f64],
    concurrency: usize,
) -> Result<Vec<(usize, RequestOutcome)>, RemoteError> {
    if prompts.is_empty() {
        return Ok(Vec::new());
    }
    let slots = Slots {
        free: Mutex::new(concurrency.max(1)),
        freed: Condvar::new(),
    };
    let stop = AtomicBool::new(false);
    let results: Vec<Mutex<Option<Result<RequestOutcome, RemoteError>>>> =
        schedule.iter().map(|_| Mutex::new(None)).collect();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for (i, &at) in schedule.iter().enumerate() {
            let wait = Duration::from_secs_f64(at).saturating_sub(t0.elapsed());
            std::thread::sleep(wait);
            if stop.load(Ordering::SeqCst) || interrupt::requested() || !slots.take(&stop) {
                break;
            }
            let sent_at_s = t0.elapsed().as_secs_f64();
            let (slots, stop, slot) = (&slots, &stop, &results[i]);
            let prompt = &prompts[i % prompts.len()];
            s.spawn(move || {
                let r = client.request(prompt, params).map(|mut o| {
                    o.sent_at_s = sent_at_s;
                    o
                });
                if r.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                slots.give();
            });
        }
    });
    let mut out = Vec::with_capacity(schedule.len());
    for (i, r) in results.into_iter().enumerate() {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(o)) => out.push((i % prompts.len(), o)),
            Some(Err(e)) => return Err(RemoteError(format!("request #{i}: {e}"))),
            None if interrupt::requested() => return Err(RemoteError("interrupted".into())),
            None => {
                return Err(RemoteError(
                    "the point stopped before every request was sent".into(),
                ))
            }
        }
    }
    Ok(out)
}
