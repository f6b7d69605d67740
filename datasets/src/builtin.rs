//! The built-in prompt set: 24 prompts written for this project, compiled in
//! so that a benchmark runs with nothing but the repository.
//!
//! Eight prompts in each of three categories, `code` (starts of Python
//! functions, signature and docstring), `math` (grade-school word problems as
//! `Question: ...\nAnswer:`) and `chat` (short instructions and questions).
//! The file is `datasets/builtin/prompts.jsonl`, in the generic JSONL format
//! with `id`, `category` and `prompt` fields.

use std::path::Path;

use crate::error::Result;
use crate::format::Format;
use crate::loaders;
use crate::prompt::PromptSet;

/// The name of the built-in set, and the source string that selects it.
pub const NAME: &str = "builtin";

/// The built-in set's JSONL text.
pub const JSONL: &str = include_str!("../builtin/prompts.jsonl");

/// The built-in set's categories.
pub const CATEGORIES: [&str; 3] = ["code", "math", "chat"];

/// The path the built-in set's errors would name (it has none; tests check).
const ORIGIN: &str = "<builtin>/prompts.jsonl";

/// Parses the built-in set.
pub fn prompt_set() -> Result<PromptSet> {
    let prompts = loaders::jsonl::parse(Path::new(ORIGIN), JSONL, None)?;
    Ok(PromptSet {
        name: NAME.to_owned(),
        format: Format::Jsonl,
        source: NAME.to_owned(),
        prompts,
    })
}
