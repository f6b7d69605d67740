//! Integration tests of the engine: goldens, losslessness, capture, sampling, families.
//!
//! One test binary for the whole folder: one link instead of one per file,
//! which keeps CI's build time and disk small. (`../capture_file_memory.rs`
//! counts the process's allocations, so it keeps a process of its own.)

mod capture;
mod chunked_prefill;
mod common;
mod draft_layouts;
mod families;
mod golden;
mod lossless;
mod lossless_sparse;
mod moe_golden;
mod padded_extend;
mod pytorch_checkpoints;
mod sampling;
mod sparse_config;
