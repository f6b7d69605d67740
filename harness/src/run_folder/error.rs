//! What can go wrong with a run folder, with the file (and the row and
//! column, where there is one) to look at.

use crate::fault::Fault;
use std::path::{Path, PathBuf};

/// A run-folder problem: unreadable or malformed input, an unusable folder,
/// or a failed write.
#[derive(Debug, thiserror::Error)]
pub enum RunFolderError {
    /// A file or folder could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A file is not what this tool writes: a bad header, a missing column,
    /// a cell that is not a number, a torn line.
    #[error("{}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the row and column where there is one.
        message: String,
    },
    /// The folder cannot be used as asked: it exists already, another sweep
    /// holds it, it is not a run folder, or two inputs of a merge clash.
    #[error("{}: {message}", path.display())]
    Unusable {
        /// The folder (or file).
        path: PathBuf,
        /// Why, and what to do instead.
        message: String,
    },
    /// Writing a result file failed (disk full, read-only folder).
    #[error("{}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

impl RunFolderError {
    /// A [`RunFolderError::Read`] of `path`.
    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> RunFolderError {
        RunFolderError::Read {
            path: path.into(),
            source,
        }
    }

    /// A [`RunFolderError::Write`] of `path`.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> RunFolderError {
        RunFolderError::Write {
            path: path.into(),
            source,
        }
    }

    /// A [`RunFolderError::Malformed`] file `path`.
    pub fn malformed(path: &Path, message: impl std::fmt::Display) -> RunFolderError {
        RunFolderError::Malformed {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// A [`RunFolderError::Unusable`] folder `path`.
    pub fn unusable(path: &Path, message: impl std::fmt::Display) -> RunFolderError {
        RunFolderError::Unusable {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// Whose fault it is: a failed write, or unusable input.
    pub fn fault(&self) -> Fault {
        match self {
            RunFolderError::Write { .. } => Fault::Failed,
            _ => Fault::Input,
        }
    }
}
