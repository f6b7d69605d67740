//! The gate's policy: which measures it checks, the tolerances of the
//! deterministic ones, and the statistics of the timed one. Read from a
//! TOML file (`--policy`); every field is optional and defaults to
//! [`Policy::default`].

use super::GateError;
use crate::stats::Bootstrap;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A measure the gate can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Acceptance length (deterministic at fixed seeds).
    Tau,
    /// Accepted / drafted slots (deterministic).
    AcceptRate,
    /// Per-position acceptance a_k from positions.csv (deterministic).
    Positions,
    /// Greedy output equals the baseline's (must stay true).
    Lossless,
    /// The same-run timing ratio (`timing_column`), over repeats.
    Speedup,
    /// Instruction counts per call from costs.csv (`specula cost`), where the baseline has them.
    Cost,
    /// Absolute CUDA-event time per call of the prefill, draft and verify spans (GPU runs only).
    GpuSpans,
}

impl Measure {
    /// The name in tables and policy files.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Tau => "tau",
            Measure::AcceptRate => "accept_rate",
            Measure::Positions => "positions",
            Measure::Lossless => "lossless",
            Measure::Speedup => "speedup",
            Measure::Cost => "cost",
            Measure::GpuSpans => "gpu_spans",
        }
    }
}

/// What an inconclusive gate run (timings not judged, nothing regressed) exits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInconclusive {
    /// Exit 3: the job fails until someone looks (the default: no silent pass).
    #[default]
    Fail,
    /// Exit 0; the summary still says INCONCLUSIVE and what to do.
    Pass,
}

/// What the gate checks and how strictly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// The measures checked (default: all seven).
    pub measures: Vec<Measure>,
    /// Largest allowed absolute drop of tau (default 0: exact).
    pub tau_tolerance: f64,
    /// Largest allowed absolute drop of accept_rate (default 0: exact).
    pub accept_rate_tolerance: f64,
    /// Largest allowed absolute drop of any a_k (default 0: exact).
    pub position_tolerance: f64,
    /// Significance level of the speedup's bootstrap interval (default 0.05: a 95% interval).
    pub alpha: f64,
    /// Relative change of mean speedup that counts as noise (default 0.05 = 5%).
    pub noise_threshold: f64,
    /// Bootstrap resamples (default 10000).
    pub resamples: usize,
    /// Seed of the bootstrap (default 0): the gate is deterministic for given inputs.
    pub seed: u64,
    /// Repeats each side needs before speedup is judged (default 3); fewer is reported, not failed.
    pub min_repeats: usize,
    /// The runs.csv column of the timed ratio: `cpu_speedup` (default: decode
    /// tokens per CPU second over the same-run baseline's, steady on shared
    /// cores) or `speedup` (wall-clock throughput ratio).
    pub timing_column: String,
    /// Largest relative change of the same-run baselines' pace (tokens per CPU
    /// second; per second for `speedup`) between the runs at which speedup is
    /// still judged (default 0.10); beyond it the machine's state differs and
    /// speedup is reported as not judged.
    pub pace_tolerance: f64,
    /// What a run whose timings could not be judged exits with (default
    /// `fail`: exit 3; `pass`: exit 0, still marked INCONCLUSIVE).
    pub on_inconclusive: OnInconclusive,
    /// Largest allowed relative rise of an instruction count per call
    /// (costs.csv; default 0.005 = 0.5%); a fall beyond it is an improvement.
    pub cost_tolerance: f64,
    /// Largest allowed relative rise of a GPU span's mean time per call
    /// (GPU runs; default 0.03 = 3%, three times the run-to-run spread of one GPU model).
    pub gpu_span_tolerance: f64,
}

impl Default for Policy {
    fn default() -> Self {
        let b = Bootstrap::default();
        Policy {
            measures: vec![
                Measure::Tau,
                Measure::AcceptRate,
                Measure::Positions,
                Measure::Lossless,
                Measure::Speedup,
                Measure::Cost,
                Measure::GpuSpans,
            ],
            tau_tolerance: 0.0,
            accept_rate_tolerance: 0.0,
            position_tolerance: 0.0,
            alpha: b.alpha,
            noise_threshold: 0.05,
            resamples: b.resamples,
            seed: b.seed,
            min_repeats: 3,
            timing_column: "cpu_speedup".into(),
            pace_tolerance: 0.10,
            on_inconclusive: OnInconclusive::Fail,
            cost_tolerance: 0.005,
            gpu_span_tolerance: 0.03,
        }
    }
}

impl Policy {
    /// Reads a policy file; unknown fields and out-of-range values are refused with the file's name.
    pub fn read(path: &Path) -> Result<Policy, GateError> {
        let bad = |message: String| GateError::Policy {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let p: Policy = toml::from_str(&text).map_err(|e| bad(e.to_string().replace('\n', " ")))?;
        p.check().map_err(bad)?;
        Ok(p)
    }

    fn check(&self) -> Result<(), String> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(format!("alpha = {}: must be in (0, 1)", self.alpha));
        }
        if self.noise_threshold < 0.0 {
            return Err("noise_threshold: must be >= 0".into());
        }
        for (name, t) in [
            ("pace_tolerance", self.pace_tolerance),
            ("tau_tolerance", self.tau_tolerance),
            ("accept_rate_tolerance", self.accept_rate_tolerance),
            ("position_tolerance", self.position_tolerance),
            ("cost_tolerance", self.cost_tolerance),
            ("gpu_span_tolerance", self.gpu_span_tolerance),
        ] {
            if t < 0.0 || t.is_nan() {
                return Err(format!("{name}: must be >= 0"));
            }
        }
        if self.resamples < 100 {
            return Err("resamples: at least 100".into());
        }
        if !["cpu_speedup", "speedup"].contains(&self.timing_column.as_str()) {
            return Err(format!(
                "timing_column = {:?}: expected \"cpu_speedup\" or \"speedup\"",
                self.timing_column
            ));
        }
        if self.min_repeats < 2 {
            return Err("min_repeats: at least 2 (a bootstrap needs two samples)".into());
        }
        Ok(())
    }

    /// Whether `m` is checked.
    pub fn checks(&self, m: Measure) -> bool {
        self.measures.contains(&m)
    }

    /// The bootstrap settings.
    pub fn bootstrap(&self) -> Bootstrap {
        Bootstrap {
            alpha: self.alpha,
            resamples: self.resamples,
            seed: self.seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_policy_file_means_the_defaults() {
        let p: Policy = toml::from_str("").unwrap();
        assert_eq!(p, Policy::default());
    }

    #[test]
    fn a_partial_policy_keeps_the_other_defaults() {
        let p: Policy = toml::from_str("noise_threshold = 0.1\nmeasures = [\"tau\"]").unwrap();
        assert_eq!(p.noise_threshold, 0.1);
        assert_eq!(p.measures, vec![Measure::Tau]);
        assert_eq!(p.alpha, 0.05);
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused() {
        assert!(toml::from_str::<Policy>("alpah = 0.1").is_err());
        let p: Policy = toml::from_str("alpha = 1.5").unwrap();
        assert!(p.check().unwrap_err().contains("alpha"));
    }
}
