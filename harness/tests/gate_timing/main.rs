//! `specula gate` end to end, in a test binary of its own: two of its tests
//! time same-build sweeps against each other (A/A) and a planted slowdown,
//! which other test modules running in the same process would disturb (a
//! clean-clone CI run judged an A/A pair -14% when they shared the `cli`
//! binary). Cargo runs test binaries one after another, so nothing else of
//! the suite runs beside these timings.

#[path = "../cli/common/mod.rs"]
mod common;
mod gate_cli;
