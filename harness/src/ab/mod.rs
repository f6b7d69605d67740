//! `specula ab`: a paired, interleaved timing comparison of arms (one
//! control and variants: other flags, e.g. planted `--inject-*-work-pct`
//! regressions, or another `specula` binary) on one sweep spec. Each round
//! runs every arm once as its own short `specula sweep` process, the order
//! rotating from round to round, each variant between two runs of the
//! control (A V1 A V2 A ... A): its ratio for the round is to the geometric
//! mean of the control runs just before and after it, which cancels the
//! machine's drift (on shared cores the level wanders by up to 2x over
//! seconds; neighbouring runs differ by much less). Per row group it reads the mean thread-CPU time per call of
//! the prefill, draft and verify spans (kernels.csv, `--span-clock
//! thread-cpu`: preemption left out) and the decode CPU time
//! per token (runs.csv), and judges each variant's per-round ratios to the
//! control with [`crate::stats::paired`], the level divided among the
//! variant's measures (Bonferroni): more rounds while an interval is too
//! wide to decide, up to `max_rounds` (then inconclusive). A decided
//! variant runs no more rounds; the control runs in every round.

use crate::run_folder::{group_label, Run};
use crate::stats::paired::{judge, PairedChange, PairedRule, PairedVerdict};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One arm: a name, the binary, and extra flags for `specula sweep`.
#[derive(Debug, Clone, Serialize)]
pub struct Arm {
    /// The arm's name (folders and tables).
    pub name: String,
    /// The `specula` binary that runs it.
    pub binary: PathBuf,
    /// Extra flags of `specula sweep` (e.g. `--inject-verify-work-pct 10`).
    pub flags: Vec<String>,
}

/// What a comparison runs.
#[derive(Debug, Clone)]
pub struct AbSettings {
    /// The sweep spec each process runs.
    pub spec: PathBuf,
    /// The arms; the first is the control.
    pub arms: Vec<Arm>,
    /// Where every process's run folder goes.
    pub out: PathBuf,
    /// The decision rule.
    pub rule: PairedRule,
    /// At most this many rounds.
    pub max_rounds: usize,
}

/// One variant's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ArmOutcome {
    /// The arm.
    pub arm: String,
    /// `regression`, `pass` or `inconclusive`.
    pub verdict: &'static str,
    /// Rounds run.
    pub rounds: usize,
    /// Every (row group / measure) with its change.
    pub checks: BTreeMap<String, PairedChange>,
}

/// Why a comparison could not run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AbError(pub String);

/// Spans with fewer calls per process than this are not judged: their mean
/// is a handful of samples (a row's prefills: one per prompt).
pub const MIN_SPAN_CALLS: f64 = 8.0;

/// Timings of one process: `row group/measure` -> value (lower is better).
pub fn timings(run: &Run) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in &run.rows {
        let label = group_label(r);
        if let Some(spans) = run.spans.get(r.key()) {
            for s in ["prefill", "draft", "verify"] {
                if let Some(t) = spans.get(s).filter(|t| t.count >= MIN_SPAN_CALLS) {
                    out.insert(format!("{label}/{s}_us"), t.total_us / t.count);
                }
            }
        }
        let tokens = r.num("output_tokens").unwrap_or(0.0) - r.num("prompts").unwrap_or(0.0);
        if let Some(cpu) = r.num("decode_cpu_s").filter(|_| tokens > 0.0) {
            out.insert(format!("{label}/cpu_us_per_token"), 1e6 * cpu / tokens);
        }
    }
    out
}

