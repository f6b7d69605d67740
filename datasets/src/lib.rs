//! Prompt-set loaders.
