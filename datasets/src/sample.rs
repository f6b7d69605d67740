//! Deterministic sampling: SplitMix64 plus a partial Fisher–Yates shuffle.
//!
//! The generator is SplitMix64 (Steele, Lea and Flood, 2014; the reference
//! constants of Vigna's `splitmix64.c`), written here so that the stream
//! depends on nothing but the seed: pure wrapping `u64` arithmetic, identical
//! on every machine, platform and version of this crate's dependencies.
//! Bounded draws use Lemire's multiply-shift with rejection, so they carry no
//! modulo bias.
//!
//! [`sample_indices`] runs the first `k` steps of a Fisher–Yates shuffle. The
//! first `k` steps do not depend on how many steps follow, so with one seed a
//! sample of 10 is always contained in the sample of 20.

/// The SplitMix64 pseudo-random generator.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..bound` (`bound` must be positive; 0 yields 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        // Lemire, "Fast Random Integer Generation in an Interval" (2019).
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(bound);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// `k` distinct indices drawn uniformly from `0..n`, in draw order, fixed by
/// `seed`. Returns all of `0..n` (shuffled) when `k >= n`.
pub fn sample_indices(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let k = k.min(n);
    let mut idx: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::new(seed);
    for i in 0..k {
        let span = (n - i) as u64;
        let j = i + rng.below(span) as usize;
        idx.swap(i, j);
    }
    idx.truncate(k);
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_reference_stream() {
        // Reference outputs of splitmix64.c seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SplitMix64::new(7);
        for bound in [1u64, 2, 3, 10, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(r.below(bound) < bound);
            }
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn indices_are_distinct_nested_and_fixed() {
        let a = sample_indices(100, 20, 42);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 20);
        assert!(sorted.iter().all(|&i| i < 100));
        assert_eq!(sample_indices(100, 20, 42), a);
        assert_eq!(&sample_indices(100, 10, 42)[..], &a[..10]);
        assert_ne!(sample_indices(100, 20, 43), a);
        assert_eq!(sample_indices(5, 9, 1).len(), 5);
    }
}
