//! Acceptance of a row's requests split by prompt category and by context
//! length (prompt tokens), from requests.csv (docs/DESIGN.md 8.8): where a
//! draft that looks fine on average collapses (code prompts, prompts past a
//! few thousand tokens).

use crate::run_folder::requests_csv::REQUESTS_CSV;
use crate::run_folder::{RunFolderError, Table};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Context-length buckets by prompt tokens: `[lower, upper)` and a name.
const CONTEXT_BUCKETS: [(usize, usize, &str); 5] = [
    (0, 512, "<512"),
    (512, 2048, "512-2k"),
    (2048, 8192, "2k-8k"),
    (8192, 32768, "8k-32k"),
    (32768, usize::MAX, "32k+"),
];

/// The context bucket a prompt of `tokens` falls in.
pub fn context_bucket(tokens: usize) -> &'static str {
    CONTEXT_BUCKETS
        .iter()
        .find(|(lo, hi, _)| (*lo..*hi).contains(&tokens))
        .map_or("32k+", |b| b.2)
}

/// The requests of one row that share a category or a context bucket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AcceptanceSlice {
    /// The category, or the context bucket (`<512`, `512-2k`, ...).
    pub slice: String,
    /// Requests in the slice.
    pub requests: usize,
    /// Mean prompt tokens of its requests (those that report them).
    pub prompt_tokens_mean: Option<f64>,
    /// Verify steps summed over its requests.
    pub verify_steps: u64,
    /// (output tokens - requests) / verify steps: 7.1's tau over the slice.
    pub tau: Option<f64>,
    /// a_k: verify steps that reached depth k / verify steps.
    pub per_position: Vec<f64>,
}

/// A row's slices, by category and by context length.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RowSlices {
    /// By the prompt's category.
    pub by_category: Vec<AcceptanceSlice>,
    /// By the prompt's length in tokens.
    pub by_context: Vec<AcceptanceSlice>,
}

/// Running sums of a slice's requests.
#[derive(Default)]
pub(super) struct Sums {
    requests: usize,
    prompt_tokens: (f64, usize),
    output_tokens: u64,
    verify_steps: u64,
    reached: Vec<u64>,
}

impl Sums {
    pub(super) fn add(
        &mut self,
        prompt_tokens: Option<usize>,
        output: u64,
        verify: u64,
        reached: &[u64],
    ) {
        self.requests += 1;
        if let Some(p) = prompt_tokens {
            self.prompt_tokens.0 += p as f64;
            self.prompt_tokens.1 += 1;
        }
        self.output_tokens += output;
        self.verify_steps += verify;
        if self.reached.len() < reached.len() {
            self.reached.resize(reached.len(), 0);
        }
        for (s, r) in self.reached.iter_mut().zip(reached) {
            *s += r;
        }
    }

    pub(super) fn slice(self, name: &str) -> AcceptanceSlice {
        let v = self.verify_steps as f64;
        let decode = self.output_tokens.saturating_sub(self.requests as u64) as f64;
        AcceptanceSlice {
            slice: name.to_string(),
            requests: self.requests,
            prompt_tokens_mean: (self.prompt_tokens.1 > 0)
                .then(|| self.prompt_tokens.0 / self.prompt_tokens.1 as f64),
            verify_steps: self.verify_steps,
            tau: (v > 0.0).then(|| decode / v),
            per_position: self
                .reached
                .iter()
                .map(|&r| if v > 0.0 { r as f64 / v } else { 0.0 })
                .collect(),
        }
    }
}

