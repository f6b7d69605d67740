//! Shared fixtures of the engine tests: random checkpoints written once per test binary.
#![allow(dead_code)]

pub mod lossless;
pub mod reference;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula_engine::fixtures::{write_random_pair, FixturePaths, StoreDtype, TargetShape};
use std::path::PathBuf;
use std::sync::OnceLock;

/// A random pair of `shape` written under a temp folder that lives as long as the test binary.
pub fn fixture(shape: &str) -> FixturePaths {
    static DIRS: OnceLock<std::sync::Mutex<Vec<(String, FixturePaths, tempfile::TempDir)>>> =
        OnceLock::new();
    let dirs = DIRS.get_or_init(Default::default);
    let mut dirs = dirs.lock().unwrap();
    if let Some((_, p, _)) = dirs.iter().find(|(s, _, _)| s == shape) {
        return p.clone();
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = write_random_pair(
        tmp.path(),
        &TargetShape::named(shape).unwrap(),
        7,
        StoreDtype::F32,
        None,
    )
    .unwrap();
    dirs.push((shape.to_string(), p.clone(), tmp));
    p
}

/// `n` random prompts of different lengths (3 to 40 tokens) over byte tokens.
pub fn prompts(n: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            (0..3 + (i * 11 + rng.random_range(0..7)) % 38)
                .map(|_| rng.random_range(0..256u32))
                .collect()
        })
        .collect()
}

/// A fresh temp dir.
pub fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().to_path_buf();
    (t, p)
}
