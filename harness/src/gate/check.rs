//! One check of the gate, as numbers (what `specula gate --json` prints)
//! and as the text of the Markdown summary.

use crate::stats::Interval;
use serde::Serialize;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Too few repeats to judge, or another machine state (reported, not failed).
    NotJudged,
    /// Equal within tolerance, or within noise.
    Pass,
    /// Better than the baseline (passes; refresh the baseline to keep it).
    Improved,
    /// Worse than the baseline: the gate fails.
    Regressed,
}

impl Status {
    /// The words in tables.
    pub fn words(self) -> &'static str {
        match self {
            Status::NotJudged => "not judged",
            Status::Pass => "pass",
            Status::Improved => "improved",
            Status::Regressed => "REGRESSED",
        }
    }
}

/// The values a check compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Values {
    /// Numbers: one per repeat (tau, accept_rate, the timing column), or
    /// a_1..a_k of the repeat with the largest drop (positions); a NaN is `null`.
    Numbers(Vec<f64>),
    /// lossless per repeat (`null`: not checked).
    Flags(Vec<Option<bool>>),
}

/// Why a timing check was not judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NotJudged {
    /// A side has fewer repeats than `min_repeats`.
    TooFewRepeats {
        /// The policy's `min_repeats`.
        needed: usize,
    },
    /// The same-run baselines ran at another pace in the two runs (another machine state).
    PaceDiffers {
        /// The relative change of the baselines' pace, current over baseline minus 1.
        pace_change: f64,
        /// The policy's `pace_tolerance`.
        tolerance: f64,
    },
    /// No positive values to take a ratio of.
    NoPositiveValues,
    /// The baseline has instruction counts (costs.csv) and the current run none.
    NoCosts,
    /// The runs' counts were made under other settings (valgrind, build profile, prompts, tokens).
    CostSettingsDiffer,
    /// GPU step times of two different GPU models.
    DeviceDiffers,
    /// CPU timings of runs whose CPU model, build profile or CPU threads
    /// differ: not comparable, whatever the interval says.
    MachineDiffers {
        /// The meta.json field that differs (`machine.cpu`, `build_profile`, `cpu_threads`).
        field: &'static str,
    },
    /// No span times (kernels.csv) in the current run.
    NoSpans,
}

/// The text of a check in the Markdown summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shown {
    /// Baseline value(s).
    pub baseline: String,
    /// Current value(s).
    pub current: String,
    /// The change, its interval or tolerance, or why it was not judged.
    pub change: String,
}

/// One (row group, measure) check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The row group (row key without the repeat).
    pub row: String,
    /// The measure: `tau`, `accept_rate`, `positions`, `lossless` or the timing column.
    pub measure: String,
    /// The outcome.
    pub status: Status,
    /// The baseline run's values.
    pub baseline: Values,
    /// The current run's values.
    pub current: Values,
    /// The number the status was read from: for tau and accept_rate the
    /// smallest per-repeat change current - baseline; for positions minus
    /// the largest drop of any a_k (`null` when the depths differ); for the
    /// timing column the relative change of the mean, current over
    /// baseline minus 1; `null` for lossless and where not judged.
    pub change: Option<f64>,
    /// The change's bootstrap interval (timing column only).
    pub interval: Option<Interval>,
    /// The largest drop allowed (deterministic measures), or the noise
    /// threshold (timing column); `null` for lossless.
    pub tolerance: Option<f64>,
    /// Why the check was not judged (timing column only).
    pub not_judged: Option<NotJudged>,
    /// The text of the Markdown summary.
    #[serde(skip)]
    pub shown: Shown,
}

/// The verdict of a whole gate run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// No check regressed and every check was judged (exit 0).
    Pass,
    /// A check regressed (exit 1).
    Regression,
    /// No check regressed, but some timing check could not be judged (the
    /// machine ran the baselines at another pace, too few repeats): exit 3,
    /// or 0 under a policy with `on_inconclusive = "pass"`.
    Inconclusive,
}

impl GateVerdict {
    /// The word of the summary's title.
    pub fn title(self) -> &'static str {
        match self {
            GateVerdict::Pass => "PASS",
            GateVerdict::Regression => "REGRESSION",
            GateVerdict::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// Checks counted by status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Checks that regressed.
    pub regressed: usize,
    /// Checks that improved.
    pub improved: usize,
    /// Checks that passed.
    pub pass: usize,
    /// Checks not judged.
    pub not_judged: usize,
}

impl Counts {
    /// Counts `checks`.
    pub fn of(checks: &[Check]) -> Counts {
        let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
        Counts {
            regressed: count(Status::Regressed),
            improved: count(Status::Improved),
            pass: count(Status::Pass),
            not_judged: count(Status::NotJudged),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_status_wins() {
        let mut v = [Status::Pass, Status::Regressed, Status::Improved];
        v.sort();
        assert_eq!(v.last(), Some(&Status::Regressed));
    }

    #[test]
    fn values_are_numbers_and_flags_in_json() {
        let n = serde_json::to_value(Values::Numbers(vec![1.5, f64::NAN])).unwrap();
        assert_eq!(n, serde_json::json!([1.5, null]));
        let f = serde_json::to_value(Values::Flags(vec![Some(true), None])).unwrap();
        assert_eq!(f, serde_json::json!([true, null]));
        let r = serde_json::to_value(NotJudged::TooFewRepeats { needed: 3 }).unwrap();
        assert_eq!(
            r,
            serde_json::json!({"reason": "too_few_repeats", "needed": 3})
        );
    }
}