/// The slices of every speculative row of the run in `dir` (row key ->
/// slices), from its requests.csv; empty when the run has none (runs
/// written before requests.csv existed). Requests without verify steps or
/// per-position counts (served baselines, servers that do not report them)
/// are left out.
pub fn row_slices(dir: &Path) -> Result<BTreeMap<String, RowSlices>, RunFolderError> {
    let path = dir.join(REQUESTS_CSV);
    if !path.is_file() {
        return Ok(BTreeMap::new());
    }
    let t = Table::read(&path)?;
    let col = |name: &str| t.require(name, &path);
    let (key, category, prompt, output, verify, reached) = (
        col("row_key")?,
        col("category")?,
        col("prompt_tokens")?,
        col("output_tokens")?,
        col("verify_steps")?,
        col("reached_per_position")?,
    );
    type Split = (BTreeMap<String, Sums>, BTreeMap<&'static str, Sums>);
    let mut rows: BTreeMap<String, Split> = BTreeMap::new();
    for (i, r) in t.rows.iter().enumerate() {
        let bad = |c: &str| {
            RunFolderError::malformed(
                &path,
                format!(
                    "line {}: column `{c}` holds {:?}",
                    i + 2,
                    r[t.col(c).unwrap_or(0)]
                ),
            )
        };
        let (Ok(verify_steps), false) = (r[verify].parse::<u64>(), r[reached].is_empty()) else {
            continue;
        };
        let out: u64 = r[output].parse().map_err(|_| bad("output_tokens"))?;
        let depth: Vec<u64> = r[reached]
            .split(';')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| bad("reached_per_position"))?;
        let tokens: Option<usize> = r[prompt].parse().ok();
        let (cats, ctx) = rows.entry(r[key].clone()).or_default();
        let cat = if r[category].is_empty() {
            "-"
        } else {
            r[category].as_str()
        };
        cats.entry(cat.to_string())
            .or_default()
            .add(tokens, out, verify_steps, &depth);
        if let Some(n) = tokens {
            ctx.entry(context_bucket(n))
                .or_default()
                .add(tokens, out, verify_steps, &depth);
        }
    }
    Ok(rows
        .into_iter()
        .map(|(k, (cats, ctx))| {
            let by_category = cats.into_iter().map(|(c, s)| s.slice(&c)).collect();
            let order = |b: &str| CONTEXT_BUCKETS.iter().position(|x| x.2 == b);
            let mut by_context: Vec<(&str, Sums)> = ctx.into_iter().collect();
            by_context.sort_by_key(|(b, _)| order(b));
            let by_context = by_context.into_iter().map(|(b, s)| s.slice(b)).collect();
            (
                k,
                RowSlices {
                    by_category,
                    by_context,
                },
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_folder::requests_csv::REQUESTS_COLUMNS;

    #[test]
    fn slices_sum_their_requests_as_the_row_does() {
        let t = tempfile::tempdir().unwrap();
        let line = |cat: &str, prompt: &str, out: &str, verify: &str, reached: &str| {
            REQUESTS_COLUMNS
                .iter()
                .map(|c| match *c {
                    "row_key" => "r",
                    "category" => cat,
                    "prompt_tokens" => prompt,
                    "output_tokens" => out,
                    "verify_steps" => verify,
                    "reached_per_position" => reached,
                    _ => "",
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let text = [
            REQUESTS_COLUMNS.join(","),
            line("math", "100", "11", "4", "4;2"),
            line("math", "3000", "9", "4", "2;0"),
            line("code", "3000", "5", "4", "0;0"),
            line("code", "3000", "5", "", ""),
        ]
        .join("\n")
            + "\n";
        std::fs::write(t.path().join(REQUESTS_CSV), text).unwrap();
        let s = &row_slices(t.path()).unwrap()["r"];
        let math = s.by_category.iter().find(|c| c.slice == "math").unwrap();
        assert_eq!(math.requests, 2);
        assert_eq!(math.tau, Some((10.0 + 8.0) / 8.0));
        assert_eq!(math.per_position, [6.0 / 8.0, 2.0 / 8.0]);
        let code = s.by_category.iter().find(|c| c.slice == "code").unwrap();
        assert_eq!(
            (code.requests, code.tau),
            (1, Some(1.0)),
            "a request without verify steps is left out"
        );
        let names: Vec<&str> = s.by_context.iter().map(|c| c.slice.as_str()).collect();
        assert_eq!(names, ["<512", "2k-8k"]);
        assert_eq!(s.by_context[1].prompt_tokens_mean, Some(3000.0));
        assert_eq!(s.by_context[1].tau, Some((8.0 + 4.0) / 8.0));
    }

    #[test]
    fn buckets_cover_every_length() {
        assert_eq!(context_bucket(0), "<512");
        assert_eq!(context_bucket(2047), "512-2k");
        assert_eq!(context_bucket(2048), "2k-8k");
        assert_eq!(context_bucket(1 << 20), "32k+");
    }
}