fn run_arm(s: &AbSettings, arm: &Arm, round: usize, slot: usize) -> Result<Timings, AbError> {
    let dir = s.out.join(format!("r{round:03}-{slot:02}-{}", arm.name));
    let o = Command::new(&arm.binary)
        .arg("sweep")
        .arg(&s.spec)
        .args(["--quiet", "--span-clock", "thread-cpu", "--out"])
        .arg(&dir)
        .args(&arm.flags)
        .output()
        .map_err(|e| AbError(format!("{}: {e}", arm.binary.display())))?;
    if !o.status.success() {
        return Err(AbError(format!(
            "arm {} round {round}: {}",
            arm.name,
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    let run = Run::read(&dir).map_err(|e| AbError(e.to_string()))?;
    Ok(timings(&run))
}

/// The rule for one of `measures` judged together: the level divided
/// among them, so a variant's false-alarm rate stays at most `alpha`.
fn per_measure(rule: &PairedRule, measures: usize) -> PairedRule {
    PairedRule {
        alpha: rule.alpha / measures.max(1) as f64,
        ..*rule
    }
}

/// The variant `a`'s outcome from its per-round ratios to the control
/// (`row group/measure` -> variant / control).
fn outcome(s: &AbSettings, a: usize, ratios: &[Timings], last: bool) -> ArmOutcome {
    let keys: Vec<&String> = ratios
        .first()
        .map(|r| r.keys().collect())
        .unwrap_or_default();
    let rule = per_measure(&s.rule, keys.len());
    let mut checks = BTreeMap::new();
    for k in keys {
        let xs: Vec<f64> = ratios.iter().filter_map(|r| r.get(k).copied()).collect();
        if let Some(c) = judge(&xs, &rule) {
            checks.insert(k.clone(), c);
        }
    }
    let any = |v: PairedVerdict| checks.values().any(|c| c.verdict == v);
    let verdict = if any(PairedVerdict::Regressed) {
        "regression"
    } else if !checks.is_empty() && !any(PairedVerdict::Undecided) {
        "pass"
    } else if last {
        "inconclusive"
    } else {
        "undecided"
    };
    ArmOutcome {
        arm: s.arms[a].name.clone(),
        verdict,
        rounds: ratios.len(),
        checks,
    }
}

type Timings = BTreeMap<String, f64>;

/// `variant / sqrt(before * after)` per measure all three have.
pub fn sandwiched_ratio(before: &Timings, variant: &Timings, after: &Timings) -> Timings {
    variant
        .iter()
        .filter_map(|(k, v)| {
            let (b, a) = (before.get(k)?, after.get(k)?);
            let control = (b * a).sqrt();
            (control > 0.0).then(|| (k.clone(), v / control))
        })
        .collect()
}

/// Runs rounds until every variant is decided or `max_rounds`; the outcomes.
pub fn compare(s: &AbSettings) -> Result<Vec<ArmOutcome>, AbError> {
    if s.arms.len() < 2 {
        return Err(AbError(
            "give a control and at least one variant (--arm)".into(),
        ));
    }
    std::fs::create_dir_all(&s.out).map_err(|e| AbError(format!("{}: {e}", s.out.display())))?;
    let n = s.arms.len();
    let mut ratios: Vec<Vec<Timings>> = vec![Vec::new(); n];
    let mut decided: Vec<Option<ArmOutcome>> = vec![None; n];
    for round in 0..s.max_rounds {
        // The undecided variants, rotated by one each round.
        let mut open: Vec<usize> = (1..n).filter(|a| decided[*a].is_none()).collect();
        let len = open.len();
        open.rotate_left(round % len);
        let mut control = run_arm(s, &s.arms[0], round, 0)?;
        for (i, a) in open.iter().enumerate() {
            let variant = run_arm(s, &s.arms[*a], round, 0)?;
            let after = run_arm(s, &s.arms[0], round, i + 1)?;
            ratios[*a].push(sandwiched_ratio(&control, &variant, &after));
            control = after;
        }
        let last = round + 1 == s.max_rounds;
        for a in open {
            let o = outcome(s, a, &ratios[a], last);
            if o.verdict != "undecided" {
                decided[a] = Some(o);
            }
        }
        if decided.iter().skip(1).all(Option::is_some) {
            let o: Vec<ArmOutcome> = decided.into_iter().flatten().collect();
            write_json(&s.out, &o)?;
            return Ok(o);
        }
    }
    unreachable!("the last round decides every variant")
}

fn write_json(dir: &Path, o: &[ArmOutcome]) -> Result<(), AbError> {
    let p = dir.join("ab.json");
    let text = serde_json::to_string_pretty(o).expect("serialisable");
    std::fs::write(&p, text).map_err(|e| AbError(format!("{}: {e}", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pairs: &[(&str, f64)]) -> Timings {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_sandwiched_ratio_cancels_a_linear_drift() {
        // The machine slows by 20% per run; the variant is 10% slower.
        let before = t(&[("r/verify_us", 100.0), ("r/draft_us", 50.0)]);
        let variant = t(&[("r/verify_us", 120.0 * 1.1), ("r/draft_us", 60.0)]);
        let after = t(&[("r/verify_us", 144.0), ("r/draft_us", 72.0)]);
        let r = sandwiched_ratio(&before, &variant, &after);
        assert!((r["r/verify_us"] - 1.1).abs() < 1e-12, "{r:?}");
        assert!((r["r/draft_us"] - 1.0).abs() < 1e-12, "{r:?}");
        let partial = sandwiched_ratio(&before, &t(&[("r/verify_us", 1.0)]), &t(&[]));
        assert!(
            partial.is_empty(),
            "a measure the control lacks is not judged"
        );
    }
}
