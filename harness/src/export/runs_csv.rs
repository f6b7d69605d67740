//! `runs.csv`: one row per grid point, columns as DESIGN.md orders them
//! (identity first, then measures), with this tool's extra columns at the end.
//!
//! Deterministic measures (`tau`, `accept_rate`) are written with Rust's
//! shortest round-trip float format, so equal values give equal text.

use super::{fixed, opt_fixed, AppendCsv, Row, RowWriter};
use crate::sweep::SweepError;
use std::path::Path;

/// The header, in order. Column names are an API: add at the end, never rename.
pub const HEADER: [&str; 39] = [
    "run_id",
    "git_rev",
    "started_at",
    "machine",
    "backend",
    "device",
    "target",
    "draft",
    "dtype",
    "aux_layers_resolved",
    "steps",
    "topk",
    "num_draft_tokens",
    "temperature",
    "batch_size",
    "prompt_set",
    "prompts",
    "output_tokens",
    "verify_steps",
    "wall_s",
    "throughput_tok_s",
    "tau",
    "accept_rate",
    "speedup",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "lossless",
    // extras (not in DESIGN.md's list)
    "repeat",
    "seed",
    "max_new_tokens",
    "id_convention",
    "spans",
    "prefill_s",
    "decode_s",
    "row_key",
    "flag",
    "decode_cpu_s",
    "cpu_tok_s",
    "cpu_speedup",
];

/// The `flag` of a row: `likely_config_error` for a speculative row whose
/// tau is about 1.00 (the draft is almost never accepted: a configuration
/// error such as the wrong hidden states, not a result), else empty.
pub fn flag(steps: usize, tau: f64) -> &'static str {
    if steps > 0 && tau <= crate::analyze::TAU_CONFIG_ERROR {
        "likely_config_error"
    } else {
        ""
    }
}

/// The runs.csv writer.
#[derive(Debug)]
pub struct RunsCsv(AppendCsv);

impl RunsCsv {
    /// Opens (or creates) `path`.
    pub fn open(path: &Path) -> Result<RunsCsv, SweepError> {
        AppendCsv::open(path, &HEADER).map(RunsCsv)
    }
}

/// The row's cells, in [`HEADER`] order.
pub fn record(r: &Row) -> Vec<String> {
    let m = &r.measures;
    vec![
        r.run_id.clone(),
        r.git_rev.clone(),
        r.started_at.clone(),
        r.machine.clone(),
        r.backend.clone(),
        r.device.clone(),
        r.target.clone(),
        r.draft.clone(),
        r.dtype.clone(),
        r.aux_layers_resolved.clone(),
        r.steps.to_string(),
        r.topk.to_string(),
        r.num_draft_tokens.to_string(),
        r.temperature.to_string(),
        r.batch_size.to_string(),
        r.prompt_set.clone(),
        r.prompts.to_string(),
        m.output_tokens.to_string(),
        m.verify_steps.to_string(),
        fixed(m.wall_s, 6),
        fixed(m.throughput_tok_s, 3),
        m.tau.to_string(),
        m.accept_rate.to_string(),
        opt_fixed(m.speedup, 4),
        opt_fixed(m.ttft_ms_p50, 4),
        opt_fixed(m.tpot_ms_p50, 4),
        m.lossless.map(|b| b.to_string()).unwrap_or_default(),
        r.repeat.to_string(),
        r.seed.to_string(),
        r.max_new_tokens.to_string(),
        r.id_convention.clone(),
        r.spans.name().to_string(),
        fixed(m.prefill_s, 6),
        fixed(m.decode_s, 6),
        r.row_key.clone(),
        flag(r.steps, m.tau).to_string(),
        fixed(m.decode_cpu_s, 6),
        fixed(m.cpu_tok_s, 3),
        opt_fixed(m.cpu_speedup, 4),
    ]
}

impl RowWriter for RunsCsv {
    fn write(&mut self, row: &Row) -> Result<(), SweepError> {
        self.0.append(&[record(row)])
    }
}
