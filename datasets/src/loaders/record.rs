//! JSONL records: one JSON object per line, with field accessors whose errors
//! name the file, the line and the field.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{DatasetError, Result};

/// One parsed line of a JSONL file.
pub(crate) struct Record<'a> {
    file: &'a Path,
    /// 1-based line number.
    pub line: usize,
    obj: Map<String, Value>,
}

/// Parses every non-blank line of `content` as a JSON object.
///
/// Blank lines are skipped (line numbers still count them). A file with no
/// record is [`DatasetError::Empty`].
pub(crate) fn records<'a>(file: &'a Path, content: &str) -> Result<Vec<Record<'a>>> {
    let mut out = Vec::new();
    for (i, raw) in content.lines().enumerate() {
        let line = i + 1;
        let text = raw.trim();
        if text.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(text).map_err(|e| DatasetError::Json {
            file: file.to_path_buf(),
            line,
            message: json_message(&e),
        })?;
        match value {
            Value::Object(obj) => out.push(Record { file, line, obj }),
            other => {
                return Err(DatasetError::Json {
                    file: file.to_path_buf(),
                    line,
                    message: format!("expected a JSON object, found {}", kind(&other)),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(DatasetError::Empty {
            file: file.to_path_buf(),
        });
    }
    Ok(out)
}

/// serde_json's message with its position ("at line 1 column 9", always line
/// 1 since each line is parsed alone) replaced by the column.
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match full.strip_suffix(&position) {
        Some(msg) => format!("{msg} (column {})", e.column()),
        None => full,
    }
}

/// "a string", "a number", ... for error messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Record<'_> {
    /// Whether the record has `field`.
    pub fn has(&self, field: &str) -> bool {
        self.obj.contains_key(field)
    }

    fn missing(&self, field: &str) -> DatasetError {
        DatasetError::MissingField {
            file: self.file.to_path_buf(),
            line: self.line,
            field: field.to_owned(),
        }
    }

    fn bad(&self, field: &str, problem: impl Into<String>) -> DatasetError {
        DatasetError::BadField {
            file: self.file.to_path_buf(),
            line: self.line,
            field: field.to_owned(),
            problem: problem.into(),
        }
    }

    /// A required string field, which must not be empty or all whitespace.
    pub fn text(&self, field: &str) -> Result<String> {
        match self.obj.get(field) {
            None => Err(self.missing(field)),
            Some(Value::String(s)) if s.trim().is_empty() => Err(self.bad(field, "is empty")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.bad(field, format!("must be a string, found {}", kind(other)))),
        }
    }

    /// An optional string field (absent or null gives `None`).
    pub fn opt_text(&self, field: &str) -> Result<Option<String>> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.text(field).map(Some),
        }
    }

    /// A required identifier: a string or an integer, returned as a string.
    pub fn id(&self, field: &str) -> Result<String> {
        match self.obj.get(field) {
            None => Err(self.missing(field)),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(self.bad(field, "is empty")),
            Some(other) => Err(self.bad(
                field,
                format!("must be a string or an integer, found {}", kind(other)),
            )),
        }
    }

    /// An optional identifier (see [`Record::id`]).
    pub fn opt_id(&self, field: &str) -> Result<Option<String>> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.id(field).map(Some),
        }
    }

    /// Turns: a non-empty array of non-empty strings, or (when
    /// `allow_string`) a single string taken as one turn.
    pub fn turns(&self, field: &str, allow_string: bool) -> Result<Vec<String>> {
        match self.obj.get(field) {
            None => Err(self.missing(field)),
            Some(Value::String(_)) if allow_string => self.text(field).map(|t| vec![t]),
            Some(Value::Array(items)) => {
                if items.is_empty() {
                    return Err(self.bad(field, "is an empty array; it needs at least one turn"));
                }
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item {
                        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                        Value::String(_) => Err(self.bad(field, format!("turn {i} is empty"))),
                        other => Err(self.bad(
                            field,
                            format!("turn {i} must be a string, found {}", kind(other)),
                        )),
                    })
                    .collect()
            }
            Some(other) => Err(self.bad(
                field,
                format!(
                    "must be {}, found {}",
                    if allow_string {
                        "a string or an array of strings"
                    } else {
                        "an array of strings"
                    },
                    kind(other)
                ),
            )),
        }
    }
}
