//! Reading a confidence interval of a relative change as criterion does:
//! a change counts only when the whole interval lies beyond the noise
//! threshold; an interval within or across the threshold is noise.

use super::Interval;
use serde::Serialize;

/// What a change amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Higher, beyond the noise threshold, with confidence.
    Improved,
    /// Lower, beyond the noise threshold, with confidence.
    Regressed,
    /// No change that stands out from noise.
    WithinNoise,
}

impl Verdict {
    /// The words used in tables.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::WithinNoise => "within noise",
        }
    }
}

/// `Regressed` when the whole interval is below `-noise`, `Improved` when it
/// is wholly above `+noise`, otherwise `WithinNoise` (for a measure where
/// higher is better, such as speedup or throughput).
pub fn classify(change: &Interval, noise: f64) -> Verdict {
    if change.upper < -noise {
        Verdict::Regressed
    } else if change.lower > noise {
        Verdict::Improved
    } else {
        Verdict::WithinNoise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(lower: f64, upper: f64) -> Interval {
        Interval {
            estimate: (lower + upper) / 2.0,
            lower,
            upper,
        }
    }

    #[test]
    fn an_interval_wholly_below_minus_noise_is_a_regression() {
        assert_eq!(classify(&ci(-0.20, -0.08), 0.05), Verdict::Regressed);
    }

    #[test]
    fn an_interval_wholly_above_noise_is_an_improvement() {
        assert_eq!(classify(&ci(0.06, 0.20), 0.05), Verdict::Improved);
    }

    #[test]
    fn a_significant_change_smaller_than_the_noise_threshold_is_noise() {
        assert_eq!(classify(&ci(-0.04, -0.01), 0.05), Verdict::WithinNoise);
    }

    #[test]
    fn an_interval_across_the_threshold_is_noise() {
        assert_eq!(classify(&ci(-0.12, -0.02), 0.05), Verdict::WithinNoise);
        assert_eq!(classify(&ci(-0.1, 0.1), 0.05), Verdict::WithinNoise);
    }
}
