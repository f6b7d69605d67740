//! The `specula` library: everything the `specula` binary does, callable
//! without a command line (the binary in `main.rs` and `cli/` only parses
//! arguments, calls in here, prints, and turns errors into exit codes).
//!
//! - [`sweep`]: a sweep spec turned into a plan and executed, in process
//!   (CPU or CUDA engine) or against servers ([`remote`]);
//! - [`run_folder`]: the files a run writes, and the one reader of them;
//! - [`analyze`], [`report`], [`compare`], [`gate`], [`nightly`]: what is
//!   made of run folders; [`stats`] holds their statistics, [`doc`] their
//!   HTML and Markdown;
//! - [`serve`]: specula's own engine behind the SGLang and vLLM protocols;
//! - [`fault`]: the one classification of failures that every domain error gives.
//!
//! Each domain owns its typed error ([`run_folder::RunFolderError`],
//! [`sweep::SweepError`], [`report::ReportError`], ...), each with a
//! `fault()`.

#![warn(missing_docs)]

pub mod ab;
pub mod analyze;
pub mod capture;
pub mod compare;
pub mod cost;
pub mod doc;
pub mod fault;
pub mod gate;
pub mod load;
pub mod nightly;
pub mod probe;
pub mod process_stats;
pub mod remote;
pub mod report;
pub mod run_folder;
pub mod serve;
pub mod stats;
pub mod sweep;

pub use fault::Fault;
