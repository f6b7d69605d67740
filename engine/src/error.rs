//! Errors of the engine. Every input error names the file and the field (or
//! tensor) at fault, so the CLI can print one clear line and exit with code 2.

use std::path::{Path, PathBuf};

/// Result alias of the engine.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// What went wrong, with the file and field to look at.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// A file the engine writes (fixtures) could not be written.
    #[error("{path}: {message}")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A required file is missing from a model folder.
    #[error("{path}: missing {what}")]
    MissingFile {
        /// The expected path.
        path: PathBuf,
        /// What the file is for.
        what: String,
    },
    /// A JSON file is not valid JSON, or a field has the wrong type.
    #[error("{path}: {field}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// `field `name`` for a type error, `invalid JSON` for a syntax error.
        field: String,
        /// What the parser said, with line and column.
        message: String,
    },
    /// A config field is missing or has an unusable value.
    #[error("{path}: field `{field}`: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The checkpoint's architecture is not one the engine runs.
    #[error(
        "{path}: field `architectures`: unknown architecture {found:?} (supported: {supported})"
    )]
    UnknownArchitecture {
        /// The config file.
        path: PathBuf,
        /// What the config names.
        found: Vec<String>,
        /// The supported names, comma-separated.
        supported: String,
    },
    /// A tensor the model needs is not in the checkpoint.
    #[error("{path}: missing tensor `{name}`")]
    MissingTensor {
        /// The checkpoint folder or file.
        path: PathBuf,
        /// The tensor name.
        name: String,
    },
    /// A tensor has another shape than the config implies.
    #[error("{path}: tensor `{name}` has shape {found:?}, expected {expected:?} ({why})")]
    TensorShape {
        /// The safetensors file holding it.
        path: PathBuf,
        /// The tensor name.
        name: String,
        /// The shape the config implies.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
        /// Which config fields imply the expected shape.
        why: String,
    },
    /// A weight file (safetensors, or a PyTorch checkpoint) is unreadable,
    /// corrupt, or holds an unsupported dtype or a non-finite value.
    #[error("{path}: {message}")]
    WeightFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The tokenizer could not be loaded or used.
    #[error("{path}: tokenizer: {message}")]
    Tokenizer {
        /// The tokenizer.json file.
        path: PathBuf,
        /// What the tokenizers library said.
        message: String,
    },
    /// The GPU backend failed (no driver, out of memory, a kernel launch).
    #[error("GPU: {0}")]
    Device(String),
    /// A model produced NaN or infinity where numbers were expected (its
    /// logits): a broken checkpoint or an overflow, never a token.
    #[error("non-finite values: {0}")]
    NonFinite(String),
    /// A draft/speculation setting is invalid (steps, topk, draft tokens, aux ids...).
    #[error("invalid {field}: {message}")]
    InvalidSetting {
        /// The setting (CLI flag or spec field).
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl EngineError {
    /// An [`EngineError::Io`] for `path`.
    pub fn io(path: &Path, source: std::io::Error) -> EngineError {
        EngineError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An [`EngineError::Write`] of `path`.
    pub fn write(path: &Path, what: impl std::fmt::Display) -> EngineError {
        EngineError::Write {
            path: path.to_path_buf(),
            message: what.to_string(),
        }
    }

    /// Whether this is a failed write (not unusable input).
    pub fn is_write(&self) -> bool {
        matches!(self, EngineError::Write { .. })
    }

    /// An [`EngineError::Config`] for `field` of `path`.
    pub fn config(
        path: &Path,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> EngineError {
        EngineError::Config {
            path: path.to_path_buf(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// An [`EngineError::InvalidSetting`].
    pub fn setting(field: impl Into<String>, message: impl Into<String>) -> EngineError {
        EngineError::InvalidSetting {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[cfg(feature = "cuda")]
impl From<specula_kernels::cuda::GpuError> for EngineError {
    fn from(e: specula_kernels::cuda::GpuError) -> EngineError {
        EngineError::Device(e.to_string())
    }
}

#[cfg(feature = "cuda")]
impl From<cudarc::driver::DriverError> for EngineError {
    fn from(e: cudarc::driver::DriverError) -> EngineError {
        EngineError::Device(format!("CUDA driver: {e}"))
    }
}
