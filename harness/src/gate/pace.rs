//! The machine state behind a same-run ratio: the pace of the group's
//! baseline rows (tokens per CPU second for `cpu_speedup`, per second for
//! `speedup`). On cores shared with other jobs the same-run speedup moves
//! with the load, and so does this pace; the gate judges speedup only where
//! the pace agrees between the runs.

use super::policy::Policy;
use crate::run_folder::row_key::baseline_of;
use crate::run_folder::{group_label, Record, Run};

/// The pairs (baseline row, current row) of one group.
pub type Pairs<'a> = Vec<(&'a Record, &'a Record)>;

/// The pace column of the timed ratio's denominator: what the same-run baseline achieved.
pub fn pace_column(policy: &Policy) -> &'static str {
    if policy.timing_column == "speedup" {
        "throughput_tok_s"
    } else {
        "cpu_tok_s"
    }
}

/// The relative change of the baseline rows' pace (tokens per CPU second, or per
/// second) between the runs, for the group whose rows are `pairs`.
pub fn pace_change(policy: &Policy, baseline: &Run, current: &Run, pairs: &Pairs) -> Option<f64> {
    let want = baseline_of(&group_label(pairs.first()?.0))?;
    let col = pace_column(policy);
    let pace = |run: &Run| {
        let v: Vec<f64> = run
            .rows
            .iter()
            .filter(|r| !r.speculative() && group_label(r) == want)
            .filter_map(|r| r.num(col))
            .collect();
        crate::stats::mean(&v).filter(|m| *m > 0.0)
    };
    Some(pace(current)? / pace(baseline)? - 1.0)
}
