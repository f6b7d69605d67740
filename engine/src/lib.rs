//! specula's speculative decoding engine: Hugging Face checkpoints, the
//! target and EAGLE-3 draft models, aux hidden-state capture, draft trees,
//! lossless verification and per-span timing.
//!
//! The CPU backend reads checkpoints through candle-core and computes with
//! the batch-invariant kernels of `specula-kernels`, so the engine's first
//! invariant (speculative greedy output == baseline greedy output, token for
//! token) holds exactly for every config and batch size.

#![warn(missing_docs)]

pub mod audit;
pub mod backend;
pub mod capture;
pub mod capture_file;
pub mod checkpoint;
pub mod config;
pub mod error;
pub mod fixtures;
pub mod generate;
pub mod generation;
pub mod kv_cache;
pub mod model;
pub mod pair;
pub mod pytorch_file;
pub mod safetensors_file;
pub mod speculative;
pub mod tensor_file;
pub mod timing;
pub mod tokenizer;
pub mod weights;

pub use error::{EngineError, Result};
