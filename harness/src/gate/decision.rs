//! The gate's judgement. Deterministic measures (tau, accept rate, a_k,
//! lossless) are compared row by row, repeat by repeat, within the policy's
//! tolerance; speedup (a same-run ratio) is compared per group of repeats
//! by the bootstrap interval of the change of its mean. Results are
//! gathered per row group and measure, the worst repeat deciding.
//!
//! Speedup is judged only when the group's baselines ran at a comparable
//! pace in both runs (tokens per CPU second within `pace_tolerance`): on
//! cores shared with other jobs the contention changes the baseline's pace
//! and, with it, the same-run speedup (the A/A experiment in the README
//! shows both moving together), so a different machine state is reported
//! as "not judged" rather than as a change of the build.

use super::check::{Check, GateVerdict, NotJudged, Shown, Status, Values};
use super::pace::{pace_change, pace_column, Pairs};
use super::policy::{Measure, Policy};
use crate::run_folder::by_identity;
use crate::run_folder::environment::Difference;
use crate::run_folder::{group_key, group_label, row_identity, Record, Run};
use crate::stats::{classify, relative_change, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// Every check of a gate run.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// Checks, in the baseline's row order.
    pub checks: Vec<Check>,
    /// Remarks (rows not in the baseline, flagged rows).
    pub notes: Vec<String>,
}

impl Decision {
    /// Whether any check regressed.
    pub fn regressed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Regressed)
    }

    /// The whole run's verdict: a regression wins; otherwise any check not
    /// judged makes it inconclusive, never a silent pass.
    pub fn verdict(&self) -> GateVerdict {
        if self.regressed() {
            GateVerdict::Regression
        } else if self.checks.iter().any(|c| c.status == Status::NotJudged) {
            GateVerdict::Inconclusive
        } else {
            GateVerdict::Pass
        }
    }
}

/// `values` shown compactly: one value when all repeats agree, else `min..max`.
fn shown(values: &[f64], digits: usize) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "-".into()
    } else if lo == hi {
        format!("{lo:.digits$}")
    } else {
        format!("{lo:.digits$}..{hi:.digits$}")
    }
}

/// Status of a deterministic number: a drop beyond `tol` regresses, a rise
/// beyond it improves; a NaN on either side is no evidence of a pass, so it
/// regresses (the reader refuses NaN cells; this holds whatever comes in).
fn exact(b: f64, c: f64, tol: f64) -> Status {
    if c < b - tol || c.is_nan() || b.is_nan() {
        Status::Regressed
    } else if c > b + tol {
        Status::Improved
    } else {
        Status::Pass
    }
}

/// The largest drop of a_k (current below baseline), or infinity when the depths differ.
fn worst_position_drop(b: &[f64], c: &[f64]) -> f64 {
    if b.len() != c.len() {
        return f64::INFINITY;
    }
    b.iter()
        .zip(c)
        .map(|(b, c)| {
            if c.is_nan() || b.is_nan() {
                f64::INFINITY
            } else {
                b - c
            }
        })
        .fold(0.0, f64::max)
}

fn lossless_status(b: &str, c: &str) -> Status {
    match (b, c) {
        (_, "false") => Status::Regressed,
        ("true", c) if c != "true" => Status::Regressed,
        _ => Status::Pass,
    }
}

