//! Sending an open-loop point: request `i` is due at `schedule[i]` seconds
//! after the start (the seeded Poisson or constant schedule of
//! [`super::arrivals`]), and leaves then on the client's runtime, whatever
//! the requests in flight are doing; only the concurrency bound can hold an
//! arrival back (then it leaves when a slot frees, as `vllm bench serve
//! --max-concurrency` does). Each outcome records when it was due and when
//! it really left, so the send lag is in requests.csv. An interrupt drops
//! the requests in flight (their connections close) and the point with them.

use crate::remote::{PromptInput, RemoteError, RequestOutcome, RequestParams, ServingClient};
use crate::sweep::interrupt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// Sends `prompts[i % prompts.len()]` at `schedule[i]`, at most
/// `concurrency` in flight; the first error stops the arrivals and drops
/// the requests in flight. Returns the outcomes in arrival order, each with
/// `sent_at_s` and `scheduled_at_s` set, and the prompt index each one used.
pub async fn send_open_loop(
    client: &dyn ServingClient,
    prompts: &[PromptInput],
    params: &RequestParams,
    schedule: &[f64],
    concurrency: usize,
) -> Result<Vec<(usize, RequestOutcome)>, RemoteError> {
    if prompts.is_empty() {
        return Ok(Vec::new());
    }
    let width = concurrency.max(1);
    let t0 = Instant::now();
    let due = |i: usize| t0 + Duration::from_secs_f64(schedule[i]);
    let mut results: Vec<Option<RequestOutcome>> = vec![None; schedule.len()];
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0;
    loop {
        while next < schedule.len() && in_flight.len() < width && Instant::now() >= due(next) {
            let (i, prompt) = (next, &prompts[next % prompts.len()]);
            next += 1;
            let sent_at_s = t0.elapsed().as_secs_f64();
            in_flight.push(async move { (i, sent_at_s, client.request(prompt, params).await) });
        }
        if next == schedule.len() && in_flight.is_empty() {
            break;
        }
        // The next arrival's timer runs only while a slot is free for it.
        let waiting = next < schedule.len() && in_flight.len() < width;
        let wake = if waiting { due(next) } else { t0 };
        tokio::select! {
            _ = sleep_until(wake), if waiting => {}
            Some((i, sent_at_s, r)) = in_flight.next(), if !in_flight.is_empty() => match r {
                Ok(mut o) => {
                    o.sent_at_s = sent_at_s;
                    o.scheduled_at_s = Some(schedule[i]);
                    results[i] = Some(o);
                }
                Err(e) => return Err(RemoteError(format!("request #{i}: {e}"))),
            },
            _ = interrupt::asked() => return Err(RemoteError("interrupted".into())),
        }
    }
    Ok(results
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| Some((i % prompts.len(), o?)))
        .collect())
}
