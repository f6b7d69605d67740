//! The gate's absolute step times on a GPU: for run folders whose rows ran
//! on CUDA (`backend = cuda`), the mean CUDA-event time per call of the
//! prefill, draft and verify spans (kernels.csv, over the group's repeats),
//! current against baseline within `gpu_span_tolerance` (default 3%). On
//! one GPU model these times are steady to about 1% between runs (no other
//! job shares the device's clocks), so absolute time is judged there, and
//! a slower target forward shows even when the same-run speedup cannot.

use super::check::{Check, NotJudged, Shown, Status, Values};
use super::pace::Pairs;
use super::policy::{Measure, Policy};
use crate::run_folder::{Record, Run};

/// The spans judged.
pub const SPANS: [&str; 3] = ["prefill", "draft", "verify"];

/// Whether every row of `run` ran on CUDA.
pub fn on_gpu(run: &Run) -> bool {
    !run.rows.is_empty() && run.rows.iter().all(|r| r.text("backend") == "cuda")
}

/// Mean microseconds per call of `span` over `rows` of `run` (`None`: never recorded).
fn mean_us(run: &Run, rows: &[&Record], span: &str) -> Option<(f64, f64)> {
    let (mut n, mut us) = (0.0, 0.0);
    for r in rows {
        if let Some(t) = run.spans.get(r.key()).and_then(|s| s.get(span)) {
            n += t.count;
            us += t.total_us;
        }
    }
    (n > 0.0).then(|| (us / n, n))
}

/// Status of a time per call: slower beyond `tol` regresses, faster improves.
pub fn time_status(baseline_us: f64, current_us: f64, tol: f64) -> Status {
    // The instruction counts' rule: a relative change beyond the tolerance.
    super::costs::cost_status(baseline_us, current_us, tol)
}

/// The span checks of one row group (`pairs`), when both runs ran on CUDA.
pub fn checks(policy: &Policy, b: &Run, c: &Run, label: &str, pairs: &Pairs) -> Vec<Check> {
    if !policy.checks(Measure::GpuSpans) || !on_gpu(b) || !on_gpu(c) {
        return Vec::new();
    }
    let tol = policy.gpu_span_tolerance;
    let bs: Vec<&Record> = pairs.iter().map(|p| p.0).collect();
    let cs: Vec<&Record> = pairs.iter().map(|p| p.1).collect();
    let (bd, cd) = (bs[0].text("device"), cs[0].text("device"));
    let mut out = Vec::new();
    for span in SPANS {
        let Some((bu, bn)) = mean_us(b, &bs, span) else {
            continue;
        };
        let measure = format!("gpu_us/{span}");
        let mut check = Check {
            row: label.to_string(),
            measure,
            status: Status::NotJudged,
            baseline: Values::Numbers(vec![bu]),
            current: Values::Numbers(Vec::new()),
            change: None,
            interval: None,
            tolerance: Some(tol),
            not_judged: None,
            shown: Shown {
                baseline: format!("{bu:.1} us (n={bn})"),
                current: "-".into(),
                change: String::new(),
            },
        };
        if bd != cd {
            check.not_judged = Some(NotJudged::DeviceDiffers);
            check.shown.change = format!("another GPU: {bd} vs {cd}");
        } else if let Some((cu, cn)) = mean_us(c, &cs, span) {
            let change = cu / bu - 1.0;
            check.status = time_status(bu, cu, tol);
            check.current = Values::Numbers(vec![cu]);
            check.change = Some(change);
            check.shown.current = format!("{cu:.1} us (n={cn})");
            check.shown.change = format!("{:+.2}% (tolerance {:.1}%)", 100.0 * change, 100.0 * tol);
        } else {
            check.not_judged = Some(NotJudged::NoSpans);
            check.shown.change = "no span times in the current run (spans off?)".into();
        }
        out.push(check);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slower_span_beyond_the_tolerance_regresses() {
        assert_eq!(time_status(300.0, 306.0, 0.03), Status::Pass);
        assert_eq!(time_status(300.0, 312.0, 0.03), Status::Regressed);
        assert_eq!(time_status(300.0, 288.0, 0.03), Status::Improved);
    }
}
