//! A row being measured: its `generate` calls so far (run back to back, or
//! interleaved with the other rows of its group), and the row they make.

use super::context_fit::request_past;
use super::grid::Grid;
use super::measure::{join, measures};
use super::runner::RunInfo;
use crate::run_folder::meta::rfc3339;
use crate::run_folder::{Measures, RequestRecord, Row, SpanInterval};
use specula_engine::generation::Generation;
use std::time::{Instant, SystemTime};

/// One finished row and its outputs (for the lossless check).
pub struct Outcome {
    /// The row (speedup and lossless still to fill in).
    pub row: Row,
    /// Every sequence's output tokens, in prompt order.
    pub outputs: Vec<Vec<u32>>,
}

/// The calls of one row so far.
#[derive(Default)]
pub struct RowCalls {
    /// When the first call started.
    start: Option<(SystemTime, Instant)>,
    /// The calls' generations, in prompt order.
    pub gens: Vec<Generation>,
    /// Span samples per call (spans on).
    pub intervals: Vec<SpanInterval>,
    /// Wall seconds of the calls.
    pub wall_s: f64,
    /// CPU seconds of the calls' decode phases.
    pub decode_cpu_s: f64,
}

impl RowCalls {
    /// Marks the row started (at its first call); returns the instant interval starts count from.
    pub fn begin(&mut self) -> Instant {
        self.start
            .get_or_insert_with(|| (SystemTime::now(), Instant::now()))
            .1
    }

    /// The finished row `p` of `grid` over `prompts` prompts.
    pub fn finish(self, grid: &Grid, info: &RunInfo, p: usize, prompts: usize) -> Outcome {
        let point = &grid.points[p];
        let start_time = self.start.map_or_else(SystemTime::now, |s| s.0);
        let speculative = grid.speculative_of(point);
        // Each call's start: the earlier calls' times summed (back to back).
        let mut t = 0.0;
        let starts: Vec<(f64, usize)> = self
            .gens
            .iter()
            .map(|g| {
                let start = t;
                t += g.prefill_s + g.decode_s;
                (start, g.sequences.len())
            })
            .collect();
        let joined = join(self.gens, speculative);
        let outputs = joined.sequences.iter().map(|s| s.output.clone()).collect();
        let requests = engine_requests(grid, p, &joined.sequences, speculative.steps, &starts);
        let decode_tokens = joined
            .output_tokens()
            .saturating_sub(joined.sequences.len());
        let measures = Measures {
            decode_cpu_s: self.decode_cpu_s,
            cpu_tok_s: if self.decode_cpu_s > 0.0 {
                decode_tokens as f64 / self.decode_cpu_s
            } else {
                0.0
            },
            ..measures(&joined, self.wall_s)
        };
        let row = grid_row(
            grid,
            info,
            p,
            RowRan {
                start_time,
                backend: info.backend.clone(),
                device: info.device.clone(),
                prompts,
                measures,
                positions: joined.per_position_acceptance(),
                intervals: self.intervals,
                requests,
            },
        );
        Outcome { row, outputs }
    }
}

/// The requests.csv records of an in-process row: each sequence of each
/// call, its times from its call's start (TTFT = the call's prefill), its
/// acceptance from the engine's own count.
fn engine_requests(
    grid: &Grid,
    p: usize,
    sequences: &[specula_engine::generation::SequenceResult],
    steps: usize,
    starts: &[(f64, usize)],
) -> Vec<RequestRecord> {
    let point = &grid.points[p];
    let g = &grid.groups[point.group];
    let set = &grid.sets[g.prompt_set];
    let config = grid.config_of(point);
    let sent: Vec<f64> = starts
        .iter()
        .flat_map(|&(t, n)| std::iter::repeat_n(t, n))
        .collect();
    sequences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let prompt = set.prompts.get(i);
            let reached = (steps > 0).then(|| {
                (1..=steps)
                    .map(|k| {
                        s.accepted_per_step
                            .iter()
                            .filter(|&&a| a as usize >= k)
                            .count() as u64
                    })
                    .collect()
            });
            let accepted: usize = s.accepted_per_step.iter().map(|&a| a as usize).sum();
            RequestRecord {
                method: config.and_then(|c| c.method.clone()).unwrap_or_default(),
                category: prompt.map(|p| p.category.clone()).unwrap_or_default(),
                prompt_id: prompt.map(|p| p.id.clone()).unwrap_or_default(),
                prompt_tokens: Some(s.prompt_len),
                output_tokens: s.output.len(),
                verify_steps: Some(s.verify_steps),
                accepted_drafts: (steps > 0).then_some(accepted),
                proposed_drafts: config
                    .map(|c| s.verify_steps * c.speculative.num_draft_tokens.saturating_sub(1)),
                reached,
                sent_at_s: sent.get(i).copied().unwrap_or(0.0),
                scheduled_at_s: None,
                ttft_s: s.ttft_s,
                e2e_s: s.finished_s,
                itl_s: Vec::new(),
                server_step_s: Vec::new(),
                request_rate: None,
                concurrency: g.batch_size,
                field_form: String::new(),
                past_trained_context: request_past(
                    grid.max_positions[g.model],
                    Some(s.prompt_len),
                    s.output.len(),
                ),
            }
        })
        .collect()
}

/// How and where a row ran, and what it measured: the part of a [`Row`]
/// the grid does not give.
pub struct RowRan {
    /// When its first call started.
    pub start_time: SystemTime,
    /// The backend that served it.
    pub backend: String,
    /// The device (or server URL) it ran on.
    pub device: String,
    /// Prompts it ran over.
    pub prompts: usize,
    /// Its figures.
    pub measures: Measures,
    /// Acceptance per draft position.
    pub positions: Vec<f64>,
    /// Span intervals (with spans on).
    pub intervals: Vec<SpanInterval>,
    /// One record per request.
    pub requests: Vec<RequestRecord>,
}

/// Row `p` of `grid` in the run `info`: its identity from the grid point,
/// the rest from `ran`.
pub fn grid_row(grid: &Grid, info: &RunInfo, p: usize, ran: RowRan) -> Row {
    let point = &grid.points[p];
    let g = &grid.groups[point.group];
    let speculative = grid.speculative_of(point);
    let m = &grid.models[g.model];
    let config = grid.config_of(point);
    Row {
        run_id: info.run_id.clone(),
        git_rev: info.git_rev.clone(),
        started_at: rfc3339(ran.start_time),
        start_time: ran.start_time,
        machine: info.machine.clone(),
        backend: ran.backend,
        device: ran.device,
        target: m.target.display().to_string(),
        draft: m
            .draft
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        dtype: m.dtype.clone(),
        aux_layers_resolved: config.map(|c| c.aux_points.clone()).unwrap_or_default(),
        steps: speculative.steps,
        topk: speculative.topk,
        num_draft_tokens: speculative.num_draft_tokens,
        temperature: g.temperature,
        batch_size: g.batch_size,
        prompt_set: grid.sets[g.prompt_set].name.clone(),
        prompts: ran.prompts,
        measures: ran.measures,
        repeat: g.repeat,
        seed: info.seed.wrapping_add(g.repeat as u64),
        max_new_tokens: info.max_new_tokens,
        id_convention: config
            .map(|c| c.capture.convention.name().to_string())
            .unwrap_or_default(),
        spans: point.spans,
        row_key: point.key.clone(),
        method: config.and_then(|c| c.method.clone()).unwrap_or_default(),
        request_rate: g.request_rate,
        positions: ran.positions,
        intervals: ran.intervals,
        requests: ran.requests,
    }
}
