//! Token selection: argmax, top-k, softmax.

/// Index of the largest value; the lowest index wins a tie. `None` for an empty slice.
pub fn argmax(x: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in x.iter().enumerate() {
        let better = match best {
            None => true,
            Some((_, b)) => v > b,
        };
        if better {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// The `k` largest values as `(index, value)`, largest first; ties go to the lower index.
pub fn top_k(x: &[f32], k: usize) -> Vec<(usize, f32)> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    let k = k.min(x.len());
    let cmp = |a: &usize, b: &usize| x[*b].total_cmp(&x[*a]).then(a.cmp(b));
    if k < idx.len() {
        idx.select_nth_unstable_by(k, cmp);
        idx.truncate(k);
    }
    idx.sort_by(cmp);
    idx.into_iter().map(|i| (i, x[i])).collect()
}

/// `log(softmax(x))`, computed in f64 for the normaliser.
pub fn log_softmax(x: &[f32]) -> Vec<f32> {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = x.iter().map(|&v| ((v - max) as f64).exp()).sum();
    let log_sum = sum.ln() as f32;
    x.iter().map(|&v| v - max - log_sum).collect()
}

/// `softmax(x / temperature)` (`temperature > 0`), normalised in f64.
pub fn softmax_with_temperature(x: &[f32], temperature: f32) -> Vec<f32> {
    assert!(
        temperature > 0.0,
        "softmax_with_temperature: temperature must be > 0"
    );
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f64> = x
        .iter()
        .map(|&v| (((v - max) / temperature) as f64).exp())
        .collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|v| (v / sum) as f32).collect()
}
