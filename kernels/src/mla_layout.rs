//! How the latent attention splits a row's key list (`cuda::mla_attention`,
//! `mla_split.cu`, `mla_mma.cu`). Plain arithmetic, so it is tested without
//! a GPU: a row's splits must come from its own key count alone (never from
//! the batch), cover every key once, and stay few for long rows.

/// Splits the FMA latent attention gives a row at most (`MLA_MAX_SPLITS`
/// in `mla_split.cu`): a row of more than `chunk x MLA_MAX_SPLITS` keys
/// walks several chunks per split with a running max and sum, so that a
/// long row's partials and their merge stay small.
pub const MLA_MAX_SPLITS: usize = 32;

/// Splits the tensor-core latent attention may give a row at most
/// (`MLA_MMA_MAX_SPLITS` in `mla_mma.cu`: its merge's shared weights).
pub const MLA_MMA_MAX_SPLITS: usize = 128;

/// How a form of the latent attention splits a row's key list into runs of
/// whole chunks: `chunks_per_split = max(min_chunks, ceil(chunks / cap))`
/// and as many splits as that takes, so a row has at most `cap` splits of
/// at least `min_chunks` chunks (the last one possibly shorter), all from
/// its own key count. Fewer, longer splits write fewer partials (a split's
/// 16-head partial is 32 KB of f32 against 37 KB of bf16 cache a chunk);
/// more, shorter ones put more of the GPU on a long row at batch 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlaSplits {
    /// Splits a row has at most.
    pub cap: usize,
    /// Chunks a split walks at least (where the row has that many).
    pub min_chunks: usize,
}

impl MlaSplits {
    /// The FMA form's rule (and a prefill's on tensor cores): one chunk
    /// a split up to [`MLA_MAX_SPLITS`] chunks.
    pub const FMA: MlaSplits = MlaSplits {
        cap: MLA_MAX_SPLITS,
        min_chunks: 1,
    };

    /// `(chunks per split, splits)` of a row of `keys` keys with chunks of
    /// `chunk` keys (the kernels' `mla_split_tiles`). A row of no keys has
    /// one empty split.
    pub fn row(self, keys: usize, chunk: usize) -> (usize, usize) {
        let chunks = keys.div_ceil(chunk);
        let tiles = chunks.div_ceil(self.cap).max(self.min_chunks).max(1);
        (tiles, chunks.div_ceil(tiles).max(1))
    }

    /// Splits of a launch over key lists of at most `max_keys` keys: the
    /// most any row of at most `max_keys` keys has ([`MlaSplits::row`] is
    /// not monotonic: with the FMA rule 32 splits at 32 chunks of keys, 17
    /// at one key more), so every row of the launch fits.
    pub fn launch(self, max_keys: usize, chunk: usize) -> usize {
        let chunks = max_keys.div_ceil(chunk);
        chunks
            .div_ceil(self.min_chunks.max(1))
            .clamp(1, self.cap.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: [MlaSplits; 5] = [
        MlaSplits::FMA,
        MlaSplits {
            cap: 128,
            min_chunks: 1,
        },
        MlaSplits {
            cap: 128,
            min_chunks: 2,
        },
        MlaSplits {
            cap: 64,
            min_chunks: 4,
        },
        MlaSplits {
            cap: 8,
            min_chunks: 2,
        },
    ];

    #[test]
    fn a_rows_splits_cover_its_keys_once_and_never_pass_the_cap() {
        for rule in RULES {
            for chunk in [16, 32] {
                for keys in (0..5000).chain([8192, 32768, 131_072, 1_000_003]) {
                    let (tiles, splits) = rule.row(keys, chunk);
                    assert!((1..=rule.cap).contains(&splits), "{rule:?} {keys} keys");
                    assert!(tiles >= rule.min_chunks, "{rule:?} {keys} keys");
                    // The splits' key ranges [s * tiles * chunk, ...) cover every key,
                    // and the last split is not empty (no split beyond the keys).
                    assert!(splits * tiles * chunk >= keys, "{rule:?} {keys} keys");
                    assert!(
                        keys == 0 || (splits - 1) * tiles * chunk < keys,
                        "{rule:?} {keys} keys"
                    );
                }
            }
        }
    }

    #[test]
    fn the_fma_rule_keeps_one_chunk_per_split_up_to_32_chunks() {
        let fma = MlaSplits::FMA;
        for keys in 1..=32 * 32 {
            assert_eq!(fma.row(keys, 32), (1, keys.div_ceil(32)));
        }
        assert_eq!(fma.row(1025, 32), (2, 17));
        // A launch with a 1025-key row also holds a 1024-key row's 32 splits.
        assert_eq!(fma.launch(1025, 32), 32);
        assert_eq!(fma.row(8192, 32), (8, 32));
    }

    #[test]
    fn a_wider_rule_spreads_a_long_row_over_more_splits() {
        let wide = MlaSplits {
            cap: 128,
            min_chunks: 2,
        };
        // 8192 keys: 256 chunks, two a split, 128 splits (the FMA rule: 8 a split, 32).
        assert_eq!(wide.row(8192, 32), (2, 128));
        assert_eq!(wide.row(2048, 32), (2, 32));
        assert_eq!(wide.row(33, 32), (2, 1));
        assert_eq!(wide.row(32768, 32), (8, 128));
    }

    #[test]
    fn a_launch_holds_every_shorter_row() {
        for rule in RULES {
            for chunk in [16, 32] {
                for max_keys in [1, 31, 32, 33, 1000, 1024, 1025, 5000, 8192, 40000] {
                    let launch = rule.launch(max_keys, chunk);
                    assert!(launch <= rule.cap);
                    for keys in 0..=max_keys {
                        assert!(
                            rule.row(keys, chunk).1 <= launch,
                            "{rule:?} {keys} of {max_keys}"
                        );
                    }
                }
            }
        }
    }
}
