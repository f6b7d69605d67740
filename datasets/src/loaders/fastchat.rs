//! FastChat's question format, shared by MT-bench and Spec-Bench:
//! `{"question_id": 81, "category": "writing", "turns": ["...", "..."]}`
//! (an optional `reference` field is ignored).

use std::path::Path;

use super::record::records;
use crate::error::Result;
use crate::prompt::Prompt;

/// MT-bench's eight categories, which Spec-Bench groups as `mt_bench`.
pub const MT_BENCH_CATEGORIES: [&str; 8] = [
    "writing",
    "roleplay",
    "reasoning",
    "math",
    "coding",
    "extraction",
    "stem",
    "humanities",
];

/// Spec-Bench's six task categories, in file order.
pub const SPEC_BENCH_CATEGORIES: [&str; 6] = [
    "mt_bench",
    "translation",
    "summarization",
    "qa",
    "math_reasoning",
    "rag",
];

/// Parses MT-bench: the category is the file's `category` field.
pub fn parse_mt_bench(file: &Path, content: &str) -> Result<Vec<Prompt>> {
    records(file, content)?
        .iter()
        .map(|r| {
            Ok(Prompt {
                id: r.id("question_id")?,
                category: r.text("category")?,
                subcategory: None,
                turns: r.turns("turns", false)?,
            })
        })
        .collect()
}

/// Parses Spec-Bench: a record whose `category` is one of MT-bench's eight
/// gets category `mt_bench` and keeps the original as its subcategory, so the
/// set has Spec-Bench's six task categories; any other category is kept as is.
pub fn parse_spec_bench(file: &Path, content: &str) -> Result<Vec<Prompt>> {
    let mut prompts = parse_mt_bench(file, content)?;
    for p in &mut prompts {
        if MT_BENCH_CATEGORIES.contains(&p.category.as_str()) {
            let sub = std::mem::replace(&mut p.category, SPEC_BENCH_CATEGORIES[0].to_owned());
            p.subcategory = Some(sub);
        }
    }
    Ok(prompts)
}
