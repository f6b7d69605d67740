//! What to load: a prompt-set specification, as a sweep spec names it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::builtin;
use crate::embedded::{embedded, EmbeddedSet};
use crate::error::{DatasetError, Result};
use crate::format::Format;
use crate::loaders;
use crate::prompt::PromptSet;

/// Where a prompt set comes from.
///
/// In configs it is one string: `builtin`; the name of an embedded public set
/// (`mt-bench`, `spec-bench`, `gsm8k`, `humaneval`), optionally with one
/// category after a colon (`spec-bench:translation`); or a file path. A name
/// wins over a file of that name: write `./gsm8k` for the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PromptSource {
    /// The built-in set compiled into this crate (see [`crate::builtin`]).
    Builtin,
    /// A public set compiled into this crate (see [`mod@crate::embedded`]).
    Embedded {
        /// The set's name.
        name: String,
        /// Keep only this category (or subcategory).
        category: Option<String>,
    },
    /// A file on disk.
    Path(PathBuf),
}

impl From<String> for PromptSource {
    fn from(s: String) -> Self {
        if s == builtin::NAME {
            return PromptSource::Builtin;
        }
        let (name, category) = match s.split_once(':') {
            Some((n, c)) => (n, Some(c.to_owned())),
            None => (s.as_str(), None),
        };
        match embedded(name) {
            Some(set) => PromptSource::Embedded {
                name: set.name.to_owned(),
                category,
            },
            None => PromptSource::Path(PathBuf::from(s)),
        }
    }
}

impl From<&str> for PromptSource {
    fn from(s: &str) -> Self {
        PromptSource::from(s.to_owned())
    }
}

impl From<PromptSource> for String {
    fn from(s: PromptSource) -> String {
        s.to_string()
    }
}

impl fmt::Display for PromptSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromptSource::Builtin => f.write_str(builtin::NAME),
            PromptSource::Embedded {
                name,
                category: None,
            } => f.write_str(name),
            PromptSource::Embedded {
                name,
                category: Some(c),
            } => write!(f, "{name}:{c}"),
            PromptSource::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A prompt set to load: source, format, category filter and sample.
///
/// Loading applies, in order: read and parse, keep the listed categories,
/// draw `sample` prompts with `seed`. The default is the whole built-in set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptSetSpec {
    /// Name used in reports; `None` means the source as written for the
    /// built-in and embedded sets (`builtin`, `spec-bench:qa`), the file stem
    /// (`gsm8k_test`) for a file.
    pub name: Option<String>,
    /// `builtin`, an embedded set's name (with an optional `:category`), or a file path.
    pub source: PromptSource,
    /// The file's format; `None` detects it (see [`Format::detect`]).
    /// Ignored for the built-in and embedded sets.
    pub format: Option<Format>,
    /// For generic JSONL files, the field holding the prompt (default
    /// `prompt`, then `text`). Ignored for other formats and the built-in set.
    pub field: Option<String>,
    /// Keep only prompts in these categories (or subcategories); empty keeps all.
    pub categories: Vec<String>,
    /// Draw this many prompts; `None` keeps all.
    pub sample: Option<usize>,
    /// Seed of the deterministic sampler.
    pub seed: u64,
}

impl Default for PromptSetSpec {
    fn default() -> Self {
        PromptSetSpec {
            name: None,
            source: PromptSource::Builtin,
            format: None,
            field: None,
            categories: Vec::new(),
            sample: None,
            seed: 0,
        }
    }
}

impl PromptSetSpec {
    /// The whole built-in set.
    pub fn builtin() -> Self {
        PromptSetSpec::default()
    }

    /// The whole file at `path`, format detected.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        PromptSetSpec {
            source: PromptSource::Path(path.into()),
            ..PromptSetSpec::default()
        }
    }

    /// Sets the format (builder style).
    pub fn with_format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// Sets the category filter (builder style).
    pub fn with_categories<S: Into<String>>(
        mut self,
        categories: impl IntoIterator<Item = S>,
    ) -> Self {
        self.categories = categories.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the sample size and seed (builder style).
    pub fn with_sample(mut self, n: usize, seed: u64) -> Self {
        self.sample = Some(n);
        self.seed = seed;
        self
    }

    /// The name the loaded set will have.
    pub fn resolved_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match &self.source {
            PromptSource::Builtin => builtin::NAME.to_owned(),
            PromptSource::Embedded { .. } => self.source.to_string(),
            PromptSource::Path(p) => p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string()),
        }
    }

    /// Loads, filters and samples the set.
    pub fn load(&self) -> Result<PromptSet> {
        let mut categories = self.categories.clone();
        let set = match &self.source {
            PromptSource::Builtin => builtin::prompt_set()?,
            PromptSource::Embedded { name, category } => {
                categories.extend(category.clone());
                embedded(name)
                    .ok_or_else(|| DatasetError::UnknownSet {
                        name: name.clone(),
                        known: EmbeddedSet::names(),
                    })?
                    .prompt_set()?
            }
            PromptSource::Path(path) => load_file(path, self.format, self.field.as_deref())?,
        };
        let set = PromptSet {
            name: self.resolved_name(),
            ..set
        };
        let set = set.filter_categories(&categories)?;
        match self.sample {
            None => Ok(set),
            Some(n) => set.sample(n, self.seed).map_err(|e| match e {
                DatasetError::SampleTooLarge {
                    set,
                    requested,
                    available,
                    ..
                } => DatasetError::SampleTooLarge {
                    set,
                    requested,
                    available,
                    filtered: !categories.is_empty(),
                },
                other => other,
            }),
        }
    }
}

/// Reads the whole file at `path` as a prompt set named after its stem.
/// `format: None` detects the format; `field` is for generic JSONL.
pub fn load_file(path: &Path, format: Option<Format>, field: Option<&str>) -> Result<PromptSet> {
    let content = loaders::read_text(path)?;
    let format = match format {
        Some(f) => f,
        None => Format::detect(path, &content)?,
    };
    let prompts = loaders::parse(format, path, &content, field)?;
    Ok(PromptSet {
        name: PromptSetSpec::from_path(path).resolved_name(),
        format,
        source: path.display().to_string(),
        prompts,
    })
}
