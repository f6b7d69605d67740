//! Generic JSONL: one object per line, the prompt in a configurable field.

use std::path::Path;

use super::record::records;
use crate::error::Result;
use crate::prompt::Prompt;

/// The category of records that have no `category` field.
pub const DEFAULT_CATEGORY: &str = "default";

/// Parses generic JSONL.
///
/// - The prompt is the string in `field` when given; otherwise in `prompt`,
///   or in `text` when a record has no `prompt`. The field may also hold an
///   array of strings, read as turns.
/// - The id is the `id` field (string or integer) when present, else the
///   1-based line number.
/// - The category is the `category` field when present, else `default`.
pub fn parse(file: &Path, content: &str, field: Option<&str>) -> Result<Vec<Prompt>> {
    records(file, content)?
        .iter()
        .map(|r| {
            let field = match field {
                Some(f) => f,
                None if !r.has("prompt") && r.has("text") => "text",
                None => "prompt",
            };
            Ok(Prompt {
                id: r.opt_id("id")?.unwrap_or_else(|| r.line.to_string()),
                category: r
                    .opt_text("category")?
                    .unwrap_or_else(|| DEFAULT_CATEGORY.to_owned()),
                subcategory: None,
                turns: r.turns(field, true)?,
            })
        })
        .collect()
}
