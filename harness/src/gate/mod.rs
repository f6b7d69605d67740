//! `specula gate`: a CI performance gate of a run against a baseline run.
//!
//! - [`policy`]: what is checked and how strictly (TOML, with defaults);
//! - [`inputs`]: refusing unusable input (missing columns, other schemas, empty runs, unmatched rows);
//! - [`decision`]: deterministic measures exactly, speedup by a bootstrap interval;
//! - [`pace`]: whether the machine ran the baselines at the same pace in both runs;
//! - [`summary`]: the Markdown summary for a CI job page.

pub mod decision;
pub mod inputs;
pub mod pace;
pub mod policy;
pub mod summary;

pub use decision::decide;
pub use policy::Policy;
