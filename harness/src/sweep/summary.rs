//! The one-screen table printed when a sweep ends (from runs.csv, so a
//! resumed run shows every row; the numbers are summary.json's, see
//! [`crate::run_folder::summary`]): both speedups, rows whose wall-clock and
//! CPU speedups say the machine was contended marked, and the
//! span-recording overhead when the sweep ran with `spans = ["on", "off"]`.

use crate::run_folder::summary::{Summary, CONTENTION_RATIO};
use std::fmt::Write;

/// Rows shown at most; the rest are counted.
pub const MAX_ROWS: usize = 30;

fn fixed(x: Option<f64>, digits: usize, suffix: &str) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.digits$}{suffix}"))
}

/// The table as text.
pub fn render(summary: &Summary) -> String {
    let mut s = String::new();
    let width = summary
        .rows
        .iter()
        .map(|r| r.row_key.len())
        .max()
        .unwrap_or(7)
        .clamp(7, 60);
    let _ = writeln!(
        s,
        "{:<width$} {:>6} {:>7} {:>10} {:>8} {:>11} {:>8}",
        "row_key", "tau", "accept", "tok/s", "speedup", "cpu_speedup", "lossless"
    );
    for r in summary.rows.iter().take(MAX_ROWS) {
        let lossless = match r.lossless {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let _ = writeln!(
            s,
            "{:<width$} {:>6} {:>7} {:>10} {:>8} {:>11} {:>8}{}",
            r.row_key,
            fixed(r.tau, 2, ""),
            fixed(r.accept_rate, 3, ""),
            fixed(r.throughput_tok_s, 1, ""),
            fixed(r.speedup, 2, "x"),
            fixed(r.cpu_speedup, 2, "x"),
            lossless,
            if r.contended { "  contended" } else { "" }
        );
    }
    if summary.rows.len() > MAX_ROWS {
        let _ = writeln!(
            s,
            "... {} more rows in runs.csv",
            summary.rows.len() - MAX_ROWS
        );
    }
    if summary.contended_rows > 0 {
        let _ = writeln!(
            s,
            "contended: in {} rows speedup (wall clock) and cpu_speedup (CPU time) differ by more than {:.0}%: the row and its same-run baseline got different shares of the CPU, so other jobs were running; read cpu_speedup, or rerun on a quiet machine",
            summary.contended_rows,
            100.0 * (CONTENTION_RATIO - 1.0)
        );
    }
    if let Some(sr) = summary.span_recording {
        let _ = writeln!(
            s,
            "span recording: throughput with spans / without = {:.4} (median of {} row pairs, range {:.4}..{:.4}): overhead {:+.2}%",
            sr.median_ratio,
            sr.pairs,
            sr.min_ratio,
            sr.max_ratio,
            (1.0 / sr.median_ratio - 1.0) * 100.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_folder::Table;

    fn table(rows: &[&[&str]]) -> Table {
        let header = [
            "row_key",
            "steps",
            "tau",
            "throughput_tok_s",
            "speedup",
            "cpu_speedup",
        ];
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|s| s.to_string()).collect())
                .collect(),
        }
    }

    #[test]
    fn span_pairs_are_reported() {
        let t = table(&[
            &["a", "0", "1", "99", "1", "1"],
            &["a.nospans", "0", "1", "100", "1", "1"],
        ]);
        assert!(render(&Summary::of(&t)).contains("median of 1 row pairs"));
    }

    /// Regression: the summary showed a wall-clock speedup of 2.19x on a row
    /// whose cpu_speedup was 1.06 (a loaded machine), and only that one.
    #[test]
    fn the_summary_shows_both_speedups_and_marks_a_contended_row() {
        let t = table(&[
            &["m.base", "0", "1", "500", "1", "1"],
            &["m.s3", "3", "2.5", "1095", "2.19", "1.06"],
            &["m.s5", "5", "2.7", "600", "1.2", "1.18"],
        ]);
        let text = render(&Summary::of(&t));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("speedup") && lines[0].contains("cpu_speedup"));
        assert!(lines[2].contains("2.19x") && lines[2].contains("1.06x"));
        assert!(lines[2].ends_with("contended"), "{text}");
        assert!(!lines[3].contains("contended"));
        assert!(text.contains("contended: in 1 rows"), "{text}");
    }
}
