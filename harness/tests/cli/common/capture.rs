//! Helpers of the capture and audit tests: a capture file of
//! models/tiny-llama, a copy of one of its drafts to edit, and
//! `specula audit --states` over them.

use super::{ok, repo, specula_in};
use std::path::{Path, PathBuf};
use std::process::Output;

/// `specula capture --target models/tiny-llama --out NAME EXTRA...` run in
/// `dir`; asserts success and returns the file's path.
pub fn capture_tiny_llama(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let target = repo().join("models/tiny-llama");
    let mut args = vec![
        "capture",
        "--target",
        target.to_str().unwrap(),
        "--out",
        name,
    ];
    args.extend_from_slice(extra);
    ok(&specula_in(dir, &args));
    dir.join(name)
}

/// A copy of models/tiny-llama/`draft` (config.json and model.safetensors)
/// at `dir/draft`, changed by `edit`.
pub fn edited_draft(dir: &Path, draft: &str, edit: impl FnOnce(&Path)) -> PathBuf {
    let from = repo().join("models/tiny-llama").join(draft);
    let to = dir.join("draft");
    std::fs::create_dir(&to).unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
    edit(&to);
    to
}

/// `specula audit --states STATES --draft DRAFT EXTRA...` run in `dir`.
pub fn audit_states(dir: &Path, states: &str, draft: &str, extra: &[&str]) -> Output {
    let mut args = vec!["audit", "--states", states, "--draft", draft];
    args.extend_from_slice(extra);
    specula_in(dir, &args)
}
