//! `costs.csv` of a run folder: instruction counts per row group and
//! measure, from a cost probe's segments ([`super::dumps`]) and its
//! runs.csv (for the tokens).
//!
//! Measures: `prefill` (per prefill forward), `draft` (per draft forward),
//! `verify` (per target forward over the root and the draft tree: a
//! `num_draft_tokens`-token tree plus its root; the baseline's decode
//! forward), `step` (per decode step: everything from the end of one step
//! to the end of the next), `token` (decode instructions per decode token).

use super::dumps::Segment;
use super::CostError;
use crate::run_folder::{group_label, Run};
use std::collections::BTreeMap;
use std::path::Path;

/// The file's name in a run folder.
pub const COSTS_CSV: &str = "costs.csv";

/// The header of costs.csv.
pub const COLUMNS: [&str; 5] = ["row", "measure", "calls", "instructions", "per_call"];

/// The measures, in the file's order.
pub const MEASURES: [&str; 6] = [
    "prefill",
    "draft_prefill",
    "draft",
    "verify",
    "step",
    "token",
];

/// One line of costs.csv.
#[derive(Debug, Clone, PartialEq)]
pub struct CostRow {
    /// The row group (row key without the repeat).
    pub row: String,
    /// One of [`MEASURES`].
    pub measure: String,
    /// Calls counted (tokens for `token`).
    pub calls: u64,
    /// Instructions over all of them.
    pub instructions: u64,
    /// Instructions per call (per token for `token`).
    pub per_call: f64,
}

/// Aggregates a probe's `segments`; `probe` is its run folder (tokens per row).
pub fn aggregate(segments: &[Segment], probe: &Run) -> Result<Vec<CostRow>, CostError> {
    let mut out = Vec::new();
    for r in &probe.rows {
        let key = r.key();
        let mine: Vec<&Segment> = segments.iter().filter(|s| s.row == key).collect();
        if mine.is_empty() {
            return Err(CostError::Probe(format!(
                "row `{key}` was not counted (no callgrind dump names it)"
            )));
        }
        let tokens = match (r.num("output_tokens"), r.num("prompts")) {
            (Some(o), Some(p)) if o > p => (o - p) as u64,
            _ => 0,
        };
        let mut steps: BTreeMap<(usize, usize), u64> = BTreeMap::new();
        let mut sums: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for s in &mine {
            if s.step > 0 && s.kind != "tail" {
                *steps.entry((s.call, s.step)).or_default() += s.instructions;
            }
            if matches!(
                s.kind.as_str(),
                "prefill" | "draft_prefill" | "draft" | "verify"
            ) {
                let e = sums.entry(s.kind.as_str()).or_default();
                e.0 += 1;
                e.1 += s.instructions;
            }
        }
        let decode: u64 = steps.values().sum();
        sums.insert("step", (steps.len() as u64, decode));
        sums.insert("token", (tokens, decode));
        let label = group_label(r);
        for m in MEASURES {
            if let Some(&(calls, instructions)) = sums.get(m).filter(|(c, _)| *c > 0) {
                out.push(CostRow {
                    row: label.clone(),
                    measure: m.to_string(),
                    calls,
                    instructions,
                    per_call: instructions as f64 / calls as f64,
                });
            }
        }
    }
    Ok(out)
}

/// Writes `rows` to `path`.
pub fn write(path: &Path, rows: &[CostRow]) -> Result<(), CostError> {
    let mut text = COLUMNS.join(",") + "\n";
    for r in rows {
        text += &format!(
            "{},{},{},{},{:.1}\n",
            r.row, r.measure, r.calls, r.instructions, r.per_call
        );
    }
    std::fs::write(path, text).map_err(|e| CostError::io(path, e))
}

/// Reads costs.csv at `path`; every problem names the file and the line.
pub fn read(path: &Path) -> Result<Vec<CostRow>, CostError> {
    let text = std::fs::read_to_string(path).map_err(|e| CostError::io(path, e))?;
    let bad = |line: usize, what: String| {
        CostError::Input(format!("{}: line {line}: {what}", path.display()))
    };
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some(COLUMNS.join(",").as_str()) {
        return Err(bad(1, format!("expected the header {}", COLUMNS.join(","))));
    }
    let mut out = Vec::new();
    for (i, l) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let cells: Vec<&str> = l.split(',').collect();
        let [row, measure, calls, instructions, per_call] = cells[..] else {
            return Err(bad(i + 2, format!("{} cells, expected 5", cells.len())));
        };
        let int = |s: &str, col: &str| {
            s.parse::<u64>()
                .map_err(|_| bad(i + 2, format!("`{col}` = {s:?} is not a count")))
        };
        let per_call = per_call
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| bad(i + 2, format!("`per_call` = {per_call:?} is not a count")))?;
        out.push(CostRow {
            row: row.to_string(),
            measure: measure.to_string(),
            calls: int(calls, "calls")?,
            instructions: int(instructions, "instructions")?,
            per_call,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_csv_round_trips_and_bad_cells_name_the_line() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(COSTS_CSV);
        let rows = vec![CostRow {
            row: "m.s3k2n5.b1.builtin.t0".into(),
            measure: "verify".into(),
            calls: 5,
            instructions: 1000,
            per_call: 200.0,
        }];
        write(&p, &rows).unwrap();
        assert_eq!(read(&p).unwrap(), rows);
        std::fs::write(&p, COLUMNS.join(",") + "\nr,verify,x,1,1\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("`calls`"), "{e}");
    }
}
