//! Arrival times of an open-loop point: `n` requests at `rate` per second,
//! Poisson (exponential gaps, as `vllm bench serve` and bench_serving with
//! burstiness 1) or constant (gaps of exactly 1 / rate), from a seed, cut
//! at `duration_s` when given.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How requests arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential gaps with mean 1 / rate.
    #[default]
    Poisson,
    /// Gaps of exactly 1 / rate.
    Constant,
}

/// The open-loop settings of a spec (`[load]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Requests per second, one grid point each (crossed with `batch_sizes`,
    /// which bound the requests in flight).
    pub request_rates: super::super::sweep::values::OneOrMany<f64>,
    /// `poisson` (default) or `constant`.
    #[serde(default)]
    pub arrival: Arrival,
    /// Requests per point (default: the prompt set's size; prompts are cycled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_requests: Option<usize>,
    /// No arrival after this many seconds (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Seed of the arrival times (default: the spec's `seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The SLO of `request_goodput`: a request counts when within every bound given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Slo>,
}

/// Bounds a request must meet to count towards goodput (milliseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Time to first token at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Time per output token at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// End-to-end latency at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

impl LoadSpec {
    /// Checks what serde cannot; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(r) = self
            .request_rates
            .0
            .iter()
            .find(|r| !(r.is_finite() && **r > 0.0))
        {
            return Err(format!(
                "[load] request_rates: {r} is not a positive number of requests per second"
            ));
        }
        if self.num_requests == Some(0) {
            return Err("[load] num_requests must be at least 1".into());
        }
        if let Some(d) = self.duration_s.filter(|d| !(d.is_finite() && *d > 0.0)) {
            return Err(format!(
                "[load] duration_s = {d}: must be a positive number of seconds"
            ));
        }
        Ok(())
    }
}

/// Seconds from the point's start at which each of at most `n` requests is
/// sent; fewer when `duration_s` cuts the schedule.
pub fn schedule(
    rate: f64,
    n: usize,
    arrival: Arrival,
    seed: u64,
    duration_s: Option<f64>,
) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if duration_s.is_some_and(|d| t > d) {
            break;
        }
        out.push(t);
        t += match arrival {
            Arrival::Constant => 1.0 / rate,
            Arrival::Poisson => {
                let u: f64 = rng.random();
                -(1.0 - u).ln() / rate
            }
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_arrivals_are_evenly_spaced_and_poisson_ones_average_the_rate() {
        assert_eq!(
            schedule(4.0, 3, Arrival::Constant, 0, None),
            vec![0.0, 0.25, 0.5]
        );
        let p = schedule(8.0, 4001, Arrival::Poisson, 7, None);
        let mean_gap = p[4000] / 4000.0;
        assert!((mean_gap - 0.125).abs() < 0.01, "mean gap {mean_gap}");
        assert_eq!(p, schedule(8.0, 4001, Arrival::Poisson, 7, None), "seeded");
        assert_ne!(p, schedule(8.0, 4001, Arrival::Poisson, 8, None));
        assert_eq!(schedule(2.0, 100, Arrival::Constant, 0, Some(1.0)).len(), 3);
    }
}
