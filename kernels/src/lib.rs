//! Compute kernels of specula.
//!
//! [`cpu`] holds the batch-invariant CPU kernels the CPU engine runs on. They
//! are also the reference implementations that the CUDA kernels are checked
//! against. *Batch-invariant* means every output row is computed by the same
//! sequence of floating-point operations whatever else is in the batch, so a
//! token's logits are bitwise identical whether it is decoded alone, in a
//! batch, or as one node of a verified draft tree. That is what makes the
//! engine's lossless invariant (speculative greedy output == baseline greedy
//! output, token for token) hold exactly rather than "up to rounding".

#![warn(missing_docs)]

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod mla_layout;
pub mod mma_layout;
pub mod switch;
pub mod tile_layout;
pub mod wg_layout;
