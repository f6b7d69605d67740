//! Open-loop load (docs/DESIGN.md 9.6): requests sent at arrival times
//! drawn in advance ([`arrivals`]: Poisson or constant, seeded), each on its
//! own future on the client's runtime, so that a slow answer never delays the next arrival
//! ([`open_loop`]), at most `concurrency` in flight (as `vllm bench serve
//! --max-concurrency`: an arrival waits for a free slot). The closed-loop
//! rows of [`crate::remote::row`] are the other mode.

pub mod arrivals;
pub mod open_loop;

pub use arrivals::{Arrival, LoadSpec};
