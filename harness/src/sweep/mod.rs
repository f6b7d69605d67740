//! `specula sweep`: a grid of model pairs x draft configs x batch sizes x
//! prompt sets x temperatures, run through the engine (or served engines,
//! [`crate::remote`]) into a run folder ([`crate::run_folder`]).
//!
//! - [`spec`], [`spec_source`], [`values`], [`overrides`]: the TOML spec,
//!   errors with lines, and the command line's overrides;
//! - [`grid`]: expansion into baseline groups and rows, invalid points with reasons;
//! - [`plan`]: the sweep as a value, started into a run folder (or resumed) and run;
//! - [`shard`]: the deterministic slice of `--shard i/n`;
//! - [`runner`], [`loaded`], [`run_info`], [`row_calls`] and [`measure`]:
//!   running rows in process (back to back or interleaved) and turning
//!   generations into measures;
//! - [`device`]: the CPU or the GPU;
//! - [`cpu_clock`]: the decode phase's CPU time (the gate's timed measure);
//! - [`progress`], [`summary`], [`interrupt`]: what the user sees, and Ctrl-C;
//! - [`hooks`], [`planted`]: regressions planted on purpose, for testing the gate.

pub mod context_fit;
pub mod cpu_clock;
pub mod device;
pub mod draft_points;
pub mod grid;
pub mod hooks;
pub mod interrupt;
pub mod loaded;
pub mod measure;
pub mod overrides;
pub mod plan;
pub mod planted;
pub mod progress;
pub mod row_calls;
pub mod run_info;
pub mod runner;
pub mod shard;
pub mod spec;
pub mod spec_source;
pub mod summary;
pub mod thread_clock;
pub mod values;

use crate::run_folder::RunFolderError;
use crate::Fault;

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
    /// Other unusable input (flags, settings, the GPU).
    #[error("{0}")]
    Input(String),
    /// The run folder: unusable, damaged, or a write failed.
    #[error(transparent)]
    RunFolder(#[from] RunFolderError),
    /// Every draft config the spec asks for was refused (an impossible tree,
    /// aux ids that do not resolve): only baselines ran, and they are kept.
    #[error("{0}")]
    NoDraftConfig(String),
    /// Served points failed (listed in failures.csv); every finished row is kept.
    #[error("{0}")]
    RowsFailed(String),
    /// Ctrl-C or SIGTERM: finished rows are kept, the row in flight is dropped.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

impl SweepError {
    /// Whose fault it is.
    pub fn fault(&self) -> Fault {
        match self {
            SweepError::RunFolder(e) => e.fault(),
            SweepError::Engine(e) if e.is_write() => Fault::Failed,
            SweepError::RowsFailed(_) => Fault::Failed,
            SweepError::Interrupted(_) => Fault::Interrupted,
            SweepError::Spec(_)
            | SweepError::Engine(_)
            | SweepError::Dataset(_)
            | SweepError::Input(_)
            | SweepError::NoDraftConfig(_) => Fault::Input,
        }
    }
}
