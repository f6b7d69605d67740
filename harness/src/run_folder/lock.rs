//! The run folder as a place to write: created exclusively for a new sweep,
//! and locked (an advisory `flock` on `.lock`, released by the kernel even
//! after `kill -9`) for as long as a sweep writes into it, so two sweeps
//! never share one.

use super::schema::META_JSON;
use super::{RowWriter, RunFolderError};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// A run folder this process owns until dropped.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    _lock: File,
}

impl RunDir {
    /// Creates `path` (its parents too); fails if it already exists.
    pub fn create(path: &Path) -> Result<RunDir, RunFolderError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| RunFolderError::write(parent, e))?;
        }
        std::fs::create_dir(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                RunFolderError::unusable(
                    path,
                    format!(
                        "the run folder already exists; pick another --out, or continue it with --resume {}",
                        path.display()
                    ),
                )
            } else {
                RunFolderError::write(path, e)
            }
        })?;
        RunDir::lock(path)
    }

    /// Takes an existing run folder (for `--resume`).
    pub fn open(path: &Path) -> Result<RunDir, RunFolderError> {
        if !path.join(META_JSON).is_file() {
            return Err(RunFolderError::unusable(
                path,
                "not a sweep run folder (no meta.json)",
            ));
        }
        RunDir::lock(path)
    }

    fn lock(path: &Path) -> Result<RunDir, RunFolderError> {
        let lock_path = path.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .read(true)
            .open(&lock_path)
            .map_err(|e| RunFolderError::write(&lock_path, e))?;
        if !try_lock(&file) {
            let holder = std::fs::read_to_string(&lock_path).unwrap_or_default();
            return Err(RunFolderError::unusable(
                path,
                format!(
                    "another sweep is writing into this folder ({}); wait for it or pick another --out",
                    holder.trim()
                ),
            ));
        }
        let _ = file.set_len(0);
        let _ = std::fs::write(&lock_path, format!("pid {}\n", std::process::id()));
        Ok(RunDir {
            path: path.to_path_buf(),
            _lock: file,
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A file in the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The per-row writers of the folder, in write order: positions.csv,
    /// kernels.csv, the histogram logs, and runs.csv last (a row is finished
    /// exactly when its runs.csv line exists).
    pub fn row_writers(&self) -> Result<Vec<Box<dyn RowWriter>>, RunFolderError> {
        use super::schema::{HISTOGRAMS, KERNELS_CSV, POSITIONS_CSV, RUNS_CSV};
        use super::{HistogramLogs, KernelsCsv, PositionsCsv, RunsCsv};
        Ok(vec![
            Box::new(PositionsCsv::open(&self.file(POSITIONS_CSV))?),
            Box::new(KernelsCsv::open(&self.file(KERNELS_CSV))?),
            Box::new(HistogramLogs::open(&self.file(HISTOGRAMS))?),
            Box::new(super::RequestsCsv::open(
                &self.file(super::requests_csv::REQUESTS_CSV),
            )?),
            Box::new(RunsCsv::open(&self.file(RUNS_CSV))?),
        ])
    }
}

#[cfg(unix)]
fn try_lock(file: &File) -> bool {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor this process owns; no memory is shared.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(not(unix))]
fn try_lock(_: &File) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_created_once_and_locked_while_held() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("runs/x");
        let held = RunDir::create(&p).unwrap();
        assert!(RunDir::create(&p)
            .unwrap_err()
            .to_string()
            .contains("already exists"));
        std::fs::write(p.join("meta.json"), "{}").unwrap();
        assert!(RunDir::open(&p)
            .unwrap_err()
            .to_string()
            .contains("another sweep"));
        drop(held);
        // A child another test forks at this moment holds a copy of the
        // descriptor (and the lock) until it execs: allow it a moment.
        let reopened = (0..50).find_map(|_| {
            RunDir::open(&p)
                .inspect_err(|_| std::thread::sleep(std::time::Duration::from_millis(20)))
                .ok()
        });
        assert!(reopened.is_some(), "the lock is released with its holder");
    }
}
