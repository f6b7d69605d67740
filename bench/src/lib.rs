//! Criterion benchmarks of specula live in `benches/` (`cargo bench -p specula-bench`).
