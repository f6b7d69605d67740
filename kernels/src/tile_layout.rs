//! Which of the two tensor-core forms of the bf16 linear runs a launch
//! ([`MmaForm`]): the small-row kernel ([`MmaLaunch`]) or the tiled one
//! (`linear_tiles.cu`, [`TileLaunch`]), and how the tiled one lays out its
//! blocks. Plain arithmetic, tested without a GPU; the k split is
//! [`mma_k_parts`]'s, so a row's bits are the same in either form.

use crate::mma_layout::{mma_k_parts, MmaLaunch, MMA_PIPELINED_MAX_ROWS};

/// The block tiles (output columns x tokens) the tiled tensor-core linear
/// (`linear_tiles.cu`) is compiled for.
pub const TILE_SHAPES: [(usize, usize); 7] = [
    (64, 16),
    (128, 16),
    (64, 32),
    (128, 32),
    (64, 64),
    (128, 64),
    (128, 128),
];

/// Blocks below which [`TileLaunch::for_shape`] takes 64-column tiles (about
/// one per multiprocessor of an H100/H200).
const TILE_TARGET_BLOCKS: usize = 128;

/// One launch of the tiled tensor-core linear: blocks of `bn` output columns
/// x `bm` tokens, k in `parts` slices summed by the blocks of one cluster.
/// Only `parts` changes the arithmetic ([`mma_k_parts`], the shape's);
/// the tile follows the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileLaunch {
    /// Slices of k (1, 2, 4 or 8), as [`mma_k_parts`] gives them.
    pub parts: usize,
    /// Output columns per block.
    pub bn: usize,
    /// Tokens per block.
    pub bm: usize,
}

impl TileLaunch {
    /// The tile for `m` rows of a `[n, k]` weight: the smallest token tile
    /// holding the rows (up to 64; 128 from 256 rows on), and 128 columns
    /// unless that leaves the GPU short of blocks.
    pub fn for_shape(m: usize, k: usize, n: usize) -> TileLaunch {
        let parts = mma_k_parts(k, n);
        let bm = match m {
            0..=16 => 16,
            17..=32 => 32,
            33..=255 => 64,
            _ => 128,
        };
        let blocks = n.div_ceil(128) * parts * m.div_ceil(bm);
        let bn = if bm < 128 && blocks < TILE_TARGET_BLOCKS {
            64
        } else {
            128
        };
        TileLaunch { parts, bn, bm }
    }
}

/// Which kernel runs a bf16 tensor-core linear of `m` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmaForm {
    /// `linear_mma.cu` (weights straight into registers): one token tile.
    Small(MmaLaunch),
    /// `linear_tiles.cu` (tiles through shared memory): more rows.
    Tiles(TileLaunch),
}

/// Rows from which [`MmaForm::by_rows`] takes the tiled kernel (the
/// `SPECULA_LINEAR_TILES=1` comparison path).
pub const TILES_MIN_ROWS: usize = 33;

/// Output columns from which [`MmaForm::for_shape`] tiles a weight of more
/// than [`TILES_WIDE_MIN_ROWS`] rows: enough 128-column tiles (128 from
/// 16384) to fill the GPU.
pub const TILES_WIDE_COLUMNS: usize = 16_384;

/// Rows up to which [`MmaForm::for_shape`] keeps even a wide weight in the
/// small kernel. At 16 rows: alone the 16-token tile was faster (gate|up 68
/// against 78 us, the LM head 272 against 291), but a decode step at batch
/// 16 took 6.85 ms with it against 5.91 ms without (same H200 run, two
/// repeats; in a graph of the step's linears the 16-token tile lost only
/// with programmatic dependent launches, 6.93 against 4.69 ms). At 17-32
/// rows the 32-token tile made the batch-32 step faster in 2026-12-03
/// (6.25 against 6.80 ms), but against today's small-row kernel it is
/// slower: 6546 against 6685-6723 us, and with the tiles' stage loop
/// worked out once 6510 against 6586-6615 (H100, results/h200/
/// narrow64-2026-12-06; 6522 against 6710-6772 in ../tables-2026-12-06/
/// call3). The 64-token tile still pays past 32 rows (batch 64: 12.15 ms
/// without it against 8.54-8.60).
pub const TILES_WIDE_MIN_ROWS: usize = 32;

/// Rows from which [`MmaForm::for_shape`] tiles a narrow weight whose k
/// slices are at least [`TILES_LONG_SLICE`] wide.
pub const TILES_NARROW_MIN_ROWS: usize = 128;

