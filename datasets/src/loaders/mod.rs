//! Parsers for each [`Format`], and reading a prompt file from disk.
//!
//! Each parser takes the file's path (only to name it in errors) and its
//! content, so it can be used on text that does not come from a file.

pub mod fastchat;
pub mod gsm8k;
pub mod humaneval;
pub mod jsonl;
mod record;
pub mod text;

use std::path::Path;

use crate::error::{DatasetError, Result};
use crate::format::Format;
use crate::prompt::Prompt;

/// Parses `content` as `format`. `field` picks the prompt field of generic
/// JSONL and is ignored by the other formats.
pub fn parse(
    format: Format,
    file: &Path,
    content: &str,
    field: Option<&str>,
) -> Result<Vec<Prompt>> {
    match format {
        Format::MtBench => fastchat::parse_mt_bench(file, content),
        Format::SpecBench => fastchat::parse_spec_bench(file, content),
        Format::Gsm8k => gsm8k::parse(file, content),
        Format::HumanEval => humaneval::parse(file, content),
        Format::Jsonl => jsonl::parse(file, content, field),
        Format::Text => text::parse(file, content),
    }
}

/// Reads `file` as UTF-8 text, dropping a leading byte-order mark.
///
/// Errors name the file; invalid UTF-8 also names the line it is on.
pub fn read_text(file: &Path) -> Result<String> {
    let bytes = std::fs::read(file).map_err(|source| DatasetError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    match String::from_utf8(bytes) {
        Ok(mut s) => {
            if s.starts_with('\u{feff}') {
                s.drain(..'\u{feff}'.len_utf8());
            }
            Ok(s)
        }
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let line = 1 + e
                .as_bytes()
                .get(..valid)
                .unwrap_or(&[])
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            Err(DatasetError::NotUtf8 {
                file: file.to_path_buf(),
                line,
            })
        }
    }
}
