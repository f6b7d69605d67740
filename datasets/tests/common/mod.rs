//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The shared datasets folder, which sits beside the repository root.
pub const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/datasets");

/// The shared datasets folder, or `None` (after saying so) when it is absent.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(SHARED);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: shared datasets folder {} not found (it sits beside the repo root); \
             real-file test not run",
            dir.display()
        );
        None
    }
}

/// Writes `content` to `name` inside `dir` and returns the path.
pub fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write test file");
    path
}

/// The error message of `r`, which must be an error.
pub fn err_msg<T: std::fmt::Debug>(r: specula_datasets::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}
