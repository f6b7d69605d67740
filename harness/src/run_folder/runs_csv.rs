//! `runs.csv`: one row per grid point, in the column order of
//! [`super::schema::RUNS_COLUMNS`].
//!
//! Deterministic measures (`tau`, `accept_rate`) are written with Rust's
//! shortest round-trip float format, so equal values give equal text.

use super::csv_file::{fixed, opt_fixed, AppendCsv};
use super::schema::{flag, RUNS_COLUMNS};
use super::{Row, RowWriter, RunFolderError};
use std::path::Path;

/// The runs.csv writer.
#[derive(Debug)]
pub struct RunsCsv(AppendCsv);

impl RunsCsv {
    /// Opens (or creates) `path`.
    pub fn open(path: &Path) -> Result<RunsCsv, RunFolderError> {
        AppendCsv::open(path, &RUNS_COLUMNS).map(RunsCsv)
    }
}

/// The row's cells, in [`RUNS_COLUMNS`] order.
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
        r.method.clone(),
        r.request_rate.map(|x| x.to_string()).unwrap_or_default(),
    ]
}

impl RowWriter for RunsCsv {
    fn write(&mut self, row: &Row) -> Result<(), RunFolderError> {
        self.0.append(&[record(row)])
    }
}
