//! Which columns identify a row across runs: every identity column of
//! runs.csv except where and when it ran (`run_id`, `git_rev`,
//! `started_at`, `machine`, `device`), plus the extras that shape the
//! numbers (`repeat`, `seed`, `max_new_tokens`, `id_convention`, `spans`).
//! A *group* is the same without `repeat` and `seed`: the repeats of a row.

use super::Record;

/// Columns that identify a row, in runs.csv order.
pub const IDENTITY: [&str; 17] = [
    "backend",
    "target",
    "draft",
    "dtype",
    "aux_layers_resolved",
    "steps",
    "topk",
    "num_draft_tokens",
    "temperature",
    "batch_size",
    "prompt_set",
    "prompts",
    "repeat",
    "seed",
    "max_new_tokens",
    "id_convention",
    "spans",
];

fn key(r: &Record, skip: &[&str]) -> String {
    IDENTITY
        .iter()
        .filter(|c| !skip.contains(c))
        .map(|c| r.text(c))
        .collect::<Vec<_>>()
        .join("|")
}

/// The row's identity (repeat and seed included).
pub fn row_identity(r: &Record) -> String {
    key(r, &[])
}

/// The row's group: its identity without `repeat` and `seed`.
pub fn group_key(r: &Record) -> String {
    key(r, &["repeat", "seed"])
}

/// A readable name of the row's group: its row key without the `.rN` repeat part.
pub fn group_label(r: &Record) -> String {
    let repeat = format!("r{}", r.text("repeat"));
    let parts: Vec<&str> = r.text("row_key").split('.').collect();
    let keep: Vec<&str> = parts
        .iter()
        .enumerate()
        .filter(|(i, p)| *i < 2 || **p != repeat)
        .map(|(_, p)| *p)
        .collect();
    keep.join(".")
}
