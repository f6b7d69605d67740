//! Acceptance by context tier across rows: a context-tier sweep gives each
//! tier its own prompt set, so each tier is its own row; this view puts the
//! rows of one setting (model, draft config, batch, temperature, repeat)
//! side by side, tiers ordered by their mean prompt tokens, with tau and
//! a_k summed over each tier's requests (requests.csv, 7.1), and lists the
//! (model, prompt set) pairs the sweep skipped because they do not fit the
//! model's context (meta.json `skipped`, [`crate::sweep::context_fit`]).

use super::slices::Sums;
use crate::analyze::slices::AcceptanceSlice;
use crate::run_folder::requests_csv::REQUESTS_CSV;
use crate::run_folder::{Run, RunFolderError, Table};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One setting's tiers, shortest first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TierRow {
    /// The row key without its prompt set (`tiny.s3k1n4.b1.t0.r0`).
    pub setting: String,
    /// One slice per prompt set (`slice` = the prompt set's name).
    pub tiers: Vec<AcceptanceSlice>,
}

/// A tier the sweep did not run, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SkippedTier {
    /// The model's name.
    pub model: String,
    /// The prompt set's name.
    pub prompt_set: String,
    /// Why.
    pub reason: String,
}

/// The cross-row view of a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ContextTiers {
    /// Settings whose requests span at least two prompt sets.
    pub rows: Vec<TierRow>,
    /// Prompt sets skipped for not fitting a model's context.
    pub skipped: Vec<SkippedTier>,
}

/// The view of the run `run` (empty when its requests span one prompt set
/// per setting and nothing was skipped for context).
pub fn context_tiers(run: &Run) -> Result<ContextTiers, RunFolderError> {
    tiers_of(run.meta.as_ref(), &run.dir)
}

/// The view from a run's meta.json (parsed) and the folder holding its requests.csv.
fn tiers_of(meta: Option<&Value>, dir: &Path) -> Result<ContextTiers, RunFolderError> {
    let skipped = meta
        .and_then(|m| m.get("skipped"))
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let set = s.get("config")?.as_str()?.strip_prefix("prompt_set=")?;
            Some(SkippedTier {
                model: s.get("model")?.as_str()?.to_string(),
                prompt_set: set.to_string(),
                reason: s.get("reason")?.as_str()?.to_string(),
            })
        })
        .collect();
    let path = dir.join(REQUESTS_CSV);
    if !path.is_file() {
        return Ok(ContextTiers {
            rows: Vec::new(),
            skipped,
        });
    }
    let t = Table::read(&path)?;
    let col = |name: &str| t.require(name, &path);
    let (key, set, prompt, output, verify, reached) = (
        col("row_key")?,
        col("prompt_set")?,
        col("prompt_tokens")?,
        col("output_tokens")?,
        col("verify_steps")?,
        col("reached_per_position")?,
    );
    let mut by: BTreeMap<String, BTreeMap<String, Sums>> = BTreeMap::new();
    for r in &t.rows {
        let (Ok(v), Ok(out)) = (r[verify].parse::<u64>(), r[output].parse::<u64>()) else {
            continue;
        };
        if r[reached].is_empty() {
            continue;
        }
        let depth: Vec<u64> = r[reached]
            .split(';')
            .filter_map(|x| x.parse().ok())
            .collect();
        let setting = r[key].replacen(&format!(".{}.", r[set]), ".", 1);
        by.entry(setting)
            .or_default()
            .entry(r[set].clone())
            .or_default()
            .add(r[prompt].parse().ok(), out, v, &depth);
    }
    let rows = by
        .into_iter()
        .filter(|(_, sets)| sets.len() > 1)
        .map(|(setting, sets)| {
            let mut tiers: Vec<AcceptanceSlice> =
                sets.into_iter().map(|(name, s)| s.slice(&name)).collect();
            tiers.sort_by(|a, b| {
                let len = |s: &AcceptanceSlice| s.prompt_tokens_mean.unwrap_or(f64::MAX);
                len(a).total_cmp(&len(b))
            });
            TierRow { setting, tiers }
        })
        .collect();
    Ok(ContextTiers { rows, skipped })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_folder::requests_csv::REQUESTS_COLUMNS;
    use serde_json::json;

    fn line(key: &str, set: &str, prompt: &str, out: &str, verify: &str, reached: &str) -> String {
        REQUESTS_COLUMNS
            .iter()
            .map(|c| match *c {
                "row_key" => key,
                "prompt_set" => set,
                "prompt_tokens" => prompt,
                "output_tokens" => out,
                "verify_steps" => verify,
                "reached_per_position" => reached,
                _ => "",
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn each_prompt_set_of_a_setting_is_one_tier_shortest_first_and_skipped_tiers_keep_their_reason()
    {
        let t = tempfile::tempdir().unwrap();
        let text = [
            REQUESTS_COLUMNS.join(","),
            line("m.s3.b1.ctx1k.t0.r0", "ctx1k", "1000", "9", "8", "1;0;0"),
            line("m.s3.b1.ctx1k.t0.r0", "ctx1k", "1040", "9", "8", "1;0;0"),
            line("m.s3.b1.short.t0.r0", "short", "20", "11", "4", "4;2;0"),
            line("m.s5.b1.only.t0.r0", "only", "20", "11", "4", "4;2;0"),
            line("m.base.b1.short.t0.r0", "short", "20", "11", "10", ""),
        ]
        .join("\n")
            + "\n";
        std::fs::write(t.path().join(REQUESTS_CSV), text).unwrap();
        let meta = json!({"skipped": [
            {"model": "m", "config": "prompt_set=ctx4k", "reason": "past 2048"},
            {"model": "m", "config": "steps=0", "reason": "the baseline"}
        ]});
        let v = tiers_of(Some(&meta), t.path()).unwrap();
        assert_eq!(v.rows.len(), 1, "the baseline has no verify counts: {v:?}");
        let r = &v.rows[0];
        assert_eq!(r.setting, "m.s3.b1.t0.r0");
        let names: Vec<&str> = r.tiers.iter().map(|s| s.slice.as_str()).collect();
        assert_eq!(
            names,
            ["short", "ctx1k"],
            "a setting with one prompt set is not a tier view"
        );
        let ctx = &r.tiers[1];
        assert_eq!((ctx.requests, ctx.prompt_tokens_mean), (2, Some(1020.0)));
        assert_eq!(ctx.tau, Some(1.0), "(2 x 9 - 2) / 16");
        assert_eq!(ctx.per_position[0], 2.0 / 16.0);
        assert_eq!(r.tiers[0].tau, Some(2.5));
        assert_eq!(
            v.skipped,
            vec![SkippedTier {
                model: "m".into(),
                prompt_set: "ctx4k".into(),
                reason: "past 2048".into()
            }]
        );
    }
}
