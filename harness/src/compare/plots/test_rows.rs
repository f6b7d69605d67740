//! Made-up matched rows for the compare plots' tests.

use crate::compare::matching::{Change, RowChange};
use crate::compare::Settings;
use crate::stats::{Bootstrap, Interval, Verdict};

/// Settings with a 5% noise threshold and 95% intervals.
pub fn settings() -> Settings {
    Settings {
        bootstrap: Bootstrap::default(),
        noise: 0.05,
    }
}

fn change(measure: &'static str, a: f64, rel: f64, interval: bool, verdict: Verdict) -> Change {
    Change {
        measure,
        a,
        b: a * (1.0 + rel),
        n_a: 3,
        n_b: 3,
        relative: rel,
        interval: interval.then_some(Interval {
            estimate: rel,
            lower: rel - 0.03,
            upper: rel + 0.03,
        }),
        verdict,
    }
}

/// A baseline within noise, a speculative row that improved, one that
/// regressed without repeats.
pub fn rows() -> Vec<RowChange> {
    let row = |label: &str, steps: usize, rel: f64, interval: bool, verdict: Verdict| {
        let mut changes = vec![
            change("tau", 2.0, 0.0, interval, Verdict::WithinNoise),
            change(
                "throughput_tok_s",
                300.0 + 40.0 * steps as f64,
                rel,
                interval,
                verdict,
            ),
        ];
        if steps > 0 {
            changes.push(change("speedup", 1.1, rel, interval, verdict));
        }
        RowChange {
            label: label.into(),
            steps,
            changes,
            verdict,
        }
    };
    vec![
        row("m.base.b1.builtin.t0", 0, 0.01, true, Verdict::WithinNoise),
        row("m.s3k1n4.b1.builtin.t0", 3, 0.2, true, Verdict::Improved),
        row("m.s5k1n6.b1.builtin.t0", 5, -0.3, false, Verdict::Regressed),
    ]
}
