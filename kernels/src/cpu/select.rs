//! Token selection: argmax, top-k, softmax.

use super::exp64::sum_exp_shifted;

/// Index of the largest value; the lowest index wins a tie. `None` for an empty slice.
/// (A NaN never wins, but a NaN first element is kept: nothing is larger.)
pub fn argmax(x: &[f32]) -> Option<usize> {
    let first = *x.first()?;
    if first.is_nan() {
        return Some(0);
    }
    // The largest value over sixteen running maxima (NaN is never larger),
    // then the first element equal to it: the element the one-by-one scan
    // keeps (equal values, zeros of either sign included, never replace it).
    let mut m = [f32::NEG_INFINITY; 16];
    let mut chunks = x.chunks_exact(16);
    for c in &mut chunks {
        for (a, &b) in m.iter_mut().zip(c) {
            if b > *a {
                *a = b;
            }
        }
    }
    let mut max = m
        .iter()
        .fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
    for &b in chunks.remainder() {
        if b > max {
            max = b;
        }
    }
    x.iter().position(|&v| v == max)
}

/// The `k` largest values as `(index, value)`, largest first; ties go to the lower index.
pub fn top_k(x: &[f32], k: usize) -> Vec<(usize, f32)> {
    let cmp = |a: &usize, b: &usize| x[*b].total_cmp(&x[*a]).then(a.cmp(b));
    if k == 1 && !x.is_empty() {
        // The first of the largest under the total order, in one pass.
        let mut best = 0;
        for (i, v) in x.iter().enumerate().skip(1) {
            if v.total_cmp(&x[best]) == std::cmp::Ordering::Greater {
                best = i;
            }
        }
        return vec![(best, x[best])];
    }
    let mut idx: Vec<usize> = (0..x.len()).collect();
    let k = k.min(x.len());
    if k < idx.len() {
        idx.select_nth_unstable_by(k, cmp);
        idx.truncate(k);
    }
    idx.sort_by(cmp);
    idx.into_iter().map(|i| (i, x[i])).collect()
}

/// `log(softmax(x))`, computed in f64 for the normaliser: the sum of
/// `e^(x_i - max)` in index order, each term the bits of the library's
/// `exp` (`sum_exp_shifted`: inline where that is glibc's).
pub fn log_softmax(x: &[f32]) -> Vec<f32> {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum = sum_exp_shifted(x, max);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-by-one definitions the fast paths must agree with.
    fn argmax_scan(x: &[f32]) -> Option<usize> {
        let mut best: Option<(usize, f32)> = None;
        for (i, &v) in x.iter().enumerate() {
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((i, v));
            }
        }
        best.map(|(i, _)| i)
    }

    fn top1_sorted(x: &[f32]) -> (usize, f32) {
        let mut idx: Vec<usize> = (0..x.len()).collect();
        idx.sort_by(|a, b| x[*b].total_cmp(&x[*a]).then(a.cmp(b)));
        (idx[0], x[idx[0]])
    }

    #[test]
    fn argmax_and_top_1_are_their_one_by_one_definitions() {
        let mut seed = 3u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed >> 8
        };
        let special = [
            0.0f32,
            -0.0,
            f32::NAN,
            f32::NEG_INFINITY,
            f32::INFINITY,
            1.0,
        ];
        for n in [1usize, 2, 15, 16, 17, 33, 100, 2048] {
            for trial in 0..50 {
                // Few distinct values, so ties are common; some specials.
                let mut x: Vec<f32> = (0..n).map(|_| (next() % 7) as f32 - 3.0).collect();
                for _ in 0..trial % 4 {
                    let at = next() as usize % n;
                    x[at] = special[next() as usize % special.len()];
                }
                assert_eq!(argmax(&x), argmax_scan(&x), "argmax of {x:?}");
                let (i, v) = top_k(&x, 1)[0];
                let (j, w) = top1_sorted(&x);
                assert_eq!((i, v.to_bits()), (j, w.to_bits()), "top 1 of {x:?}");
            }
        }
        assert_eq!(argmax(&[]), None);
        assert!(top_k(&[], 1).is_empty());
    }
}
