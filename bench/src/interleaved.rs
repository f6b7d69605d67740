//! Timing several cases in one run, round after round, so that a noisy
//! machine's slow spells fall on all of them alike; ratios of the medians
//! are then fair comparisons (the criterion numbers beside them are not:
//! each case is measured at a different time).

use std::time::Instant;

/// A named piece of work timed by [`medians`].
pub struct Case<'a> {
    /// Its name in the report.
    pub name: &'a str,
    /// Runs it once.
    pub run: Box<dyn FnMut() + 'a>,
}

/// The median seconds of one run of each case over `rounds` rounds; in each
/// round every case runs `per_round` times back to back, after one untimed
/// warm-up round.
pub fn medians(cases: &mut [Case<'_>], rounds: usize, per_round: usize) -> Vec<f64> {
    let mut times = vec![Vec::with_capacity(rounds); cases.len()];
    for round in 0..=rounds {
        for (case, t) in cases.iter_mut().zip(&mut times) {
            let start = Instant::now();
            for _ in 0..per_round {
                (case.run)();
            }
            if round > 0 {
                t.push(start.elapsed().as_secs_f64() / per_round as f64);
            }
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect()
}
