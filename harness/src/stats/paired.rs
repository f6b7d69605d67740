//! A sequential paired comparison, for timings measured in interleaved
//! rounds (one A process, then one B process, the order rotating): each
//! round gives one log ratio B/A taken close together in time, so a
//! machine's slow drift in load cancels. After each round the log ratios
//! get a Hodges-Lehmann interval of their centre (the exact signed-rank
//! interval, [`super::signed_rank`]: a round hit by a burst of other work
//! is off by up to 2x on shared cores, which widens a Student-t interval
//! of the mean but not this one), and the comparison is decided once the
//! interval clears a band: wholly above `regress_above` (slower beyond it:
//! a regression), or wholly below `pass_below` (no slowdown as large as
//! that: a pass). Until then more rounds are taken, up to a cap; what is
//! still undecided there is inconclusive.

use super::signed_rank::hodges_lehmann;
use serde::Serialize;

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
    /// Two-sided significance level of the interval (0.05: 95%); a
    /// comparison of several measures divides it among them (Bonferroni).
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
            min_rounds: 8,
        }
    }
}

/// The slowdown estimate of a paired sample, relative (exp(centre of the log ratios) - 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedChange {
    /// Rounds.
    pub rounds: usize,
    /// exp(Hodges-Lehmann centre of the log ratios) - 1.
    pub estimate: f64,
    /// Lower end of the interval, relative.
    pub lower: f64,
    /// Upper end of the interval, relative.
    pub upper: f64,
    /// The verdict under the rule.
    pub verdict: PairedVerdict,
}

/// Judges the per-round ratios `ratios` (current / control, each > 0) at
/// the rule's level `alpha`. `None` with fewer than two ratios.
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
    // Too few rounds for the level: an interval as wide as the data.
    let (centre, lower, upper) = match hodges_lehmann(&logs, rule.alpha) {
        Some(i) => (i.estimate, i.lower, i.upper),
        None => {
            let mut sorted = logs.clone();
            sorted.sort_by(f64::total_cmp);
            (sorted[n / 2], f64::NEG_INFINITY, f64::INFINITY)
        }
    };
    let (lower, upper) = (lower.exp() - 1.0, upper.exp() - 1.0);
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
        estimate: centre.exp() - 1.0,
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
        let slow = [1.11, 1.09, 1.10, 1.12, 1.08, 1.10, 1.095, 1.105];
        let c = judge(&slow, &rule).unwrap();
        assert_eq!(c.verdict, PairedVerdict::Regressed, "{c:?}");
        assert!((c.estimate - 0.10).abs() < 0.01);
        let same = [1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 0.998, 1.002];
        assert_eq!(judge(&same, &rule).unwrap().verdict, PairedVerdict::Pass);
    }

    #[test]
    fn one_wild_round_in_20_does_not_hide_a_10_percent_slowdown() {
        // The mean's t-interval of these logs reaches below zero
        // (mean +0.035, sd 0.27: from -9%); the signed-rank interval does not.
        let rule = PairedRule::default();
        let mut slow: Vec<f64> = (0..20).map(|i| 1.08 + 0.002 * i as f64).collect();
        slow[2] = 0.33;
        let c = judge(&slow, &rule).unwrap();
        assert_eq!(c.verdict, PairedVerdict::Regressed, "{c:?}");
    }

    #[test]
    fn a_wide_interval_stays_undecided_and_few_rounds_never_decide() {
        let rule = PairedRule::default();
        let noisy = [1.3, 0.8, 1.1, 0.9, 1.2, 0.85, 1.15, 0.95];
        assert_eq!(
            judge(&noisy, &rule).unwrap().verdict,
            PairedVerdict::Undecided
        );
        assert_eq!(
            judge(&[1.5; 7], &rule).unwrap().verdict,
            PairedVerdict::Undecided,
            "under min_rounds"
        );
        let strict = PairedRule {
            alpha: 0.001,
            min_rounds: 2,
            ..rule
        };
        let c = judge(&[1.5; 9], &strict).unwrap();
        assert_eq!(
            c.verdict,
            PairedVerdict::Undecided,
            "9 rounds: 2^-8 > 0.0005"
        );
        assert_eq!(c.lower, -1.0, "exp(-inf) - 1: no lower end");
        assert!(c.upper.is_infinite() && (c.estimate - 0.5).abs() < 1e-12);
        assert_eq!(judge(&[1.0], &rule), None);
    }
}
