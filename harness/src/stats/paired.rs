//! A sequential paired comparison, for timings measured in interleaved
//! rounds (one A process, then one B process, the order rotating): each
//! round gives one log ratio B/A taken close together in time, so a
//! machine's slow drift in load cancels. After each round the mean log
//! ratio gets a Student-t interval, and the comparison is decided once the
//! interval clears a band: wholly above `regress_above` (slower beyond it:
//! a regression), or wholly below `pass_below` (no slowdown as large as
//! that: a pass). Until then more rounds are taken, up to a cap; what is
//! still undecided there is inconclusive.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Where a paired comparison stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairedVerdict {
    /// Slower beyond `regress_above`, with confidence.
    Regressed,
    /// Any slowdown is below `pass_below`, with confidence.
    Pass,
    /// Neither yet: take more rounds (or, at the cap, inconclusive).
    Undecided,
}

/// The decision's settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedRule {
    /// Two-sided significance level of the interval (0.05: 95%).
    pub alpha: f64,
    /// A slowdown whose whole interval lies above this (relative, 0.03 = 3%) regresses.
    pub regress_above: f64,
    /// A slowdown whose whole interval lies below this passes.
    pub pass_below: f64,
    /// Rounds before any decision.
    pub min_rounds: usize,
}

impl Default for PairedRule {
    fn default() -> Self {
        PairedRule {
            alpha: 0.05,
            regress_above: 0.03,
            pass_below: 0.05,
            min_rounds: 4,
        }
    }
}

/// The slowdown estimate of a paired sample, relative (exp(mean log ratio) - 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedChange {
    /// Rounds.
    pub rounds: usize,
    /// exp(mean) - 1.
    pub estimate: f64,
    /// Lower end of the interval, relative.
    pub lower: f64,
    /// Upper end of the interval, relative.
    pub upper: f64,
    /// The verdict under the rule.
    pub verdict: PairedVerdict,
}

/// Judges the per-round ratios `ratios` (current / control, each > 0).
pub fn judge(ratios: &[f64], rule: &PairedRule) -> Option<PairedChange> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| **r > 0.0)
        .map(|r| r.ln())
        .collect();
    let n = logs.len();
    if n < 2 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(1.0 - rule.alpha / 2.0);
    let half = t * (var / n as f64).sqrt();
    let (lower, upper) = ((mean - half).exp() - 1.0, (mean + half).exp() - 1.0);
    let verdict = if n < rule.min_rounds {
        PairedVerdict::Undecided
    } else if lower > rule.regress_above {
        PairedVerdict::Regressed
    } else if upper < rule.pass_below {
        PairedVerdict::Pass
    } else {
        PairedVerdict::Undecided
    };
    Some(PairedChange {
        rounds: n,
        estimate: mean.exp() - 1.0,
        lower,
        upper,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_10_percent_slowdown_regresses_and_no_change_passes() {
        let rule = PairedRule::default();
        let slow = [1.11, 1.09, 1.10, 1.12, 1.08];
        let c = judge(&slow, &rule).unwrap();
        assert_eq!(c.verdict, PairedVerdict::Regressed, "{c:?}");
        assert!((c.estimate - 0.10).abs() < 0.01);
        let same = [1.01, 0.99, 1.0, 1.005, 0.995];
        assert_eq!(judge(&same, &rule).unwrap().verdict, PairedVerdict::Pass);
    }

    #[test]
    fn a_wide_interval_stays_undecided_and_few_rounds_never_decide() {
        let rule = PairedRule::default();
        let noisy = [1.3, 0.8, 1.1, 0.9];
        assert_eq!(
            judge(&noisy, &rule).unwrap().verdict,
            PairedVerdict::Undecided
        );
        assert_eq!(
            judge(&[1.5, 1.5, 1.5], &rule).unwrap().verdict,
            PairedVerdict::Undecided,
            "under min_rounds"
        );
        assert_eq!(judge(&[1.0], &rule), None);
    }
}
