//! The run folder's schema, in one place: its file names, the columns of
//! each CSV file in order, which runs.csv columns hold numbers, which
//! identify a row across runs, and the `flag` rule. Column names are an API
//! (docs/DESIGN.md, Files of a run folder): add at the end, never rename.

use std::collections::BTreeMap;

/// One row per grid point.
pub const RUNS_CSV: &str = "runs.csv";
/// Per-position acceptance of every speculative row.
pub const POSITIONS_CSV: &str = "positions.csv";
/// Per (row, span) latency.
pub const KERNELS_CSV: &str = "kernels.csv";
/// What the run was (spec, machine, status).
pub const META_JSON: &str = "meta.json";
/// The resolved spec, for `--resume`.
pub const SPEC_TOML: &str = "spec.toml";
/// One HdrHistogram interval log per row.
pub const HISTOGRAMS: &str = "histograms";
/// Served grid points that failed, with the reason.
pub const FAILURES_CSV: &str = "failures.csv";

/// The columns of runs.csv, in order: the identity and measures of
/// docs/DESIGN.md first, then this tool's extra columns.
pub const RUNS_COLUMNS: [&str; 39] = [
    "run_id",
    "git_rev",
    "started_at",
    "machine",
    "backend",
    "device",
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
    "output_tokens",
    "verify_steps",
    "wall_s",
    "throughput_tok_s",
    "tau",
    "accept_rate",
    "speedup",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "lossless",
    // this tool's extra columns
    "repeat",
    "seed",
    "max_new_tokens",
    "id_convention",
    "spans",
    "prefill_s",
    "decode_s",
    "row_key",
    "flag",
    "decode_cpu_s",
    "cpu_tok_s",
    "cpu_speedup",
];

/// The runs.csv columns whose cells are numbers (or empty, where a measure
/// does not apply); the reader refuses anything else, naming row and column.
pub const NUMERIC_COLUMNS: [&str; 23] = [
    "steps",
    "topk",
    "num_draft_tokens",
    "temperature",
    "batch_size",
    "prompts",
    "output_tokens",
    "verify_steps",
    "wall_s",
    "throughput_tok_s",
    "tau",
    "accept_rate",
    "speedup",
    "ttft_ms_p50",
    "tpot_ms_p50",
    "repeat",
    "seed",
    "max_new_tokens",
    "prefill_s",
    "decode_s",
    "decode_cpu_s",
    "cpu_tok_s",
    "cpu_speedup",
];

/// The columns of positions.csv.
pub const POSITIONS_COLUMNS: [&str; 4] = ["run_id", "row_key", "position", "acceptance_rate"];

/// The columns of kernels.csv.
pub const KERNELS_COLUMNS: [&str; 10] = [
    "run_id", "row_key", "span", "count", "mean_us", "p50_us", "p90_us", "p99_us", "max_us",
    "share",
];

/// The columns of failures.csv.
pub const FAILURES_COLUMNS: [&str; 4] = ["run_id", "row_key", "backend", "error"];

/// The runs.csv columns that identify a row across runs, in runs.csv order:
/// every identity column except where and when it ran (`run_id`, `git_rev`,
/// `started_at`, `machine`, `device`), plus the extras that shape the
/// numbers (`repeat`, `seed`, `max_new_tokens`, `id_convention`, `spans`).
/// A row's *group* is the same without `repeat` and `seed`: its repeats.
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

/// The measures that, at temperature 0 and fixed seeds, depend only on the
/// models, the config and the prompts, never on the machine or its load: two
/// runs of one build agree on them exactly.
pub const DETERMINISTIC_COLUMNS: [&str; 5] = [
    "output_tokens",
    "verify_steps",
    "tau",
    "accept_rate",
    "lossless",
];

/// The identity columns a row's group leaves out: the repeats of a row differ only in these.
pub const REPEAT_COLUMNS: [&str; 2] = ["repeat", "seed"];

/// A speculative row's tau at or below this means the draft is effectively
/// never accepted: a configuration error (wrong hidden states), not a result.
pub const TAU_CONFIG_ERROR: f64 = 1.05;

/// The `flag` of a row whose tau says "configuration error".
pub const LIKELY_CONFIG_ERROR: &str = "likely_config_error";

/// The `flag` of a row: [`LIKELY_CONFIG_ERROR`] for a speculative row whose
/// tau is at most [`TAU_CONFIG_ERROR`], else empty.
pub fn flag(steps: usize, tau: f64) -> &'static str {
    if steps > 0 && tau <= TAU_CONFIG_ERROR {
        LIKELY_CONFIG_ERROR
    } else {
        ""
    }
}

/// The column lists of the CSV files, as meta.json records them.
pub fn columns() -> BTreeMap<String, Vec<String>> {
    let v = |h: &[&str]| h.iter().map(|s| s.to_string()).collect();
    BTreeMap::from([
        (RUNS_CSV.to_string(), v(&RUNS_COLUMNS)),
        (POSITIONS_CSV.to_string(), v(&POSITIONS_COLUMNS)),
        (KERNELS_CSV.to_string(), v(&KERNELS_COLUMNS)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_and_identity_columns_are_runs_csv_columns_in_its_order() {
        for list in [
            &NUMERIC_COLUMNS[..],
            &IDENTITY[..],
            &REPEAT_COLUMNS[..],
            &DETERMINISTIC_COLUMNS[..],
        ] {
            let at: Vec<usize> = list
                .iter()
                .map(|c| {
                    RUNS_COLUMNS
                        .iter()
                        .position(|r| r == c)
                        .unwrap_or_else(|| panic!("{c} is not a runs.csv column"))
                })
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{list:?} out of order");
        }
        let mut all = RUNS_COLUMNS.to_vec();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), RUNS_COLUMNS.len(), "a column named twice");
    }

    /// The design contract lists runs.csv's columns in a table of numbered
    /// rows (`| 1 | `run_id` | ...`): it says what the code writes.
    #[test]
    fn the_design_contract_lists_the_columns_runs_csv_has() {
        let doc = include_str!("../../../docs/DESIGN.md");
        let section = doc
            .split("### 8.1 runs.csv")
            .nth(1)
            .and_then(|s| s.split("\n### ").next())
            .expect("docs/DESIGN.md has section 8.1 runs.csv");
        let listed: Vec<&str> = section
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                cells.get(1)?.parse::<usize>().ok()?;
                Some(cells.get(2)?.trim_matches('`'))
            })
            .collect();
        assert_eq!(listed, RUNS_COLUMNS);
    }

    #[test]
    fn only_a_speculative_row_near_tau_one_is_flagged() {
        assert_eq!(flag(3, 1.0), LIKELY_CONFIG_ERROR);
        assert_eq!(flag(3, TAU_CONFIG_ERROR), LIKELY_CONFIG_ERROR);
        assert_eq!(flag(3, 1.06), "");
        assert_eq!(flag(0, 1.0), "", "a baseline's tau is 1 by construction");
    }
}
