//! Auditing a target + EAGLE-3 draft pair: static checks of the files, and
//! an empirical check of which target hidden states the draft was trained
//! on, scored on captured states (a capture file, or one recorded in
//! process) so the target need not be loaded.

mod draft_on_states;
mod engines;
mod mapping;
mod raw_config;
mod score;
mod static_checks;

pub use draft_on_states::{check_capture_fits, load_draft_on_states, DraftOnStates};
pub use engines::{
    add_engine_candidates, engine_feeds, score_engines, Engine, EngineFeed, EngineScore,
};
pub use mapping::{candidate_mappings, ids_for, Candidate, Fix, MappingAudit};
pub use score::rank_mappings;
pub use static_checks::{static_checks, static_checks_for, Check, CheckStatus, TargetFacts};
