//! `specula sweep`: a grid of model pairs x draft configs x batch sizes x
//! prompt sets x temperatures, run through the engine into the files of
//! DESIGN.md (runs.csv, positions.csv, kernels.csv, histograms/, meta.json).
//!
//! - [`spec`], [`spec_source`], [`values`]: the TOML spec, its CLI overrides, errors with lines;
//! - [`grid`]: expansion into baseline groups and rows, invalid points with reasons;
//! - [`shard`]: the deterministic slice of `--shard i/n`;
//! - [`run_dir`]: the run folder, created exclusively and locked;
//! - [`resume`]: what a folder already holds, and its repair after a kill;
//! - [`runner`], [`run_info`], [`row_calls`] and [`measure`]: running rows (back to back or interleaved) and turning generations into measures;
//! - [`cpu_clock`]: the decode phase's CPU time (the gate's timed measure);
//! - [`progress`], [`summary`], [`interrupt`]: what the user sees, and Ctrl-C;
//! - [`hooks`]: regressions planted on purpose, for testing the gate.

pub mod cpu_clock;
pub mod device;
pub mod grid;
pub mod hooks;
pub mod interrupt;
pub mod measure;
pub mod progress;
pub mod resume;
pub mod row_calls;
pub mod run_dir;
pub mod run_info;
pub mod runner;
pub mod shard;
pub mod spec;
pub mod spec_source;
pub mod summary;
pub mod values;

use std::path::PathBuf;

/// Anything that stops a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The spec is malformed or has an unusable value.
    #[error("{0}")]
    Spec(#[from] spec::SpecError),
    /// A model folder is unusable.
    #[error(transparent)]
    Engine(#[from] specula_engine::EngineError),
    /// A prompt set is unusable.
    #[error(transparent)]
    Dataset(#[from] specula_datasets::DatasetError),
    /// Other unusable input (folders, flags).
    #[error("{0}")]
    Input(String),
    /// Reading or writing a result file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A result file in a run folder is not what this tool writes.
    #[error("{}: {message}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Served points failed (listed in failures.csv); every finished row is kept.
    #[error("{0}")]
    RowsFailed(String),
    /// Ctrl-C or SIGTERM: finished rows are kept, the row in flight is dropped.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

impl SweepError {
    /// An [`SweepError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> SweepError {
        SweepError::Io {
            path: path.into(),
            source,
        }
    }
}
