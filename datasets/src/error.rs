//! The one error type of this crate.
//!
//! Every variant that comes from a file names that file, and where it can,
//! the 1-based line and the field, so that a user can open the file at the
//! right place without reading any code.

use std::path::PathBuf;

/// Anything that can go wrong while loading, filtering, sampling a prompt set
/// or rendering a chat template.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be read at all.
    #[error("{}: cannot read: {source}", file.display())]
    Io {
        /// The file that could not be read.
        file: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The file is not valid UTF-8.
    #[error("{}:{line}: not valid UTF-8 text", file.display())]
    NotUtf8 {
        /// The file.
        file: PathBuf,
        /// The 1-based line holding the first invalid byte.
        line: usize,
    },

    /// The file holds no prompt (it is empty or has only blank lines).
    #[error("{}: empty file: no prompts found", file.display())]
    Empty {
        /// The file.
        file: PathBuf,
    },

    /// A line of a JSONL file is not a JSON object.
    #[error("{}:{line}: malformed JSON: {message}", file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What the JSON parser said, with the column within the line.
        message: String,
    },

    /// A required field is absent from a record.
    #[error("{}:{line}: missing field `{field}`", file.display())]
    MissingField {
        /// The file.
        file: PathBuf,
        /// The 1-based line.
        line: usize,
        /// The field that was expected.
        field: String,
    },

    /// A field is present but its value is unusable (wrong type, empty).
    #[error("{}:{line}: field `{field}` {problem}", file.display())]
    BadField {
        /// The file.
        file: PathBuf,
        /// The 1-based line.
        line: usize,
        /// The offending field.
        field: String,
        /// What is wrong with it, e.g. "must be a string, found a number".
        problem: String,
    },

    /// A format name (from a config or the command line) is not known.
    #[error("unknown prompt-set format `{name}`; valid formats: {}", crate::Format::NAMES.join(", "))]
    FormatName {
        /// The name that was given.
        name: String,
    },

    /// A name that is not one of the embedded sets.
    #[error("no embedded prompt set `{name}`; the embedded sets are {known} (and `builtin`)")]
    UnknownSet {
        /// The name that was given.
        name: String,
        /// The names there are.
        known: String,
    },

    /// A category filter names a category that the set does not have.
    #[error("prompt set `{set}`: unknown category `{category}`; valid categories: {}", valid.join(", "))]
    UnknownCategory {
        /// The prompt set's name.
        set: String,
        /// The category that was asked for.
        category: String,
        /// Every name the filter accepts for this set, sorted.
        valid: Vec<String>,
    },

    /// A sample larger than the (filtered) set was asked for.
    #[error("prompt set `{set}`: sample size {requested} is larger than the set, which has only {available} prompts{}", if *filtered { " after the category filter" } else { "" })]
    SampleTooLarge {
        /// The prompt set's name.
        set: String,
        /// The sample size asked for.
        requested: usize,
        /// How many prompts there are to sample from.
        available: usize,
        /// Whether a category filter had already reduced the set.
        filtered: bool,
    },

    /// A sample of zero prompts was asked for.
    #[error("prompt set `{set}`: sample size must be at least 1")]
    ZeroSample {
        /// The prompt set's name.
        set: String,
    },

    /// A `tokenizer_config.json` is malformed or its `chat_template` unusable.
    #[error("{}: {message}", file.display())]
    TokenizerConfig {
        /// The tokenizer config file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// A chat template failed to parse or to render.
    #[error("{origin}: chat template error{}: {message}", line.map(|l| format!(" at template line {l}")).unwrap_or_default())]
    Template {
        /// Where the template came from (a file path or `<string>`).
        origin: String,
        /// The 1-based line inside the template, when known.
        line: Option<usize>,
        /// What minijinja said.
        message: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = DatasetError> = std::result::Result<T, E>;
