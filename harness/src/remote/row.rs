//! One row against a server: the prompt set at concurrency = batch size
//! (that many requests in flight, each worker taking the next prompt), then
//! the row's measures from what the client and the server report.
//!
//! Remote rows measure on the client side: `ttft` (sending to the first
//! streamed text), `e2e` (sending to the last byte) and `tpot` = (e2e - ttft)
//! / (completion tokens - 1) per request, recorded as the row's `ttft`,
//! `tpot` and `e2e` histograms (no kernel spans: the server's internals are
//! not visible). `prefill_s` and `decode_s` are the requests' summed TTFTs and
//! (e2e - ttft) divided by the batch size; throughput = decode tokens / decode_s.

use super::{Acceptance, PromptInput, RemoteError, RequestOutcome, RequestParams, ServingClient};
use crate::run_folder::{Measures, SpanInterval};
use crate::sweep::interrupt;
use crate::sweep::measure::median;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What a finished row produced.
#[derive(Debug, Clone)]
pub struct RowResult {
    /// Measures (`speedup` and `lossless` are filled in by the caller).
    pub measures: Measures,
    /// a_k for k = 1..=steps (empty when the server does not report it).
    pub positions: Vec<f64>,
    /// Generated texts, in prompt order.
    pub outputs: Vec<String>,
    /// Client-side request timings as one interval.
    pub interval: SpanInterval,
    /// The server's own acceptance length, when it reports one.
    pub server_tau: Option<f64>,
    /// Every request, in sending order, with the index of its prompt.
    pub requests: Vec<(usize, RequestOutcome)>,
}

/// Sends every prompt, `concurrency` in flight at a time (the next prompt
/// leaves when an answer comes back); the first error stops the row and
/// drops the requests still in flight, and so does an interrupt.
pub async fn send_all(
    client: &dyn ServingClient,
    prompts: &[PromptInput],
    params: &RequestParams,
    concurrency: usize,
) -> Result<Vec<RequestOutcome>, RemoteError> {
    let t0 = Instant::now();
    let width = concurrency.clamp(1, prompts.len().max(1));
    let mut results: Vec<Option<RequestOutcome>> = vec![None; prompts.len()];
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0;
    loop {
        while next < prompts.len() && in_flight.len() < width {
            let (i, prompt) = (next, &prompts[next]);
            next += 1;
            let sent_at_s = t0.elapsed().as_secs_f64();
            in_flight.push(async move { (i, sent_at_s, client.request(prompt, params).await) });
        }
        if in_flight.is_empty() {
            break;
        }
        tokio::select! {
            Some((i, sent_at_s, r)) = in_flight.next() => match r {
                Ok(mut o) => {
                    o.sent_at_s = sent_at_s;
                    results[i] = Some(o);
                }
                Err(e) => return Err(RemoteError(format!("prompt #{i}: {e}"))),
            },
            _ = interrupt::asked() => return Err(RemoteError("interrupted".into())),
        }
    }
    Ok(results.into_iter().flatten().collect())
}

fn ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9) as u64
}

/// Runs the row: `begin_row`, the prompts (closed loop, or open loop at
/// the arrival times of `schedule`), `end_row`, then the measures.
pub async fn run_row(
    client: &mut dyn ServingClient,
    prompts: &[PromptInput],
    params: &RequestParams,
    batch_size: usize,
    speculative: (usize, usize),
    schedule: Option<&[f64]>,
) -> Result<RowResult, RemoteError> {
    let (steps, num_draft_tokens) = speculative;
    client.begin_row().await?;
    let t0 = Instant::now();
    let requests: Vec<(usize, RequestOutcome)> = match schedule {
        Some(at) => {
            crate::load::open_loop::send_open_loop(&*client, prompts, params, at, batch_size)
                .await?
        }
        None => send_all(&*client, prompts, params, batch_size)
            .await?
            .into_iter()
            .enumerate()
            .collect(),
    };
    let wall = t0.elapsed();
    let outcomes: Vec<RequestOutcome> = requests.iter().map(|(_, o)| o.clone()).collect();
    let acc = client.end_row(&outcomes, steps).await?;
    let mut r = result(&outcomes, &acc, wall, batch_size, steps, num_draft_tokens);
    r.requests = requests;
    Ok(r)
}

fn result(
    outcomes: &[RequestOutcome],
    acc: &Acceptance,
    wall: Duration,
    batch_size: usize,
    steps: usize,
    num_draft_tokens: usize,
) -> RowResult {
    let output_tokens: usize = outcomes.iter().map(|o| o.completion_tokens).sum();
    let decode_tokens: usize = outcomes
        .iter()
        .map(|o| o.completion_tokens.saturating_sub(1))
        .sum();
    let b = batch_size.max(1) as f64;
    let prefill_s = outcomes.iter().map(|o| o.ttft_s).sum::<f64>() / b;
    let decode_s = outcomes.iter().map(|o| o.e2e_s - o.ttft_s).sum::<f64>() / b;
    let tpot: Vec<f64> = outcomes
        .iter()
        .filter(|o| o.completion_tokens > 1)
        .map(|o| (o.e2e_s - o.ttft_s) / (o.completion_tokens - 1) as f64)
        .collect();
    let v = acc.verify_steps;
    // docs/DESIGN.md 7.1: tokens emitted by verify steps / verify steps; every verify
    // step emits its accepted drafts plus the target's token.
    let tau = if v == 0 {
        0.0
    } else if steps == 0 {
        1.0
    } else {
        (acc.accepted + v) as f64 / v as f64
    };
    // Drafts proposed: the server's count when it gives one (adaptive
    // drafting proposes fewer), else every verify step's full tree.
    let slots = acc
        .proposed
        .unwrap_or(v * num_draft_tokens.saturating_sub(1));
    let accept_rate = if slots == 0 {
        0.0
    } else {
        acc.accepted as f64 / slots as f64
    };
    let mut client_spans = BTreeMap::new();
    client_spans.insert("ttft", outcomes.iter().map(|o| ns(o.ttft_s)).collect());
    client_spans.insert("tpot", tpot.iter().map(|&t| ns(t)).collect());
    client_spans.insert("e2e", outcomes.iter().map(|o| ns(o.e2e_s)).collect());
    RowResult {
        measures: Measures {
            output_tokens,
            verify_steps: v,
            wall_s: wall.as_secs_f64(),
            prefill_s,
            decode_s,
            throughput_tok_s: if decode_s > 0.0 {
                decode_tokens as f64 / decode_s
            } else {
                0.0
            },
            tau,
            accept_rate,
            speedup: None,
            ttft_ms_p50: median(outcomes.iter().map(|o| o.ttft_s * 1e3).collect()),
            tpot_ms_p50: median(tpot.iter().map(|t| t * 1e3).collect()),
            lossless: None,
            // The server's CPU time is not visible from the client.
            decode_cpu_s: 0.0,
            cpu_tok_s: 0.0,
            cpu_speedup: None,
        },
        positions: acc.positions.clone(),
        outputs: outcomes.iter().map(|o| o.text.clone()).collect(),
        interval: SpanInterval {
            start: Duration::ZERO,
            duration: wall,
            log: Default::default(),
            client: client_spans,
        },
        server_tau: acc.server_tau,
        requests: Vec::new(),
    }
}
