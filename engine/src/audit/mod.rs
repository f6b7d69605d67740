//! Auditing a target + EAGLE-3 draft pair: static checks of the files, and
//! an empirical check of which target hidden states the draft was trained on.

mod mapping;
mod static_checks;

pub use mapping::{candidate_mappings, rank_mappings, Candidate, MappingAudit};
pub use static_checks::{static_checks, Check, CheckStatus};
