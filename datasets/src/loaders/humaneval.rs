//! HumanEval (openai/human-eval): `{"task_id": "HumanEval/0", "prompt":
//! "def ...", "entry_point": ..., "canonical_solution": ..., "test": ...}`.

use std::path::Path;

use super::record::records;
use crate::error::Result;
use crate::prompt::Prompt;

/// Parses HumanEval. The prompt is the code `prompt` (signature and
/// docstring), verbatim with its trailing newline; the id is `task_id`; the
/// category is `code`. Other fields are ignored.
pub fn parse(file: &Path, content: &str) -> Result<Vec<Prompt>> {
    records(file, content)?
        .iter()
        .map(|r| Ok(Prompt::new(r.id("task_id")?, "code", r.text("prompt")?)))
        .collect()
}
