//! The report's text: an overview, the results table (flagged rows set
//! apart as likely configuration errors), and the acceptance analysis.

use super::data::RowView;
use crate::analyze::slices::AcceptanceSlice;
use crate::analyze::RowAnalysis;
use crate::doc::{Block, Document, Table};
use crate::run_folder::environment::switches_line;
use crate::run_folder::Run;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// Where and when the run ran.
pub fn overview(doc: &mut Document, run: &Run, rows: &[RowView]) {
    let r = &run.rows[0];
    let meta = |k: &str| {
        run.meta
            .as_ref()
            .and_then(|m| m.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or("-")
            .to_string()
    };
    // The engine switches the run was started with, when it recorded any.
    let switches = run
        .meta
        .as_ref()
        .and_then(|m| m.get("engine_switches"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .and_then(|m| switches_line(&m));
    let mut items = vec![
        format!("run folder: {}", run.dir.display()),
        format!("run id: {}, status: {}", r.text("run_id"), meta("status")),
        format!("git revision: {}", r.text("git_rev")),
        format!(
            "machine: {} ({}, backend {})",
            r.text("machine"),
            r.text("device"),
            r.text("backend")
        ),
        format!("started: {}", r.text("started_at")),
        format!(
            "rows: {} ({} speculative, {} flagged as likely configuration errors)",
            rows.len(),
            rows.iter().filter(|r| r.steps > 0).count(),
            rows.iter().filter(|r| r.flagged).count()
        ),
    ];
    items.extend(switches);
    doc.push(Block::List(items));
}

/// The results table, and the flagged rows apart.
pub fn results(doc: &mut Document, rows: &[RowView]) {
    doc.heading(2, "Results");
    let mut t = Table::new(&[
        "row",
        "tau",
        "accept rate",
        "tokens/s",
        "speedup",
        "cpu speedup",
        "lossless",
    ]);
    for r in rows.iter().filter(|r| !r.flagged) {
        t.push(vec![
            r.key.clone(),
            format!("{:.2}", r.tau),
            if r.steps > 0 {
                format!("{:.3}", r.accept_rate)
            } else {
                "-".into()
            },
            format!("{:.1}", r.throughput),
            opt(r.speedup, 2),
            opt(r.cpu_speedup, 2),
            if r.lossless.is_empty() {
                "-".into()
            } else {
                r.lossless.clone()
            },
        ]);
    }
    doc.push(Block::Table(t));
    let flagged: Vec<&RowView> = rows.iter().filter(|r| r.flagged).collect();
    if !flagged.is_empty() {
        doc.heading(2, "Likely configuration errors (not results)");
        doc.para("These rows have tau of about 1.00: the draft is almost never accepted, which means it is fed other hidden states than it was trained on (or none). They are configuration errors, not measurements of the draft; run `specula audit --target T --draft D` to find the capture mapping that fixes them.");
        let mut t = Table::new(&["row", "tau", "status"]);
        for r in flagged {
            t.push(vec![
                r.key.clone(),
                format!("{:.2}", r.tau),
                "likely configuration error".into(),
            ]);
        }
        doc.push(Block::Table(t));
    }
}

/// The acceptance analysis (`specula analyze`): expected vs measured tau,
/// break-even tau, verdicts, live vs trained acceptance per depth.
pub fn analysis(doc: &mut Document, rows: &[RowAnalysis]) {
    doc.heading(2, "Acceptance analysis");
    if rows.is_empty() {
        doc.para("No speculative rows.");
        return;
    }
    doc.para("Measured tau beside 1 + the sum of per-position acceptance a_k; the break-even tau = (draft + verify + overhead per step) / baseline step, from this run's spans; below it speculation is a net loss.");
    let mut t = Table::new(&[
        "row",
        "tau",
        "1 + sum a_k",
        "break-even tau",
        "speedup",
        "verdict",
    ]);
    for r in rows {
        t.push(vec![
            r.row_key.clone(),
            format!("{:.2}", r.tau),
            format!("{:.2}", r.expected_tau),
            opt(r.break_even_tau, 2),
            opt(r.speedup, 2),
            r.verdict.clone(),
        ]);
    }
    doc.push(Block::Table(t));
    slices(doc, rows);
    let depth = rows.iter().map(|r| r.conditional.len()).max().unwrap_or(0);
    if depth == 0 {
        return;
    }
    doc.heading(
        3,
        "Live acceptance per depth (given the previous depth) vs the draft's training accuracy",
    );
    let mut header = vec!["row".to_string()];
    header.extend((1..=depth).map(|k| format!("depth {k}")));
    let mut t = Table {
        header,
        rows: Vec::new(),
    };
    for r in rows {
        let mut cells = vec![r.row_key.clone()];
        for k in 0..depth {
            cells.push(match r.conditional.get(k) {
                None => String::new(),
                Some(c) => {
                    let trained = r
                        .trained_accuracy
                        .as_ref()
                        .and_then(|t| t.get(k))
                        .map_or(String::new(), |t| format!(" (trained {:.0}%)", t * 100.0));
                    format!("{:.0}%{trained}", c * 100.0)
                }
            });
        }
        t.push(cells);
    }
    doc.push(Block::Table(t));
}

/// Acceptance by prompt category and by context length, for the rows whose
/// requests fall in more than one of either.
fn slices(doc: &mut Document, rows: &[RowAnalysis]) {
    let split: Vec<(&RowAnalysis, &str, &AcceptanceSlice)> = rows
        .iter()
        .flat_map(|r| {
            [
                ("category", &r.slices.by_category),
                ("context", &r.slices.by_context),
            ]
            .into_iter()
            .filter(|(_, s)| s.len() > 1)
            .flat_map(move |(by, s)| s.iter().map(move |x| (r, by, x)))
        })
        .collect();
    if split.is_empty() {
        return;
    }
    doc.heading(3, "Acceptance by prompt category and by context length");
    doc.para(
        "From requests.csv: tau and a_k over each slice's requests (context = prompt tokens).",
    );
    let mut t = Table::new(&[
        "row",
        "by",
        "slice",
        "requests",
        "prompt tokens",
        "tau",
        "a_1",
        "a_2",
        "a_3",
    ]);
    for (r, by, s) in split {
        let a = |k: usize| {
            s.per_position
                .get(k)
                .map_or("-".into(), |a| format!("{:.0}%", a * 100.0))
        };
        t.push(vec![
            r.row_key.clone(),
            by.into(),
            s.slice.clone(),
            s.requests.to_string(),
            opt(s.prompt_tokens_mean, 0),
            opt(s.tau, 2),
            a(0),
            a(1),
            a(2),
        ]);
    }
    doc.push(Block::Table(t));
}
