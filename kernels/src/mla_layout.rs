//! How the latent attention splits a row's key list (`cuda::mla_attention`,
//! `mla_split.cu`, `mla_mma.cu`). Plain arithmetic, so it is tested without
//! a GPU: a row's splits must come from its own key count alone (never from
//! the batch), cover every key once, and stay few for long rows.

/// Splits the latent attention (either form) gives a row at most: a row of more than
/// `chunk x MLA_MAX_SPLITS` keys walks several chunks per split with a
/// running max and sum (`MLA_MAX_SPLITS` in `mla_split.cu`), so that a long
/// row's partials and their merge stay small.
pub const MLA_MAX_SPLITS: usize = 32;

/// `(chunks per split, splits)` of a row of `keys` keys in either form
/// with chunks of `chunk` keys: one chunk per split up to `MLA_MAX_SPLITS`
/// chunks, else `ceil(keys / (chunk x MLA_MAX_SPLITS))` chunks per split
/// (the kernels' own rule, `mla_split_tiles` in `mla_split.cu`). A row of no keys has one empty
/// split.
pub fn mla_row_splits(keys: usize, chunk: usize) -> (usize, usize) {
    let tiles = keys.div_ceil(chunk * MLA_MAX_SPLITS).max(1);
    (tiles, keys.div_ceil(chunk * tiles).max(1))
}

/// Splits of a launch over key lists of at most `max_keys` keys: the most
/// any row of at most `max_keys` keys has ([`mla_row_splits`] is not
/// monotonic: 32 splits at 32 chunks of keys, 17 at one key more), so every
/// row of the launch fits. Both forms (FMA, tensor cores) split by this rule.
pub fn mla_launch_splits(max_keys: usize, chunk: usize) -> usize {
    max_keys.div_ceil(chunk).clamp(1, MLA_MAX_SPLITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_splits_cover_its_keys_once_and_never_pass_the_cap() {
        for chunk in [16, 32] {
            for keys in (0..5000).chain([8192, 32768, 131_072, 1_000_003]) {
                let (tiles, splits) = mla_row_splits(keys, chunk);
                assert!(
                    (1..=MLA_MAX_SPLITS).contains(&splits),
                    "{keys} keys: {splits}"
                );
                // The splits' key ranges [s * tiles * chunk, ...) cover every key,
                // and the last split is not empty (no split beyond the keys).
                assert!(splits * tiles * chunk >= keys, "{keys} keys");
                assert!(
                    keys == 0 || (splits - 1) * tiles * chunk < keys,
                    "{keys} keys"
                );
            }
        }
    }

    #[test]
    fn rows_of_up_to_32_chunks_keep_one_chunk_per_split() {
        for keys in 1..=32 * 32 {
            assert_eq!(mla_row_splits(keys, 32), (1, keys.div_ceil(32)));
        }
        assert_eq!(mla_row_splits(1025, 32), (2, 17));
        // A launch with a 1025-key row also holds a 1024-key row's 32 splits.
        assert_eq!(mla_launch_splits(1025, 32), 32);
        assert_eq!(mla_row_splits(8192, 32), (8, 32));
    }

    #[test]
    fn a_launch_holds_every_shorter_row() {
        for chunk in [16, 32] {
            for max_keys in [1, 31, 32, 33, 1000, 1024, 1025, 5000, 8192, 40000] {
                let launch = mla_launch_splits(max_keys, chunk);
                for keys in 0..=max_keys {
                    assert!(
                        mla_row_splits(keys, chunk).1 <= launch,
                        "{keys} of {max_keys}"
                    );
                }
            }
        }
    }
}
