//! The one-screen table printed when a sweep ends (from runs.csv, so a
//! resumed run shows every row), and the span-recording overhead when the
//! sweep ran with `spans = ["on", "off"]`.

use super::measure::median;
use crate::run_folder::Table;
use std::collections::HashMap;
use std::fmt::Write;

/// Rows shown at most; the rest are counted.
pub const MAX_ROWS: usize = 30;

/// Throughput with spans over throughput without, per row pair (same key but `.nospans`).
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

/// The table as text.
pub fn render(t: &Table) -> String {
    let get = |r: &[String], c: &str| t.col(c).map_or(String::new(), |i| r[i].clone());
    let mut s = String::new();
    let width = t
        .column("row_key")
        .iter()
        .map(|k| k.len())
        .max()
        .unwrap_or(7)
        .clamp(7, 60);
    let _ = writeln!(
        s,
        "{:<width$} {:>6} {:>7} {:>10} {:>8} {:>8}",
        "row_key", "tau", "accept", "tok/s", "speedup", "lossless"
    );
    for r in t.rows.iter().take(MAX_ROWS) {
        let num = |c: &str, d: usize| {
            get(r, c)
                .parse::<f64>()
                .map_or("-".to_string(), |x| format!("{x:.d$}"))
        };
        let lossless = match get(r, "lossless").as_str() {
            "true" => "yes",
            "false" => "NO",
            _ => "-",
        };
        let speedup = get(r, "speedup")
            .parse::<f64>()
            .map_or("-".to_string(), |x| format!("{x:.2}x"));
        let _ = writeln!(
            s,
            "{:<width$} {:>6} {:>7} {:>10} {:>8} {:>8}",
            get(r, "row_key"),
            num("tau", 2),
            if get(r, "steps") == "0" {
                "-".to_string()
            } else {
                num("accept_rate", 3)
            },
            num("throughput_tok_s", 1),
            speedup,
            lossless
        );
    }
    if t.rows.len() > MAX_ROWS {
        let _ = writeln!(s, "... {} more rows in runs.csv", t.rows.len() - MAX_ROWS);
    }
    let ratios = span_ratios(t);
    if let Some(m) = median(ratios.clone()) {
        let _ = writeln!(
            s,
            "span recording: throughput with spans / without = {m:.4} (median of {} row pairs, range {:.4}..{:.4}): overhead {:+.2}%",
            ratios.len(),
            ratios[0],
            ratios[ratios.len() - 1],
            (1.0 / m - 1.0) * 100.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_pairs_are_matched_by_key() {
        let t = Table {
            header: vec!["row_key".into(), "throughput_tok_s".into()],
            rows: vec![
                vec!["a".into(), "99".into()],
                vec!["a.nospans".into(), "100".into()],
                vec!["b".into(), "50".into()],
            ],
        };
        assert_eq!(span_ratios(&t), vec![0.99]);
        assert!(render(&t).contains("median of 1 row pairs"));
    }
}
