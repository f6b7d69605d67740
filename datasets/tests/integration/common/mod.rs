//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository's copies of the public prompt sets (`datasets/public/`).
pub fn public_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("public")
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
