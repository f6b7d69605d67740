//! `specula ab`: a paired, interleaved timing comparison of arms (one
//! control and variants: other flags, e.g. planted `--inject-*-work-pct`
//! regressions, or another `specula` binary) on one sweep spec. Each round
//! runs every arm once as its own short `specula sweep` process, the order
//! rotating from round to round, so the arms share the machine's state of
//! that moment; per row group it reads the mean thread-CPU time per call of
//! the prefill, draft and verify spans (kernels.csv, `--span-clock
//! thread-cpu`: preemption left out) and the decode CPU time
//! per token (runs.csv), and judges each variant's per-round ratios to the
//! control with [`crate::stats::paired`]: more rounds while an interval is
//! too wide to decide, up to `max_rounds` (then inconclusive).

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

/// Timings of one process: `row group/measure` -> value (lower is better).
pub fn timings(run: &Run) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in &run.rows {
        let label = group_label(r);
        if let Some(spans) = run.spans.get(r.key()) {
            for s in ["prefill", "draft", "verify"] {
                if let Some(t) = spans.get(s).filter(|t| t.count > 0.0) {
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

fn run_arm(s: &AbSettings, arm: &Arm, round: usize) -> Result<BTreeMap<String, f64>, AbError> {
    let dir = s.out.join(format!("r{round:03}-{}", arm.name));
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

fn outcomes(s: &AbSettings, rounds: &[Vec<BTreeMap<String, f64>>], last: bool) -> Vec<ArmOutcome> {
    let mut out = Vec::new();
    for (a, arm) in s.arms.iter().enumerate().skip(1) {
        let mut checks = BTreeMap::new();
        let keys: Vec<&String> = rounds[0][0].keys().collect();
        for k in keys {
            let ratios: Vec<f64> = rounds
                .iter()
                .filter_map(|r| Some(r[a].get(k)? / r[0].get(k)?))
                .collect();
            if let Some(c) = judge(&ratios, &s.rule) {
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
        out.push(ArmOutcome {
            arm: arm.name.clone(),
            verdict,
            rounds: rounds.len(),
            checks,
        });
    }
    out
}

/// Runs rounds until every variant is decided or `max_rounds`; the outcomes.
pub fn compare(s: &AbSettings) -> Result<Vec<ArmOutcome>, AbError> {
    if s.arms.len() < 2 {
        return Err(AbError(
            "give a control and at least one variant (--arm)".into(),
        ));
    }
    std::fs::create_dir_all(&s.out).map_err(|e| AbError(format!("{}: {e}", s.out.display())))?;
    let mut rounds: Vec<Vec<BTreeMap<String, f64>>> = Vec::new();
    for round in 0..s.max_rounds {
        let n = s.arms.len();
        let mut got = vec![BTreeMap::new(); n];
        for i in 0..n {
            let a = (i + round) % n;
            got[a] = run_arm(s, &s.arms[a], round)?;
        }
        rounds.push(got);
        let last = round + 1 == s.max_rounds;
        let o = outcomes(s, &rounds, last);
        if last || o.iter().all(|a| a.verdict != "undecided") {
            write_json(&s.out, &o)?;
            return Ok(o);
        }
    }
    unreachable!("the last round returns")
}

fn write_json(dir: &Path, o: &[ArmOutcome]) -> Result<(), AbError> {
    let p = dir.join("ab.json");
    let text = serde_json::to_string_pretty(o).expect("serialisable");
    std::fs::write(&p, text).map_err(|e| AbError(format!("{}: {e}", p.display())))
}