/// Shortest k slice over which [`MmaForm::for_shape`] tiles a narrow weight:
/// a shorter slice is too few stages for the tiles' pipeline and cluster
/// combine to pay.
pub const TILES_LONG_SLICE: usize = 2048;

/// Rows past which [`MmaForm::for_shape`] tiles every weight (the rule
/// before the per-shape measurements, which went to 512 rows).
pub const TILES_ALL_ABOVE_ROWS: usize = 512;

impl MmaForm {
    /// The faster form for `m` rows of a `[n, k]` weight; both give a row the
    /// same bits, so the choice is speed alone. Measured on an H200 for the
    /// Llama-3.1-8B projections (`kernels/lab/rows_lab.cu`, median of 21
    /// launches with cold weights, results/h200/rows-lab-2026-12-03): the
    /// tiles stream a wide weight faster past 16 rows alone (gate|up 28672 x 4096
    /// at 32 / 64 rows: 73 / 100 us against the small kernel's 89 / 165; at
    /// 384 rows 521 against 950; the LM head at 64 rows 363 against 638),
    /// while a narrow one has too few column tiles to fill the GPU and stays
    /// faster in the small kernel (o 4096 x 4096, k in 4 slices of 1024: 25
    /// against 41 us at 64 rows, 132 against 202 at 384) unless its k slices
    /// are long, from 128 rows (qkv, slices of 2048: 66 against 80 us at 128
    /// rows, 215 against 300 at 512; down, 3584: 187 against 242 at 192, 573
    /// against 627 at 512; both within 5% of the small kernel at 256). Past
    /// [`TILES_ALL_ABOVE_ROWS`] (prefill chunks, unmeasured) every weight is
    /// tiled, as before. In a decode step of the 8B shape on the H200 the
    /// tiles past 16 rows took batch 32 from 6.80 to 6.25 ms and batch 64 from
    /// 12.47 to 9.66 ms (results/h200/rows-rule-2026-12-03); since the
    /// small-row kernel's pipelined token tiles they pay past 32 rows only
    /// ([`TILES_WIDE_MIN_ROWS`]). On an H100/H200
    /// the warpgroup-mma linear ([`crate::wg_layout::WgLaunch::for_shape`])
    /// takes the shapes and rows where it is faster before this rule is asked.
    pub fn for_shape(m: usize, k: usize, n: usize) -> MmaForm {
        let parts = mma_k_parts(k, n);
        let wide = n >= TILES_WIDE_COLUMNS && m > TILES_WIDE_MIN_ROWS;
        let long = m >= TILES_NARROW_MIN_ROWS && k / parts >= TILES_LONG_SLICE;
        if m > TILES_ALL_ABOVE_ROWS || (m > MMA_PIPELINED_MAX_ROWS && (wide || long)) {
            MmaForm::Tiles(TileLaunch::for_shape(m, k, n))
        } else {
            MmaForm::Small(MmaLaunch::for_shape(m, k, n))
        }
    }

    /// The small kernel below [`TILES_MIN_ROWS`] rows, tiles from there on,
    /// whatever the shape (the first tiled kernel's rule, kept for comparison).
    pub fn by_rows(m: usize, k: usize, n: usize) -> MmaForm {
        if m < TILES_MIN_ROWS {
            MmaForm::Small(MmaLaunch::for_shape(m, k, n))
        } else {
            MmaForm::Tiles(TileLaunch::for_shape(m, k, n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_weights_are_tiled_past_32_rows_and_narrow_ones_only_over_long_slices() {
        let tiled = |m, k, n| matches!(MmaForm::for_shape(m, k, n), MmaForm::Tiles(_));
        // Llama-3.1-8B: gate|up and the LM head are wide, qkv, o and down narrow.
        for (k, n) in [(4096, 28_672), (4096, 128_256)] {
            assert!(!tiled(8, k, n) && !tiled(16, k, n) && !tiled(32, k, n) && tiled(33, k, n));
            assert!(tiled(64, k, n) && tiled(384, k, n));
        }
        for m in [1, 16, 64, 127] {
            assert!(!tiled(m, 4096, 6144) && !tiled(m, 4096, 4096) && !tiled(m, 14_336, 4096));
        }
        // qkv (slices of 2048) and down (3584) from 128 rows; o (1024) not to 512.
        for m in [128, 192, 384, 512] {
            assert!(tiled(m, 4096, 6144) && tiled(m, 14_336, 4096) && !tiled(m, 4096, 4096));
        }
        assert!(!tiled(512, 4096, 4096) && tiled(513, 4096, 4096) && tiled(4096, 4096, 4096));
    }
}
