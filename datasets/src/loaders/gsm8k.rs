//! GSM8K (openai/grade-school-math): `{"question": "...", "answer": "..."}`.

use std::path::Path;

use super::record::records;
use crate::error::Result;
use crate::prompt::Prompt;

/// Parses GSM8K. The prompt is the `question`, verbatim; the `answer` must be
/// present (it identifies the format) but is not used. GSM8K has no ids, so a
/// prompt's id is its 1-based line number; its category is `math`.
pub fn parse(file: &Path, content: &str) -> Result<Vec<Prompt>> {
    records(file, content)?
        .iter()
        .map(|r| {
            let question = r.text("question")?;
            r.text("answer")?;
            Ok(Prompt::new(r.line.to_string(), "math", question))
        })
        .collect()
}
