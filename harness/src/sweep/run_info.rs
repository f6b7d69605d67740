//! What every row of a run shares: ids, the machine, the spec's run-wide
//! settings, and the test hooks.

use super::shard::Shard;
use crate::run_folder::TestHooks;

/// What every row of the run shares.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The run id.
    pub run_id: String,
    /// `git rev-parse HEAD`.
    pub git_rev: String,
    /// Host name.
    pub machine: String,
    /// `cpu`.
    pub backend: String,
    /// CPU model.
    pub device: String,
    /// The slice of the grid this process runs.
    pub shard: Shard,
    /// Base seed (repeat `r` uses `seed + r`).
    pub seed: u64,
    /// Tokens per prompt at most.
    pub max_new_tokens: usize,
    /// Generate past EOS.
    pub ignore_eos: bool,
    /// Run prompts past the target's `max_position_embeddings`.
    pub allow_past_context: bool,
    /// Unrecorded batches after loading a model pair.
    pub warmup: usize,
    /// Regressions planted on purpose (tests of the gate); none by default.
    pub hooks: TestHooks,
    /// Run a group's rows batch by batch in turn rather than row after row.
    pub interleave: bool,
}
