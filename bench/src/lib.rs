//! Criterion benchmarks of specula live in `benches/` (`cargo bench -p
//! specula-bench`); this library holds what they share.

pub mod interleaved;
pub mod legacy_linear;
pub mod roofline;
pub mod tiny_pair;
