//! Reading a spec file, and placing errors at their file, line and column.

use super::spec::SweepSpec;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A spec error: the file, the line and column when known, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The spec file (or `command line`).
    pub origin: String,
    /// 1-based line and column, when the error has a place in the file.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((l, c)) => write!(f, "{}:{l}:{c}: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for SpecError {}

/// The spec's text, to turn byte spans into lines.
#[derive(Debug, Clone)]
pub struct SpecSource {
    /// The file as given on the command line.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
}

impl SpecSource {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<SpecSource, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            origin: path.display().to_string(),
            at: None,
            message: format!("cannot read the sweep spec: {e}"),
        })?;
        Ok(SpecSource {
            path: path.to_path_buf(),
            text,
        })
    }

    /// An error at byte range `span` (an empty span at 0: the value came from a flag or a default).
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> SpecError {
        let at = (span != (0..0)).then(|| {
            let before = &self.text[..span.start.min(self.text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            (line, col)
        });
        SpecError {
            origin: self.path.display().to_string(),
            at,
            message: message.into(),
        }
    }

    /// Parses the TOML into a spec (syntax, types and unknown fields) and checks its values.
    pub fn parse(&self) -> Result<SweepSpec, SpecError> {
        let spec: SweepSpec = toml::from_str(&self.text).map_err(|e| {
            self.error(
                e.span().unwrap_or(0..0),
                e.message().trim().replace('\n', " "),
            )
        })?;
        spec.validate(self)?;
        Ok(spec)
    }
}

/// Where top-level `field = ...` starts (a line scan; `0..0` when absent).
pub fn top_level_span(text: &str, field: &str) -> Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            break;
        }
        if t.strip_prefix(field)
            .is_some_and(|r| r.trim_start().starts_with('='))
        {
            let start = offset + line.len() - t.len();
            return start..start + field.len();
        }
        offset += line.len();
    }
    0..0
}
