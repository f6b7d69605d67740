//! Prompt sets for the specula benchmarks.
//!
//! - Loaders for the upstream formats of MT-bench, Spec-Bench, GSM8K and
//!   HumanEval, plus generic JSONL and plain text ([`loaders`], [`Format`]).
//! - [`PromptSetSpec`]: what to load (a file, an embedded public set or the
//!   built-in set), with a category filter and a deterministic sample ([`sample`]).
//! - The public sets MT-bench, Spec-Bench, GSM8K (test) and HumanEval,
//!   compiled in with their licences and provenance ([`mod@embedded`]).
//! - The built-in 24-prompt set, the default ([`builtin`]).
//! - Chat templates from Hugging Face tokenizer configs ([`ChatTemplate`]).
//!
//! Multi-turn sets keep all their turns, but the benchmark sends the first
//! turn of each prompt ([`Prompt::text`]).
//!
//! ```
//! use specula_datasets::PromptSetSpec;
//!
//! let set = PromptSetSpec::builtin()
//!     .with_categories(["math"])
//!     .with_sample(3, 7)
//!     .load()?;
//! assert_eq!(set.len(), 3);
//! assert!(set.prompts.iter().all(|p| p.text().starts_with("Question: ")));
//! # Ok::<(), specula_datasets::DatasetError>(())
//! ```

#![warn(missing_docs)]

pub mod builtin;
pub mod chat_template;
pub mod embedded;
pub mod error;
pub mod format;
pub mod loaders;
pub mod prompt;
pub mod sample;
pub mod spec;

pub use chat_template::{prompt_input, ChatMessage, ChatTemplate};
pub use embedded::{embedded, EmbeddedSet, EMBEDDED};
pub use error::{DatasetError, Result};
pub use format::Format;
pub use prompt::{Prompt, PromptSet};
pub use spec::{load_file, PromptSetSpec, PromptSource};
