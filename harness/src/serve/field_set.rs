//! Which engine version's field names `specula serve` answers with: the
//! current ones (default) or the older ones (`--field-set legacy`), so the
//! sweep's clients are tested against both (docs/DESIGN.md 7.11).

use serde::{Deserialize, Serialize};

/// The answer's field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FieldSet {
    /// SGLang: `spec_num_correct_drafts`, `spec_num_proposed_drafts`,
    /// `spec_correct_drafts_histogram` (and their aliases), `/server_info`
    /// with `internal_states`; vLLM: `_total` counters with an `engine`
    /// label, `metrics.speculative_decoding` when asked for, `/version`.
    #[default]
    Current,
    /// SGLang before the rename: `spec_verify_ct` and
    /// `spec_accept_histogram` only, `/get_server_info` only; vLLM: counters
    /// without `_total` or labels, no per-request metrics.
    Legacy,
}

/// How `specula serve` answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answers {
    /// The field names.
    pub fields: FieldSet,
    /// vLLM's `--per-request-spec-decode-metrics summary`: each answer's
    /// `metrics.speculative_decoding` (current field set only).
    pub per_request_metrics: bool,
}
