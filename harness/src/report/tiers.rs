//! The report's cross-row "acceptance by context tier" table
//! ([`crate::analyze::context_tiers`]): per setting, each prompt set's
//! requests, mean prompt tokens, tau and a_1..a_3, shortest first, and the
//! prompt sets skipped for not fitting the model's context, with the reason;
//! a tier run past the trained context (`allow_past_context`) says so in
//! its `context` cell.

use crate::analyze::context_tiers::ContextTiers;
use crate::doc::{Block, Document, Table};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// Adds the section when the run has tiers or skipped them.
pub fn context_tiers(doc: &mut Document, view: &ContextTiers) {
    if view.rows.is_empty() && view.skipped.is_empty() {
        return;
    }
    doc.heading(3, "Acceptance by context tier");
    doc.para("Across rows: each prompt set's requests (requests.csv), ordered by mean prompt tokens; tau and a_k summed over the set's requests.");
    let mut t = Table::new(&[
        "setting",
        "prompt set",
        "requests",
        "prompt tokens",
        "tau",
        "a_1",
        "a_2",
        "a_3",
        "context",
    ]);
    for r in &view.rows {
        for tier in &r.tiers {
            let s = &tier.acceptance;
            let a = |k: usize| {
                s.per_position
                    .get(k)
                    .map_or("-".into(), |a| format!("{:.0}%", a * 100.0))
            };
            t.push(vec![
                r.setting.clone(),
                s.slice.clone(),
                s.requests.to_string(),
                opt(s.prompt_tokens_mean, 0),
                opt(s.tau, 2),
                a(0),
                a(1),
                a(2),
                match view.past_note(&r.setting, tier) {
                    n if !n.is_empty() => n,
                    _ if tier.context_known == s.requests => "within trained".into(),
                    _ => "-".into(),
                },
            ]);
        }
    }
    if !t.rows.is_empty() {
        doc.push(Block::Table(t));
    }
    if !view.skipped.is_empty() {
        doc.push(Block::List(
            view.skipped
                .iter()
                .map(|s| format!("skipped {} {}: {}", s.model, s.prompt_set, s.reason))
                .collect(),
        ));
    }
}