fn deterministic(
    policy: &Policy,
    baseline: &Run,
    current: &Run,
    label: &str,
    pairs: &Pairs,
) -> Vec<Check> {
    let mut out = Vec::new();
    let col = |m: Measure, name: &'static str, tol: f64, digits: usize, out: &mut Vec<Check>| {
        if !policy.checks(m) {
            return;
        }
        let b: Vec<f64> = pairs.iter().filter_map(|(b, _)| b.num(name)).collect();
        let c: Vec<f64> = pairs.iter().filter_map(|(_, c)| c.num(name)).collect();
        let status = pairs
            .iter()
            .map(|(b, c)| match (b.num(name), c.num(name)) {
                (Some(b), Some(c)) => exact(b, c, tol),
                (Some(_), None) => Status::Regressed,
                _ => Status::Pass,
            })
            .max()
            .unwrap_or(Status::Pass);
        let delta: Vec<f64> = pairs
            .iter()
            .filter_map(|(b, c)| Some(c.num(name)? - b.num(name)?))
            .collect();
        out.push(Check {
            row: label.to_string(),
            measure: name.to_string(),
            status,
            change: delta.iter().copied().reduce(f64::min),
            interval: None,
            tolerance: Some(tol),
            not_judged: None,
            shown: Shown {
                baseline: shown(&b, digits),
                current: shown(&c, digits),
                change: format!("{} (tolerance {tol})", shown(&delta, digits)),
            },
            baseline: Values::Numbers(b),
            current: Values::Numbers(c),
        });
    };
    col(Measure::Tau, "tau", policy.tau_tolerance, 4, &mut out);
    col(
        Measure::AcceptRate,
        "accept_rate",
        policy.accept_rate_tolerance,
        4,
        &mut out,
    );
    if policy.checks(Measure::Positions) {
        let get = |run: &Run, r: &Record| {
            run.positions
                .get(r.text("row_key"))
                .cloned()
                .unwrap_or_default()
        };
        let mut worst = 0.0f64;
        let mut worst_pair: Option<(Vec<f64>, Vec<f64>)> = None;
        for (b, c) in pairs {
            let (pb, pc) = (get(baseline, b), get(current, c));
            let drop = worst_position_drop(&pb, &pc);
            if drop >= worst || worst_pair.is_none() {
                worst = worst.max(drop);
                worst_pair = Some((pb, pc));
            }
        }
        let (pb, pc) = worst_pair.unwrap_or_default();
        let f = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let status = if worst > policy.position_tolerance {
            Status::Regressed
        } else {
            Status::Pass
        };
        out.push(Check {
            row: label.to_string(),
            measure: "positions".into(),
            status,
            // 0.0 - worst, not -worst: no drop is a change of +0, not -0.
            change: Some(0.0 - worst).filter(|w| w.is_finite()),
            interval: None,
            tolerance: Some(policy.position_tolerance),
            not_judged: None,
            shown: Shown {
                baseline: f(&pb),
                current: f(&pc),
                change: if worst.is_infinite() {
                    "depths differ".into()
                } else {
                    format!(
                        "largest drop {worst:.4} (tolerance {})",
                        policy.position_tolerance
                    )
                },
            },
            baseline: Values::Numbers(pb),
            current: Values::Numbers(pc),
        });
    }
    if policy.checks(Measure::Lossless) {
        let status = pairs
            .iter()
            .map(|(b, c)| lossless_status(b.text("lossless"), c.text("lossless")))
            .max()
            .unwrap_or(Status::Pass);
        let text = |current: bool| {
            let mut v: Vec<&str> = pairs
                .iter()
                .map(|(b, c)| if current { c } else { b }.text("lossless"))
                .collect();
            v.dedup();
            v.join(",")
        };
        let flags = |current: bool| {
            let flag = |r: &Record| match r.text("lossless") {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            };
            pairs
                .iter()
                .map(|(b, c)| flag(if current { c } else { b }))
                .collect()
        };
        out.push(Check {
            row: label.to_string(),
            measure: "lossless".into(),
            status,
            baseline: Values::Flags(flags(false)),
            current: Values::Flags(flags(true)),
            change: None,
            interval: None,
            tolerance: None,
            not_judged: None,
            shown: Shown {
                baseline: text(false),
                current: text(true),
                change: String::new(),
            },
        });
    }
    out
}

fn speedup(
    policy: &Policy,
    label: &str,
    key: &str,
    pairs: &Pairs,
    pace: Option<f64>,
    machine: Option<&Difference>,
) -> Check {
    let col = policy.timing_column.as_str();
    let b: Vec<f64> = pairs.iter().filter_map(|(b, _)| b.num(col)).collect();
    let c: Vec<f64> = pairs.iter().filter_map(|(_, c)| c.num(col)).collect();
    let mean = |v: &[f64]| crate::stats::mean(v).map_or("-".into(), |m| format!("{m:.3}"));
    let mut check = Check {
        row: label.to_string(),
        measure: col.to_string(),
        status: Status::NotJudged,
        change: None,
        interval: None,
        tolerance: Some(policy.noise_threshold),
        not_judged: None,
        shown: Shown {
            baseline: format!("{} (n={})", mean(&b), b.len()),
            current: format!("{} (n={})", mean(&c), c.len()),
            change: String::new(),
        },
        baseline: Values::Numbers(b.clone()),
        current: Values::Numbers(c.clone()),
    };
    if b.len() < policy.min_repeats || c.len() < policy.min_repeats {
        check.not_judged = Some(NotJudged::TooFewRepeats {
            needed: policy.min_repeats,
        });
        check.shown.change = format!("needs {} repeats a side", policy.min_repeats);
        return check;
    }
    if let Some(d) = machine {
        check.not_judged = Some(NotJudged::MachineDiffers { field: d.field });
        check.shown.change = format!("not comparable: {}", d.message);
        return check;
    }
    if let Some(p) = pace.filter(|p| p.abs() > policy.pace_tolerance) {
        check.not_judged = Some(NotJudged::PaceDiffers {
            pace_change: p,
            tolerance: policy.pace_tolerance,
        });
        check.shown.change = format!(
            "machine state differs: the same-run baseline's {} changed by {:+.1}% (beyond {:.0}%)",
            pace_column(policy),
            100.0 * p,
            100.0 * policy.pace_tolerance
        );
        return check;
    }
    let Some(ci) = relative_change(&b, &c, &policy.bootstrap(), key) else {
        check.not_judged = Some(NotJudged::NoPositiveValues);
        check.shown.change = "no positive speedups".into();
        return check;
    };
    check.change = Some(ci.estimate);
    check.interval = Some(ci);
    check.shown.change = format!(
        "{:+.1}% [{:+.1}%, {:+.1}%]",
        100.0 * ci.estimate,
        100.0 * ci.lower,
        100.0 * ci.upper
    );
    check.status = match classify(&ci, policy.noise_threshold) {
        Verdict::Regressed => Status::Regressed,
        Verdict::Improved => Status::Improved,
        Verdict::WithinNoise => Status::Pass,
    };
    check
}

