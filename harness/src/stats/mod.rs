//! Statistics of the gate and of comparisons: a seeded bootstrap confidence
//! interval of the relative change between two sets of repeats
//! ([`bootstrap`]), and the criterion-style reading of it against a noise
//! threshold ([`verdict`]); the paired rounds of `specula ab` ([`paired`])
//! with the signed-rank interval ([`signed_rank`]).

pub mod bootstrap;
pub mod paired;
pub mod signed_rank;
pub mod verdict;

pub use bootstrap::{relative_change, Bootstrap, Interval};
pub use verdict::{classify, Verdict};

/// The arithmetic mean (`None` when empty).
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}
