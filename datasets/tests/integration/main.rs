//! Integration tests of the prompt-set readers: built-in sets, real files, templates, errors.
//!
//! One test binary for the whole folder: one link instead of one per file,
//! which keeps CI's build time and disk small.

mod builtin;
mod chat_template;
mod common;
mod embedded;
mod errors;
mod generic;
mod real_files;
mod sampling;