/// Judges `current` against `baseline` (inputs already checked by
/// [`super::inputs::check`]); `environment` is where their machines differ
/// ([`crate::run_folder::environment::differences`] of the two).
pub fn decide(
    baseline: &Run,
    current: &Run,
    policy: &Policy,
    environment: &[Difference],
) -> Decision {
    let cur = by_identity(current).unwrap_or_default();
    let mut groups: Vec<(String, String, Pairs)> = Vec::new();
    for b in baseline.rows.iter().filter(|r| r.speculative()) {
        let Some(&ci) = cur.get(&row_identity(b)) else {
            continue;
        };
        let key = group_key(b);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.2.push((b, &current.rows[ci])),
            None => groups.push((key, group_label(b), vec![(b, &current.rows[ci])])),
        }
    }
    // CPU timings of another CPU model, build profile or thread count are
    // not judged (a run on another machine type is not a regression).
    let machine = environment
        .iter()
        .find(|d| matches!(d.field, "machine.cpu" | "build_profile" | "cpu_threads"));
    let mut checks = Vec::new();
    for (key, label, pairs) in &groups {
        checks.extend(deterministic(policy, baseline, current, label, pairs));
        checks.extend(super::gpu_spans::checks(
            policy, baseline, current, label, pairs,
        ));
        if policy.checks(Measure::Speedup) {
            let pace = pace_change(policy, baseline, current, pairs);
            checks.push(speedup(policy, label, key, pairs, pace, machine));
        }
    }
    let mut notes = Vec::new();
    let base_ids: BTreeMap<String, ()> = baseline
        .rows
        .iter()
        .map(|r| (row_identity(r), ()))
        .collect();
    let extra = current
        .rows
        .iter()
        .filter(|r| !base_ids.contains_key(&row_identity(r)))
        .count();
    if extra > 0 {
        notes.push(format!(
            "{extra} rows of the current run are not in the baseline and were not judged"
        ));
    }
    for r in current.rows.iter().filter(|r| r.likely_config_error()) {
        notes.push(format!(
            "`{}` is flagged likely_config_error (tau {}): a configuration error, not a result",
            r.text("row_key"),
            r.text("tau")
        ));
    }
    if checks
        .iter()
        .any(|c| matches!(c.not_judged, Some(NotJudged::PaceDiffers { .. })))
    {
        notes.push(format!(
            "timings were not judged where the baselines ran at another pace than in the baseline run (beyond {:.0}%): on shared cores the same-run speedup moves with the load; rerun when the machine is as loaded as when the baseline was made",
            100.0 * policy.pace_tolerance
        ));
    }
    Decision { checks, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deterministic_drop_beyond_tolerance_regresses_and_a_rise_improves() {
        assert_eq!(exact(2.0, 1.9, 0.0), Status::Regressed);
        assert_eq!(exact(2.0, 1.99, 0.05), Status::Pass);
        assert_eq!(exact(2.0, 2.0, 0.0), Status::Pass);
        assert_eq!(exact(2.0, 2.1, 0.0), Status::Improved);
    }

    #[test]
    fn regression_baseline_tau_nan_never_passes_the_gate() {
        assert_eq!(exact(f64::NAN, 1.01, 0.0), Status::Regressed);
        assert_eq!(exact(2.0, f64::NAN, 0.0), Status::Regressed);
        assert_eq!(exact(f64::NAN, f64::NAN, 0.5), Status::Regressed);
        assert!(worst_position_drop(&[f64::NAN], &[0.5]).is_infinite());
    }

    #[test]
    fn positions_of_another_depth_are_a_regression() {
        assert!(worst_position_drop(&[0.5, 0.3], &[0.5]).is_infinite());
        assert_eq!(worst_position_drop(&[0.5, 0.3], &[0.5, 0.3]), 0.0);
        assert!((worst_position_drop(&[0.5, 0.3], &[0.6, 0.2]) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_lossy_current_row_regresses() {
        assert_eq!(lossless_status("true", "false"), Status::Regressed);
        assert_eq!(lossless_status("true", ""), Status::Regressed);
        assert_eq!(lossless_status("", ""), Status::Pass);
        assert_eq!(lossless_status("true", "true"), Status::Pass);
    }
}
