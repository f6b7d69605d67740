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

/// A runs.csv column: its name, whether its cells are numbers, and the
/// lists it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The header name.
    pub name: &'static str,
    /// Cells are finite numbers, never negative (or empty where the measure
    /// does not apply); the reader refuses anything else, naming the line
    /// and column.
    pub number: bool,
    /// Cells count something: whole numbers.
    pub whole: bool,
    /// It identifies a row across runs ([`IDENTITY`]).
    pub identity: bool,
    /// At temperature 0 and fixed seeds it depends only on the models, the
    /// config and the prompts, never on the machine ([`DETERMINISTIC_COLUMNS`]).
    pub deterministic: bool,
}

impl Column {
    const fn text(name: &'static str) -> Column {
        Column {
            name,
            number: false,
            whole: false,
            identity: false,
            deterministic: false,
        }
    }

    const fn number(name: &'static str) -> Column {
        Column {
            number: true,
            ..Column::text(name)
        }
    }

    const fn count(name: &'static str) -> Column {
        Column {
            whole: true,
            ..Column::number(name)
        }
    }

    const fn identity(self) -> Column {
        Column {
            identity: true,
            ..self
        }
    }

    const fn deterministic(self) -> Column {
        Column {
            deterministic: true,
            ..self
        }
    }
}

/// runs.csv, in column order: the identity and measures of docs/DESIGN.md
/// first, then this tool's extra columns (from `repeat` on).
pub const RUNS: [Column; 41] = [
    Column::text("run_id"),
    Column::text("git_rev"),
    Column::text("started_at"),
    Column::text("machine"),
    Column::text("backend").identity(),
    Column::text("device"),
    Column::text("target").identity(),
    Column::text("draft").identity(),
    Column::text("dtype").identity(),
    Column::text("aux_layers_resolved").identity(),
    Column::count("steps").identity(),
    Column::count("topk").identity(),
    Column::count("num_draft_tokens").identity(),
    Column::number("temperature").identity(),
    Column::count("batch_size").identity(),
    Column::text("prompt_set").identity(),
    Column::count("prompts").identity(),
    Column::count("output_tokens").deterministic(),
    Column::count("verify_steps").deterministic(),
    Column::number("wall_s"),
    Column::number("throughput_tok_s"),
    Column::number("tau").deterministic(),
    Column::number("accept_rate").deterministic(),
    Column::number("speedup"),
    Column::number("ttft_ms_p50"),
    Column::number("tpot_ms_p50"),
    Column::text("lossless").deterministic(),
    Column::count("repeat").identity(),
    Column::count("seed").identity(),
    Column::count("max_new_tokens").identity(),
    Column::text("id_convention").identity(),
    Column::text("spans").identity(),
    Column::number("prefill_s"),
    Column::number("decode_s"),
    Column::text("row_key"),
    Column::text("flag"),
    Column::number("decode_cpu_s"),
    Column::number("cpu_tok_s"),
    Column::number("cpu_speedup"),
    Column::text("method").identity(),
    Column::number("request_rate").identity(),
];

/// Which of a column's lists [`names`] collects.
#[derive(Clone, Copy)]
enum List {
    All,
    Numbers,
    Whole,
    Identity,
    Deterministic,
}

/// The names of the runs.csv columns in `list`, in runs.csv order (`N` must be their count).
const fn names<const N: usize>(list: List) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < RUNS.len() {
        let c = RUNS[i];
        let wanted = match list {
            List::All => true,
            List::Numbers => c.number,
            List::Whole => c.whole,
            List::Identity => c.identity,
            List::Deterministic => c.deterministic,
        };
        if wanted {
            out[n] = c.name;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "the list's length is its column count");
    out
}

/// The header of runs.csv.
pub const RUNS_COLUMNS: [&str; 41] = names(List::All);

/// The runs.csv columns whose cells are numbers (or empty).
pub const NUMERIC_COLUMNS: [&str; 24] = names(List::Numbers);

/// The runs.csv columns that count things: their cells are whole numbers (or empty).
pub const WHOLE_COLUMNS: [&str; 10] = names(List::Whole);

/// The columns of positions.csv.
pub const POSITIONS_COLUMNS: [&str; 4] = ["run_id", "row_key", "position", "acceptance_rate"];

/// The columns of kernels.csv.
pub const KERNELS_COLUMNS: [&str; 10] = [
    "run_id", "row_key", "span", "count", "mean_us", "p50_us", "p90_us", "p99_us", "max_us",
    "share",
];

/// The columns of failures.csv.
pub const FAILURES_COLUMNS: [&str; 4] = ["run_id", "row_key", "backend", "error"];

/// The runs.csv columns that identify a row across runs: every identity
/// column except where and when it ran (`run_id`, `git_rev`, `started_at`,
/// `machine`, `device`), plus the extras that shape the numbers (`repeat`,
/// `seed`, `max_new_tokens`, `id_convention`, `spans`, `method`,
/// `request_rate`). A row's *group* is
/// the same without [`REPEAT_COLUMNS`]: its repeats.
pub const IDENTITY: [&str; 19] = names(List::Identity);

/// The measures two runs of one build agree on exactly (temperature 0,
/// fixed seeds): they depend only on the models, the config and the prompts.
pub const DETERMINISTIC_COLUMNS: [&str; 5] = names(List::Deterministic);

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
    fn the_lists_say_what_identifies_a_row_and_what_is_a_number() {
        let mut all = RUNS_COLUMNS.to_vec();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), RUNS_COLUMNS.len(), "a column named twice");
        for c in [
            "run_id",
            "git_rev",
            "started_at",
            "machine",
            "device",
            "row_key",
        ] {
            assert!(!IDENTITY.contains(&c), "{c} says where or when, not what");
        }
        assert!(REPEAT_COLUMNS.iter().all(|c| IDENTITY.contains(c)));
        assert!(DETERMINISTIC_COLUMNS.iter().all(|c| !IDENTITY.contains(c)));
        for c in ["tau", "cpu_speedup", "steps", "temperature"] {
            assert!(NUMERIC_COLUMNS.contains(&c), "{c}");
        }
        for c in ["lossless", "row_key", "spans", "flag"] {
            assert!(!NUMERIC_COLUMNS.contains(&c), "{c}");
        }
        assert!(WHOLE_COLUMNS.iter().all(|c| NUMERIC_COLUMNS.contains(c)));
        for c in ["steps", "verify_steps", "seed"] {
            assert!(WHOLE_COLUMNS.contains(&c), "{c}");
        }
        for c in ["tau", "temperature", "wall_s"] {
            assert!(!WHOLE_COLUMNS.contains(&c), "{c}");
        }
        assert_eq!(&RUNS_COLUMNS[..2], ["run_id", "git_rev"]);
        assert_eq!(
            RUNS_COLUMNS[RUNS_COLUMNS.len() - 2..],
            ["method", "request_rate"],
            "added last"
        );
        for c in ["method", "request_rate"] {
            assert!(
                IDENTITY.contains(&c),
                "{c}: rows differing in it are different points"
            );
        }
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
