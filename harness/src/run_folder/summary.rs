//! `summary.json`: a run's rows as numbers, for scripts (docs/DESIGN.md,
//! summary.json). `specula sweep` writes it beside runs.csv when it stops,
//! `specula report` beside its pages; the table a sweep prints is made from
//! the same [`Summary`].
//!
//! Each row carries both speedups, the wall-clock one and the CPU-time one,
//! and whether they disagree so much that the machine was contended: their
//! ratio is the row's CPU seconds per wall second over its baseline's, which
//! other jobs on the same cores change (a loaded machine once showed a wall
//! speedup of 2.19x on a row whose cpu_speedup was 1.06).

use super::schema::LIKELY_CONFIG_ERROR;
use super::{Run, RunFolderError, Table};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file name.
pub const SUMMARY_JSON: &str = "summary.json";

/// A row is contended when `speedup / cpu_speedup` is above this or below
/// its inverse: the row and its baseline got shares of the CPU that differ
/// by more than 25%.
pub const CONTENTION_RATIO: f64 = 1.25;

/// `speedup / cpu_speedup` and whether it says the machine was contended
/// (`None`, not contended, when either is missing or not positive).
pub fn contention(speedup: Option<f64>, cpu_speedup: Option<f64>) -> (Option<f64>, bool) {
    let ratio = speedup
        .zip(cpu_speedup)
        .filter(|(w, c)| *w > 0.0 && *c > 0.0)
        .map(|(w, c)| w / c);
    let contended =
        ratio.is_some_and(|r| !(1.0 / CONTENTION_RATIO..=CONTENTION_RATIO).contains(&r));
    (ratio, contended)
}

/// One runs.csv row, its numbers as numbers (`null` where the cell is empty).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    /// The row key.
    pub row_key: String,
    /// The draft folder as the spec names it (`null` when the cell is empty).
    pub draft: Option<String>,
    /// Draft forwards per step (0: baseline).
    pub steps: Option<u64>,
    /// Children kept per expanded node.
    pub topk: Option<u64>,
    /// Tokens verified per step, root included.
    pub num_draft_tokens: Option<u64>,
    /// Sequences decoded together.
    pub batch_size: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The repeat index.
    pub repeat: Option<u64>,
    /// Tokens per verify step.
    pub tau: Option<f64>,
    /// Accepted drafts over drafts offered (`null` for a baseline).
    pub accept_rate: Option<f64>,
    /// Decode tokens per decode second.
    pub throughput_tok_s: Option<f64>,
    /// Wall-clock throughput over the same-run baseline's.
    pub speedup: Option<f64>,
    /// Decode tokens per CPU second.
    pub cpu_tok_s: Option<f64>,
    /// CPU-time throughput over the same-run baseline's.
    pub cpu_speedup: Option<f64>,
    /// `speedup / cpu_speedup`: the row's CPU seconds per wall second over its baseline's.
    pub wall_over_cpu: Option<f64>,
    /// Whether `wall_over_cpu` lies beyond [`CONTENTION_RATIO`] either way:
    /// other jobs took the cores while the row or its baseline ran, so read
    /// `cpu_speedup` rather than `speedup`.
    pub contended: bool,
    /// Greedy output equal to the baseline's (`null` when not checked).
    pub lossless: Option<bool>,
    /// Flagged `likely_config_error` (tau about 1: a configuration error, not a result).
    pub likely_config_error: bool,
}

/// Throughput with span recording over throughput without, over the row
/// pairs a sweep with `spans = ["on", "off"]` ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpanRecording {
    /// Row pairs (a row and its `.nospans` twin).
    pub pairs: usize,
    /// The median ratio.
    pub median_ratio: f64,
    /// The smallest ratio.
    pub min_ratio: f64,
    /// The largest ratio.
    pub max_ratio: f64,
}

/// The contents of summary.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The run id of the first row (`null` for a run without rows).
    pub run_id: Option<String>,
    /// The threshold of `contended` ([`CONTENTION_RATIO`]).
    pub contention_ratio: f64,
    /// Rows flagged `contended`.
    pub contended_rows: usize,
    /// Every row, in runs.csv order.
    pub rows: Vec<SummaryRow>,
    /// The cost of recording spans, when the run measured it.
    pub span_recording: Option<SpanRecording>,
    /// Served runs: per row, `vllm bench serve` and bench_serving figures
    /// from requests.csv ([`super::serving`]); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub serving: Vec<super::serving::ServingPoint>,
}

