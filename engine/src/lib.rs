//! specula's speculative decoding engine: Hugging Face checkpoints, the
//! target and EAGLE-3 draft models, aux hidden-state capture, draft trees,
//! lossless verification and per-span timing.

pub mod capture;
pub mod checkpoint;
pub mod config;
pub mod error;
pub mod tokenizer;

pub use error::{EngineError, Result};
pub mod kv_cache;
pub mod model;
pub mod generate;
pub mod spec;
pub mod stats;
pub mod timing;
