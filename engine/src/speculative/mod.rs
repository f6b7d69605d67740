//! Speculative decoding: configs, draft trees, drafting and verification.

mod config;
mod drafter;
mod eagle;
mod oracle;
mod search;
mod synthetic;
mod tree;
mod verify;

pub use config::SpeculativeConfig;
pub use drafter::{DraftRequest, DraftStep, Drafter, PendingAux};
pub use eagle::EagleDrafter;
pub use oracle::OracleDrafter;
pub use search::{
    children_of, needs_only_top_k, search_trees, Candidate, DraftScores, SearchState,
};
pub use synthetic::SyntheticAcceptance;
pub use tree::{DraftNode, DraftTree, Proposal};
pub use verify::{verify_greedy, verify_sampling, Acceptance};
