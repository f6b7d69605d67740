//! Acceptance by context tier across rows: a context-tier sweep gives each
//! tier its own prompt set, so each tier is its own row; this view puts the
//! rows of one setting (model, draft config, batch, temperature, repeat)
//! side by side, tiers ordered by their mean prompt tokens, with tau and
//! a_k summed over each tier's requests (requests.csv, 7.1), and lists the
//! (model, prompt set) pairs the sweep skipped because they do not fit the
//! model's context (meta.json `skipped`, [`crate::sweep::context_fit`]).
//! A tier run past the model's trained context (`allow_past_context`) says
//! so: each tier counts its requests past `max_position_embeddings`
//! (requests.csv `past_trained_context`), and the sets meta.json lists as
//! run past it are listed with their positions.

use super::slices::Sums;
use crate::analyze::slices::AcceptanceSlice;
use crate::run_folder::requests_csv::REQUESTS_CSV;
use crate::run_folder::{PastContextSet, Run, RunFolderError, Table};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One setting's tiers, shortest first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TierRow {
    /// The row key without its prompt set (`tiny.s3k1n4.b1.t0.r0`).
    pub setting: String,
    /// One per prompt set.
    pub tiers: Vec<Tier>,
}

/// One prompt set of a setting.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tier {
    /// Its acceptance (`slice` = the prompt set's name).
    #[serde(flatten)]
    pub acceptance: AcceptanceSlice,
    /// Its requests whose prompt and output tokens exceed the target's
    /// `max_position_embeddings` (0 where requests.csv does not say).
    pub past_trained_context: usize,
    /// Its requests for which requests.csv says either way (runs before
    /// the column, or without a known limit, do not).
    pub context_known: usize,
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
    /// Prompt sets run past a model's trained context (meta.json
    /// `past_trained_context`).
    pub past_trained_context: Vec<PastContextSet>,
}

impl ContextTiers {
    /// How tier `tier` of `setting` sits past the trained context, in words
    /// (empty when none of its requests is past it and meta.json lists no
    /// such set): `past trained context: 2 of 2 requests over 2048 positions`.
    pub fn past_note(&self, setting: &str, tier: &Tier) -> String {
        let listed = self.past_trained_context.iter().find(|p| {
            p.prompt_set == tier.acceptance.slice && setting.starts_with(&format!("{}.", p.model))
        });
        if tier.past_trained_context == 0 && listed.is_none() {
            return String::new();
        }
        let limit = listed.map_or(String::new(), |p| {
            format!(" over {} positions", p.max_position_embeddings)
        });
        format!(
            "past trained context: {} of {} requests{limit}",
            tier.past_trained_context, tier.acceptance.requests
        )
    }
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
    let past_trained_context = meta
        .and_then(|m| m.get("past_trained_context"))
        .and_then(|p| serde_json::from_value(p.clone()).ok())
        .unwrap_or_default();
    let path = dir.join(REQUESTS_CSV);
    if !path.is_file() {
        return Ok(ContextTiers {
            rows: Vec::new(),
            skipped,
            past_trained_context,
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
    // Runs before the column: no request is known to be past.
    let past = t.col("past_trained_context");
    let mut by: BTreeMap<String, BTreeMap<String, (Sums, usize, usize)>> = BTreeMap::new();
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
        let tier = by
            .entry(setting)
            .or_default()
            .entry(r[set].clone())
            .or_default();
        tier.0.add(r[prompt].parse().ok(), out, v, &depth);
        tier.1 += usize::from(past.is_some_and(|c| r[c] == "true"));
        tier.2 += usize::from(past.is_some_and(|c| !r[c].is_empty()));
    }
    let rows = by
        .into_iter()
        .filter(|(_, sets)| sets.len() > 1)
        .map(|(setting, sets)| {
            let mut tiers: Vec<Tier> = sets
                .into_iter()
                .map(|(name, (s, past, known))| Tier {
                    acceptance: s.slice(&name),
                    past_trained_context: past,
                    context_known: known,
                })
                .collect();
            tiers.sort_by(|a, b| {
                let len = |t: &Tier| t.acceptance.prompt_tokens_mean.unwrap_or(f64::MAX);
                len(a).total_cmp(&len(b))
            });
            TierRow { setting, tiers }
        })
        .collect();
    Ok(ContextTiers {
        rows,
        skipped,
        past_trained_context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_folder::requests_csv::REQUESTS_COLUMNS;
    use serde_json::json;

    fn line(key: &str, set: &str, prompt: &str, out: &str, verify: &str, reached: &str) -> String {
        past_line(key, set, prompt, out, verify, reached, "false")
    }

    fn past_line(
        key: &str,
        set: &str,
        prompt: &str,
        out: &str,
        verify: &str,
        reached: &str,
        past: &str,
    ) -> String {
        REQUESTS_COLUMNS
            .iter()
            .map(|c| match *c {
                "row_key" => key,
                "prompt_set" => set,
                "prompt_tokens" => prompt,
                "output_tokens" => out,
                "verify_steps" => verify,
                "reached_per_position" => reached,
                "past_trained_context" => past,
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
        let names: Vec<&str> = r
            .tiers
            .iter()
            .map(|s| s.acceptance.slice.as_str())
            .collect();
        assert_eq!(
            names,
            ["short", "ctx1k"],
            "a setting with one prompt set is not a tier view"
        );
        let ctx = &r.tiers[1].acceptance;
        assert_eq!((ctx.requests, ctx.prompt_tokens_mean), (2, Some(1020.0)));
        assert_eq!(ctx.tau, Some(1.0), "(2 x 9 - 2) / 16");
        assert_eq!(ctx.per_position[0], 2.0 / 16.0);
        assert_eq!(r.tiers[0].acceptance.tau, Some(2.5));
        assert_eq!(r.tiers[1].past_trained_context, 0);
        assert_eq!(r.tiers[1].context_known, 2);
        assert_eq!(
            v.skipped,
            vec![SkippedTier {
                model: "m".into(),
                prompt_set: "ctx4k".into(),
                reason: "past 2048".into()
            }]
        );
    }

    #[test]
    fn a_tier_run_past_the_trained_context_counts_its_requests_past_it() {
        let t = tempfile::tempdir().unwrap();
        let text = [
            REQUESTS_COLUMNS.join(","),
            line("m.s3.b1.ctx1k.t0.r0", "ctx1k", "1000", "9", "8", "1;0;0"),
            past_line(
                "m.s3.b1.ctx4k.t0.r0",
                "ctx4k",
                "3967",
                "9",
                "8",
                "0;0;0",
                "true",
            ),
            past_line(
                "m.s3.b1.ctx4k.t0.r0",
                "ctx4k",
                "2000",
                "9",
                "8",
                "1;0;0",
                "false",
            ),
        ]
        .join("\n")
            + "\n";
        std::fs::write(t.path().join(REQUESTS_CSV), text).unwrap();
        let set = PastContextSet {
            model: "m".into(),
            prompt_set: "ctx4k".into(),
            longest_prompt_tokens: 3967,
            positions_needed: 3999,
            max_position_embeddings: 2048,
        };
        let meta = json!({ "past_trained_context": [set.clone()] });
        let v = tiers_of(Some(&meta), t.path()).unwrap();
        let tiers = &v.rows[0].tiers;
        assert_eq!(tiers[1].acceptance.slice, "ctx4k");
        assert_eq!(
            (tiers[0].past_trained_context, tiers[1].past_trained_context),
            (0, 1)
        );
        assert_eq!(v.past_trained_context, vec![set]);
    }
}