/// Throughput with spans over throughput without, per row pair (same key but `.nospans`), sorted.
pub fn span_ratios(t: &Table) -> Vec<f64> {
    let (Some(k), Some(tp)) = (t.col("row_key"), t.col("throughput_tok_s")) else {
        return Vec::new();
    };
    let by_key: HashMap<&str, f64> = t
        .rows
        .iter()
        .map(|r| (r[k].as_str(), r[tp].parse().unwrap_or(0.0)))
        .collect();
    let mut out = Vec::new();
    for (key, &on) in &by_key {
        if let Some(&off) = by_key.get(format!("{key}.nospans").as_str()) {
            if off > 0.0 {
                out.push(on / off);
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

fn span_recording(t: &Table) -> Option<SpanRecording> {
    let r = span_ratios(t);
    let n = r.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => r[n / 2],
        _ => (r[n / 2 - 1] + r[n / 2]) / 2.0,
    };
    Some(SpanRecording {
        pairs: n,
        median_ratio: median,
        min_ratio: r[0],
        max_ratio: r[n - 1],
    })
}

impl Summary {
    /// The summary of a runs.csv table (read with [`Table::read`]).
    pub fn of(t: &Table) -> Summary {
        let rows: Vec<SummaryRow> = t
            .rows
            .iter()
            .map(|r| {
                let text = |c: &str| t.col(c).map_or("", |i| r[i].as_str());
                let num = |c: &str| text(c).parse::<f64>().ok();
                let int = |c: &str| text(c).parse::<u64>().ok();
                let steps = int("steps");
                let (speedup, cpu_speedup) = (num("speedup"), num("cpu_speedup"));
                let (wall_over_cpu, contended) = contention(speedup, cpu_speedup);
                SummaryRow {
                    row_key: text("row_key").to_string(),
                    draft: Some(text("draft").to_string()).filter(|d| !d.is_empty()),
                    steps,
                    topk: int("topk"),
                    num_draft_tokens: int("num_draft_tokens"),
                    batch_size: int("batch_size"),
                    temperature: num("temperature"),
                    repeat: int("repeat"),
                    tau: num("tau"),
                    accept_rate: num("accept_rate").filter(|_| steps != Some(0)),
                    throughput_tok_s: num("throughput_tok_s"),
                    speedup,
                    cpu_tok_s: num("cpu_tok_s"),
                    cpu_speedup,
                    wall_over_cpu,
                    contended,
                    lossless: match text("lossless") {
                        "true" => Some(true),
                        "false" => Some(false),
                        _ => None,
                    },
                    likely_config_error: text("flag") == LIKELY_CONFIG_ERROR,
                }
            })
            .collect();
        Summary {
            run_id: t
                .col("run_id")
                .and_then(|i| t.rows.first().map(|r| r[i].clone())),
            contention_ratio: CONTENTION_RATIO,
            contended_rows: rows.iter().filter(|r| r.contended).count(),
            rows,
            span_recording: span_recording(t),
            serving: Vec::new(),
        }
    }

    /// With the serving figures of the served rows of `dir`'s requests.csv
    /// (the goodput SLO from its meta.json's `spec.load.goodput`).
    pub fn with_serving(mut self, dir: &Path) -> Summary {
        let Ok(t) = Table::read(&dir.join(super::requests_csv::REQUESTS_CSV)) else {
            return self;
        };
        let slo = std::fs::read_to_string(dir.join(super::schema::META_JSON))
            .ok()
            .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
            .and_then(|m| m.pointer("/spec/load/goodput").cloned())
            .map(|g| {
                let b = |k: &str| g.get(k).and_then(serde_json::Value::as_f64);
                (b("ttft_ms"), b("tpot_ms"), b("e2el_ms"))
            });
        let served = |b: &str| b == "sglang" || b == "vllm";
        self.serving = super::serving::serving_points(&t, slo)
            .into_iter()
            .filter(|p| served(&p.backend))
            .collect();
        self
    }

    /// The summary of a run read with [`Run::read`].
    pub fn of_run(run: &Run) -> Summary {
        Summary::of(&Table {
            header: run.header.clone(),
            rows: run.rows.iter().map(|r| r.cells().to_vec()).collect(),
        })
    }

    /// Writes `dir/summary.json` (atomically: a temporary file, then a rename).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, RunFolderError> {
        let path = dir.join(SUMMARY_JSON);
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("a summary is serialisable");
        std::fs::write(&tmp, text + "\n").map_err(|e| RunFolderError::write(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| RunFolderError::write(&path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(header: &[&str], rows: &[&[&str]]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|s| s.to_string()).collect())
                .collect(),
        }
    }

    #[test]
    fn span_pairs_are_matched_by_key() {
        let t = table(
            &["row_key", "throughput_tok_s"],
            &[&["a", "99"], &["a.nospans", "100"], &["b", "50"]],
        );
        assert_eq!(span_ratios(&t), vec![0.99]);
        let s = Summary::of(&t).span_recording.unwrap();
        assert_eq!((s.pairs, s.median_ratio), (1, 0.99));
    }

    /// Regression: a loaded machine showed a wall speedup of 2.19x on a row
    /// whose cpu_speedup was 1.06, and nothing said so.
    #[test]
    fn a_wall_speedup_of_2_19_beside_a_cpu_speedup_of_1_06_is_contended() {
        let (ratio, contended) = contention(Some(2.19), Some(1.06));
        assert!(contended && (ratio.unwrap() - 2.066).abs() < 1e-3);
        assert!(
            contention(Some(0.5), Some(0.7)).1,
            "a slowed row is contended too"
        );
        assert!(!contention(Some(0.88), Some(0.8804)).1);
        assert_eq!(contention(Some(1.2), None), (None, false));
    }

    #[test]
    fn cells_become_numbers_and_empty_cells_null() {
        let t = table(
            &[
                "run_id",
                "row_key",
                "steps",
                "tau",
                "accept_rate",
                "speedup",
                "cpu_speedup",
                "lossless",
                "flag",
            ],
            &[
                &[
                    "r", "m.base", "0", "1.0000", "0.0000", "1.0000", "1.0000", "true", "",
                ],
                &["r", "m.s3", "3", "2.5000", "0.5000", "2.19", "1.06", "", ""],
            ],
        );
        let s = Summary::of(&t);
        assert_eq!(s.run_id.as_deref(), Some("r"));
        assert_eq!(s.rows[0].accept_rate, None, "a baseline has no accept rate");
        assert_eq!(s.rows[0].lossless, Some(true));
        assert_eq!((s.rows[1].steps, s.rows[1].tau), (Some(3), Some(2.5)));
        assert_eq!(s.rows[1].lossless, None);
        assert_eq!(s.contended_rows, 1);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["rows"][1]["speedup"], 2.19);
        assert!(json["rows"][1]["draft"].is_null());
    }
}
