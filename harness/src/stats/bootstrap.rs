//! A percentile-bootstrap confidence interval of the relative change of the
//! mean between a baseline sample and a current sample, as criterion
//! reports a change: resample each side with replacement, take
//! `mean(current*) / mean(baseline*) - 1`, and read the interval off the
//! resampled distribution. The random stream is seeded (ChaCha8) from the
//! settings and a label, so a gate gives the same answer for the same input.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::statistics::{Data, OrderStatistics};

/// Settings of the bootstrap.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bootstrap {
    /// Significance level: the interval covers `1 - alpha`.
    pub alpha: f64,
    /// Number of resamples.
    pub resamples: usize,
    /// Seed of the random stream (mixed with each comparison's label).
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            alpha: 0.05,
            resamples: 10_000,
            seed: 0,
        }
    }
}

/// A point estimate with a confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Interval {
    /// The estimate from the samples themselves.
    pub estimate: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

/// FNV-1a of `label`: a stable per-comparison offset of the seed.
fn label_hash(label: &str) -> u64 {
    label.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn resampled_mean(xs: &[f64], rng: &mut ChaCha8Rng) -> f64 {
    (0..xs.len())
        .map(|_| xs[rng.random_range(0..xs.len())])
        .sum::<f64>()
        / xs.len() as f64
}

/// The relative change of the mean from `baseline` to `current`
/// (`+0.10` = 10% higher) with its `1 - alpha` bootstrap interval.
/// `None` when a side has fewer than two samples or a mean is not positive.
pub fn relative_change(
    baseline: &[f64],
    current: &[f64],
    settings: &Bootstrap,
    label: &str,
) -> Option<Interval> {
    if baseline.len() < 2 || current.len() < 2 {
        return None;
    }
    let (mb, mc) = (super::mean(baseline)?, super::mean(current)?);
    if mb <= 0.0 || mc <= 0.0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed ^ label_hash(label));
    let changes: Vec<f64> = (0..settings.resamples.max(1))
        .filter_map(|_| {
            let b = resampled_mean(baseline, &mut rng);
            let c = resampled_mean(current, &mut rng);
            (b > 0.0).then(|| c / b - 1.0)
        })
        .collect();
    let mut data = Data::new(changes);
    Some(Interval {
        estimate: mc / mb - 1.0,
        lower: data.quantile(settings.alpha / 2.0),
        upper: data.quantile(1.0 - settings.alpha / 2.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Bootstrap {
        Bootstrap::default()
    }

    #[test]
    fn the_same_input_gives_the_same_interval() {
        let a = [1.0, 1.1, 0.9, 1.05, 0.95];
        let b = [1.2, 1.0, 1.1, 0.98, 1.02];
        let x = relative_change(&a, &b, &settings(), "row").unwrap();
        let y = relative_change(&a, &b, &settings(), "row").unwrap();
        assert_eq!(x, y);
    }

    #[test]
    fn the_interval_contains_the_estimate_and_is_ordered() {
        let a = [1.0, 1.1, 0.9, 1.05, 0.95];
        let b = [1.2, 1.0, 1.1, 0.98, 1.02];
        let i = relative_change(&a, &b, &settings(), "row").unwrap();
        assert!(i.lower <= i.estimate && i.estimate <= i.upper, "{i:?}");
        assert!((i.estimate - (1.06 / 1.0 - 1.0)).abs() < 1e-12);
    }

    #[test]
    fn identical_constant_samples_give_a_zero_width_interval_at_zero() {
        let a = [2.0; 5];
        let i = relative_change(&a, &a, &settings(), "row").unwrap();
        assert_eq!((i.estimate, i.lower, i.upper), (0.0, 0.0, 0.0));
    }

    #[test]
    fn a_clear_20_percent_drop_lies_wholly_below_zero() {
        let a = [1.00, 1.02, 0.98, 1.01, 0.99, 1.00];
        let b: Vec<f64> = a.iter().map(|x| x * 0.8).collect();
        let i = relative_change(&a, &b, &settings(), "row").unwrap();
        assert!(i.upper < -0.15 && i.lower > -0.25, "{i:?}");
    }

    #[test]
    fn a_wider_confidence_level_gives_a_wider_interval() {
        let a = [1.0, 1.3, 0.8, 1.1, 0.9, 1.2];
        let b = [1.1, 0.9, 1.25, 1.0, 0.85, 1.15];
        let narrow = relative_change(
            &a,
            &b,
            &Bootstrap {
                alpha: 0.2,
                ..settings()
            },
            "r",
        )
        .unwrap();
        let wide = relative_change(
            &a,
            &b,
            &Bootstrap {
                alpha: 0.01,
                ..settings()
            },
            "r",
        )
        .unwrap();
        assert!(wide.lower < narrow.lower && wide.upper > narrow.upper);
    }

    #[test]
    fn fewer_than_two_repeats_cannot_be_judged() {
        assert_eq!(relative_change(&[1.0], &[1.0, 2.0], &settings(), "r"), None);
        assert_eq!(relative_change(&[1.0, 1.0], &[], &settings(), "r"), None);
    }
}
