//! Prompts and prompt sets, with category filtering and sampling.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::{DatasetError, Result};
use crate::format::Format;
use crate::sample::sample_indices;

/// One prompt of a set.
///
/// Multi-turn sets (MT-bench, Spec-Bench) keep every turn in [`turns`]; the
/// benchmark sends only the **first turn** ([`Prompt::text`]), so each prompt
/// is one request. The later turns are kept for a future multi-turn mode.
///
/// [`turns`]: Prompt::turns
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// Identifier, unique within the set: the upstream id where there is one
    /// (`question_id`, `task_id`, an `id` field), otherwise the 1-based line
    /// number in the file.
    pub id: String,
    /// The category used for filtering and per-category reports.
    pub category: String,
    /// A finer category, where the format has one (Spec-Bench's MT-bench
    /// questions: category `mt_bench`, subcategory `writing`, ...).
    pub subcategory: Option<String>,
    /// The user turns, in order; never empty.
    pub turns: Vec<String>,
}

impl Prompt {
    /// Builds a single-turn prompt.
    pub fn new(
        id: impl Into<String>,
        category: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Prompt {
            id: id.into(),
            category: category.into(),
            subcategory: None,
            turns: vec![text.into()],
        }
    }

    /// The text the benchmark sends: the first turn.
    pub fn text(&self) -> &str {
        self.turns.first().map_or("", String::as_str)
    }

    /// Whether this prompt belongs to `name` (its category or subcategory,
    /// compared ignoring ASCII case).
    pub fn in_category(&self, name: &str) -> bool {
        self.category.eq_ignore_ascii_case(name)
            || self
                .subcategory
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(name))
    }
}

/// A loaded prompt set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptSet {
    /// Short name used in reports (the `prompt_set` column of `runs.csv`).
    pub name: String,
    /// The format the file was read as.
    pub format: Format,
    /// Where it came from: a file path, or `builtin`.
    pub source: String,
    /// The prompts, in file order (a sample keeps file order too).
    pub prompts: Vec<Prompt>,
}

impl PromptSet {
    /// Number of prompts.
    pub fn len(&self) -> usize {
        self.prompts.len()
    }

    /// Whether the set has no prompt (never true for a freshly loaded set).
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// The distinct categories, sorted.
    pub fn categories(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self.prompts.iter().map(|p| p.category.as_str()).collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// The distinct subcategories, sorted (empty for most formats).
    pub fn subcategories(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self
            .prompts
            .iter()
            .filter_map(|p| p.subcategory.as_deref())
            .collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// How many prompts each category has, sorted by category.
    pub fn category_counts(&self) -> Vec<(String, usize)> {
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for p in &self.prompts {
            *counts.entry(p.category.as_str()).or_default() += 1;
        }
        counts.into_iter().map(|(c, n)| (c.to_owned(), n)).collect()
    }

    /// Keeps the prompts in any of `categories` (each matched against the
    /// category or subcategory, ignoring ASCII case). An empty list keeps all.
    ///
    /// Fails with [`DatasetError::UnknownCategory`], listing the valid names,
    /// when a name matches no prompt.
    pub fn filter_categories<S: AsRef<str>>(self, categories: &[S]) -> Result<PromptSet> {
        if categories.is_empty() {
            return Ok(self);
        }
        for c in categories {
            let c = c.as_ref();
            if !self.prompts.iter().any(|p| p.in_category(c)) {
                let mut valid = self.categories();
                valid.extend(self.subcategories());
                valid.sort();
                valid.dedup();
                return Err(DatasetError::UnknownCategory {
                    set: self.name,
                    category: c.to_owned(),
                    valid,
                });
            }
        }
        Ok(self.with_prompts(|prompts| {
            prompts
                .into_iter()
                .filter(|p| categories.iter().any(|c| p.in_category(c.as_ref())))
                .collect()
        }))
    }

    /// Draws `n` prompts without replacement, deterministically from `seed`
    /// (see [`crate::sample`]); the drawn prompts keep their file order.
    ///
    /// Fails when `n` is 0 or larger than the set. Sampling the same set with
    /// the same `n` and `seed` gives the same prompts on every machine, and a
    /// smaller `n` with the same seed gives a subset of a larger one.
    pub fn sample(self, n: usize, seed: u64) -> Result<PromptSet> {
        if n == 0 {
            return Err(DatasetError::ZeroSample { set: self.name });
        }
        if n > self.len() {
            return Err(DatasetError::SampleTooLarge {
                set: self.name,
                requested: n,
                available: self.prompts.len(),
                filtered: false,
            });
        }
        let mut keep = sample_indices(self.len(), n, seed);
        keep.sort_unstable();
        Ok(self.with_prompts(|prompts| {
            let mut slots: Vec<Option<Prompt>> = prompts.into_iter().map(Some).collect();
            keep.into_iter()
                .filter_map(|i| slots.get_mut(i).and_then(Option::take))
                .collect()
        }))
    }

    /// The same set with its prompts replaced by `f` of them.
    fn with_prompts(mut self, f: impl FnOnce(Vec<Prompt>) -> Vec<Prompt>) -> PromptSet {
        self.prompts = f(std::mem::take(&mut self.prompts));
        self
    }
}
