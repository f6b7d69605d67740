//! Plain text: one prompt per non-empty line.

use std::path::Path;

use super::jsonl::DEFAULT_CATEGORY;
use crate::error::{DatasetError, Result};
use crate::prompt::Prompt;

/// Parses plain text: every line that is not blank is one prompt, with
/// surrounding whitespace trimmed; blank lines are skipped. The id is the
/// 1-based line number and the category `default`. There is no escaping and
/// no comment syntax; use JSONL for prompts that span lines.
pub fn parse(file: &Path, content: &str) -> Result<Vec<Prompt>> {
    let prompts: Vec<Prompt> = content
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Prompt::new((i + 1).to_string(), DEFAULT_CATEGORY, l.trim()))
        .collect();
    if prompts.is_empty() {
        return Err(DatasetError::Empty {
            file: file.to_path_buf(),
        });
    }
    Ok(prompts)
}
