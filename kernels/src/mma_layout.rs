//! How the tensor-core small-row linear (`cuda::LinearLayer::mma`) lays out a
//! launch. Plain arithmetic, so it is tested without a GPU: the k split must
//! come from the weight's shape alone (a row's reduction order may not
//! depend on the batch), and must divide k into whole 32-wide chunks.

/// Column tiles x k slices below which [`mma_k_parts`] splits k further.
const MMA_TARGET_WARPS: usize = 768;

/// How many slices of k the tensor-core small-row linear sums separately for a
/// `[n, k]` weight: enough warps in flight for a narrow projection, each
/// slice at least 256 wide. A function of the shape alone, never of the
/// rows, so a row's reduction order is the same in every batch.
pub fn mma_k_parts(k: usize, n: usize) -> usize {
    let tiles = n.div_ceil(16);
    let mut parts = 1;
    while parts < 8
        && tiles * parts < MMA_TARGET_WARPS
        && k.is_multiple_of(64 * parts)
        && k / (2 * parts) >= 256
    {
        parts *= 2;
    }
    parts
}

/// How one tensor-core linear launch is laid out. Only `parts` changes the
/// arithmetic (it must come from the shape alone: [`mma_k_parts`]); the
/// rest trades occupancy against bytes in flight and may follow the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmaLaunch {
    /// Slices of k summed separately (1, 2, 4 or 8).
    pub parts: usize,
    /// 32-wide chunks of k whose weight loads are in flight together (4 or 8).
    pub chunks: usize,
    /// 16-column tiles per block (`groups x parts` warps, at most 8).
    pub groups: usize,
    /// `groups` 1, through the kernel that double-buffers its weight and
    /// token loads and starts the weights' before the previous kernel has
    /// finished, in [`pipelined_tiles`] token tiles: one with `chunks` 8,
    /// two or four with `chunks` 4 (two stages of every tile's operands in
    /// the registers).
    pub pipelined: bool,
}

/// Rows up to which [`MmaLaunch::for_shape`] picks the pipelined one-tile
/// kernel (one 8-token tile of the mma operand).
pub const MMA_PIPELINED_MAX_ROWS: usize = 8;

/// Rows up to which [`MmaLaunch::for_shape`] picks the pipelined kernel
/// (one, two or four token tiles): on an H100 two and four tiles took qkv,
/// o and down at 12-32 rows 3-9% under the looped kernel alone, the 8B
/// decode step at batch 16 from 6649-6678 to 6328-6338 us and at batch 32
/// from 7308-7332 to 6920-6934 us, the batch-4 verify of 24 rows from 1.21
/// to 1.18 decode steps (results/h200/pipelined-2026-12-05/call1).
pub const MMA_PIPELINED_TILES_MAX_ROWS: usize = 32;

/// Token tiles the pipelined kernel runs `m` rows in (`linear_mma_tile1`,
/// `tile2`, `tile4`, `tile8`), or `None` past 64 rows. Past
/// [`MMA_PIPELINED_TILES_MAX_ROWS`] only on request
/// (`SPECULA_MMA_PIPELINED=64`).
pub fn pipelined_tiles(m: usize) -> Option<usize> {
    match m {
        0..=8 => Some(1),
        9..=16 => Some(2),
        17..=32 => Some(4),
        33..=64 => Some(8),
        _ => None,
    }
}

impl MmaLaunch {
    /// The pipelined one-token-tile layout (at most
    /// [`MMA_PIPELINED_MAX_ROWS`] rows) with `parts` slices of k.
    pub fn pipelined(parts: usize) -> MmaLaunch {
        MmaLaunch {
            parts,
            chunks: 8,
            groups: 1,
            pipelined: true,
        }
    }

    /// The looped kernel with one column tile a block and eight chunks in
    /// flight (the 9-32-row layout before the pipelined kernel took them;
    /// `SPECULA_MMA_PIPELINED` compares the two).
    pub fn looped(parts: usize) -> MmaLaunch {
        MmaLaunch {
            parts,
            chunks: 8,
            groups: 1,
            pipelined: false,
        }
    }

    /// The pipelined layout for `m` rows ([`pipelined_tiles`]) with `parts`
    /// slices of k, or `None` past 64 rows: eight chunks a stage for one
    /// token tile, four for two or four, two for eight (what two stages of
    /// every tile's operands leave of the registers).
    pub fn pipelined_for(m: usize, parts: usize) -> Option<MmaLaunch> {
        let chunks = match pipelined_tiles(m)? {
            1 => 8,
            2 | 4 => 4,
            _ => 2,
        };
        Some(MmaLaunch {
            chunks,
            ..MmaLaunch::pipelined(parts)
        })
    }

    /// The eight-tile pipelined layout for `m` rows (33-64) of a narrow
    /// `[n, k]` weight where it was faster alone than the engine's forms on
    /// an H100 (results/h200/tile8-2026-12-05/call1: o 22.9 against 27.1 us
    /// at 64 rows, down 61.8 against 67.5, qkv 33.2 against 38.0 at 48),
    /// or `None`: a wide weight (gate|up, the LM head: the wgmma and tiled
    /// kernels stream them faster), and k in at most two slices at 49-64
    /// rows (qkv: the wgmma kernel's 32.2 against 34.3 us at 64 rows).
    /// `SPECULA_MMA_PIPELINED=64` only, until measured in the step.
    pub fn eight_tiles(m: usize, k: usize, n: usize) -> Option<MmaLaunch> {
        let parts = mma_k_parts(k, n);
        let wide = n >= TILES_WIDE_COLUMNS;
        if wide || !(33..=64).contains(&m) || (m > 48 && parts <= 2) {
            return None;
        }
        MmaLaunch::pipelined_for(m, parts)
    }

    /// Whether `linear_mma.cu` has a kernel for this layout: the looped one
    /// for four or eight chunks and at most eight warps a block, the
    /// pipelined one for a stage width [`MmaLaunch::pipelined_for`] gives.
    pub fn compiled(&self) -> bool {
        let warps = matches!(self.parts, 1 | 2 | 4 | 8)
            && self.groups >= 1
            && self.groups * self.parts <= 8;
        let stage = if self.pipelined {
            self.groups == 1 && matches!(self.chunks, 2 | 4 | 8)
        } else {
            matches!(self.chunks, 4 | 8)
        };
        warps && stage
    }

    /// Whether this layout fits `m` rows: the pipelined kernel's stage
    /// width is fixed by its token tiles ([`MmaLaunch::pipelined_for`]).
    pub fn holds(&self, m: usize) -> bool {
        !self.pipelined
            || MmaLaunch::pipelined_for(m, self.parts)
                .is_some_and(|l| l.chunks == self.chunks && l.groups == self.groups)
    }

    /// The layout the small-row linear uses for `m` rows of a `[n, k]` weight.
    pub fn for_shape(m: usize, k: usize, n: usize) -> MmaLaunch {
        let parts = mma_k_parts(k, n);
        // Measured on an H200 for every Llama-3.1-8B projection and its
        // draft's (specula-gpu-check's linear_split.csv): one token tile
        // streams fastest with its weight loads double-buffered, and so do
        // two and four (MMA_PIPELINED_TILES_MAX_ROWS); of the looped
        // kernel's layouts one column tile per block with eight chunks in
        // flight was best or within 3% of best up to 32 rows; beyond, the
        // token tiles' accumulators crowd the registers and four chunks in
        // blocks of eight warps win.
        if let Some(l) =
            MmaLaunch::pipelined_for(m, parts).filter(|_| m <= MMA_PIPELINED_TILES_MAX_ROWS)
        {
            l
        } else {
            MmaLaunch {
                parts,
                chunks: 4,
                groups: 8 / parts,
                pipelined: false,
            }
        }
    }
}

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
/// small kernel: alone the 16-token tile was faster (gate|up 68 against 78
/// us at 16 rows, the LM head 272 against 291), but a decode step at batch
/// 16 took 6.85 ms with it against 5.91 ms without (same H200 run, two
/// repeats), while the 32- and 64-token tiles made the steps of batch 32 and
/// 64 faster (6.25 against 6.80 ms, 9.66 against 12.47). In a graph of the
/// step's linears the 16-token tile lost only with programmatic dependent
/// launches (6.93 against 4.69 ms; 4.42 against 4.75 without them).
pub const TILES_WIDE_MIN_ROWS: usize = 16;

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
    /// tiles stream a wide weight faster past 16 rows (gate|up 28672 x 4096
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
    /// 12.47 to 9.66 ms (results/h200/rows-rule-2026-12-03). On an H100/H200
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

    /// Weight shapes of Llama-3.1-8B and its EAGLE-3 draft, tiny models and
    /// odd sizes.
    fn shapes() -> Vec<(usize, usize)> {
        let mut v = vec![
            (4096, 6144),
            (4096, 4096),
            (4096, 28672),
            (14336, 4096),
            (4096, 128_256),
            (12288, 4096),
            (8192, 6144),
            (4096, 32000),
        ];
        for k in [32, 64, 96, 256, 512, 768, 1000, 2048, 3072, 5120] {
            for n in [1, 7, 16, 77, 256, 520, 1000, 4096, 151_936] {
                v.push((k, n));
            }
        }
        v
    }

    #[test]
    fn the_k_split_comes_from_the_shape_alone_and_divides_k_into_chunks() {
        for (k, n) in shapes() {
            let parts = mma_k_parts(k, n);
            assert!(matches!(parts, 1 | 2 | 4 | 8), "k {k} n {n}: {parts}");
            if k % 32 == 0 {
                assert_eq!(k % (32 * parts), 0, "k {k} n {n}: {parts} parts");
            }
            for m in 1..=130 {
                let l = MmaLaunch::for_shape(m, k, n);
                assert_eq!(
                    l.parts, parts,
                    "k {k} n {n}: the split changed with {m} rows"
                );
                assert!(matches!(l.chunks, 4 | 8) && l.groups >= 1 && l.groups * l.parts <= 8);
                if l.pipelined {
                    assert!(m <= MMA_PIPELINED_TILES_MAX_ROWS && l.groups == 1);
                    assert_eq!(Some(l), MmaLaunch::pipelined_for(m, parts));
                }
                assert!(l.holds(m), "{l:?} at {m} rows");
            }
            for m in [9, 16, 17, 32, 33, 64, 65, 200, 256, 512, 1024, 4096] {
                let t = TileLaunch::for_shape(m, k, n);
                assert_eq!(
                    t.parts, parts,
                    "k {k} n {n}: tiles split k apart at {m} rows"
                );
                assert!(TILE_SHAPES.contains(&(t.bn, t.bm)), "{t:?}");
                match MmaForm::by_rows(m, k, n) {
                    MmaForm::Tiles(l) => assert!(l == t && m >= TILES_MIN_ROWS, "{m} rows"),
                    MmaForm::Small(l) => assert!(l.parts == parts && m < TILES_MIN_ROWS),
                }
                match MmaForm::for_shape(m, k, n) {
                    MmaForm::Tiles(l) => assert!(l == t && m > TILES_WIDE_MIN_ROWS, "{m} rows"),
                    MmaForm::Small(l) => assert_eq!(l, MmaLaunch::for_shape(m, k, n)),
                }
            }
        }
    }

    #[test]
    fn wide_weights_are_tiled_past_16_rows_and_narrow_ones_only_over_long_slices() {
        let tiled = |m, k, n| matches!(MmaForm::for_shape(m, k, n), MmaForm::Tiles(_));
        // Llama-3.1-8B: gate|up and the LM head are wide, qkv, o and down narrow.
        for (k, n) in [(4096, 28_672), (4096, 128_256)] {
            assert!(!tiled(8, k, n) && !tiled(16, k, n) && tiled(17, k, n));
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

    #[test]
    fn narrow_projections_split_k_and_wide_ones_do_not() {
        // The 8B target's projections, as measured in results/h200/linear_split.csv.
        assert_eq!(mma_k_parts(4096, 6144), 2, "qkv");
        assert_eq!(mma_k_parts(4096, 4096), 4, "o");
        assert_eq!(mma_k_parts(14336, 4096), 4, "down");
        assert_eq!(mma_k_parts(4096, 28672), 1, "gate|up");
        assert_eq!(mma_k_parts(4096, 128_256), 1, "lm_head");
        // Slices stay at least 256 wide.
        assert_eq!(mma_k_parts(256, 16), 1);
    }

    #[test]
    fn every_layout_the_rules_give_has_a_kernel() {
        // Regression: the eight-tile layout (two chunks a stage) was refused
        // by the launch's own check of the chunks (2026-12-05, tile8 call 1).
        for parts in [1, 2, 4, 8] {
            for m in 1..=64 {
                let l = MmaLaunch::pipelined_for(m, parts).unwrap();
                assert!(l.compiled() && l.holds(m), "{l:?} at {m} rows");
            }
            assert!(MmaLaunch::looped(parts).compiled());
        }
        for (k, n) in shapes() {
            for m in 1..=130 {
                let l = MmaLaunch::for_shape(m, k, n);
                assert!(l.compiled() && l.holds(m), "{l:?} at {m} rows");
            }
        }
        // The 8B shapes: o and down take eight tiles at 33-64 rows, qkv to 48.
        assert!(MmaLaunch::eight_tiles(64, 4096, 4096).is_some());
        assert!(MmaLaunch::eight_tiles(64, 14_336, 4096).is_some());
        assert!(MmaLaunch::eight_tiles(48, 4096, 6144).is_some());
        assert!(MmaLaunch::eight_tiles(49, 4096, 6144).is_none());
        assert!(MmaLaunch::eight_tiles(64, 4096, 28_672).is_none());
        assert!(MmaLaunch::eight_tiles(32, 4096, 4096).is_none());
        let odd = MmaLaunch {
            chunks: 2,
            ..MmaLaunch::looped(1)
        };
        assert!(!odd.compiled(), "the looped kernel has no two-chunk form");
    }

    #[test]
    fn the_pipelined_kernel_holds_one_tile_in_eight_chunks_and_two_or_four_in_four() {
        let one = MmaLaunch::pipelined(2);
        let two = MmaLaunch::pipelined_for(16, 2).unwrap();
        assert!(one.holds(8) && !one.holds(9));
        assert!(two.holds(9) && two.holds(16) && two.holds(32) && !two.holds(8) && !two.holds(33));
        assert_eq!((two.parts, two.groups, two.chunks), (2, 1, 4));
        assert_eq!(MmaLaunch::pipelined_for(32, 2), Some(two));
        assert_eq!(MmaLaunch::pipelined_for(65, 2), None);
        let eight = MmaLaunch::pipelined_for(64, 2).unwrap();
        assert_eq!(eight.chunks, 2);
        assert!(eight.holds(33) && eight.holds(64) && !eight.holds(32));
        assert!(
            !MmaLaunch::for_shape(33, 4096, 4096).pipelined,
            "past 32 rows only on request"
        );
        assert_eq!(pipelined_tiles(12), Some(2));
        assert_eq!(pipelined_tiles(17), Some(4));
        let odd = MmaLaunch { chunks: 6, ..two };
        assert!(!odd.holds(12), "no kernel holds a six-chunk stage");
        let grouped = MmaLaunch { groups: 2, ..one };
        assert!(
            !grouped.holds(1),
            "the pipelined kernel has one column tile a block"
        );
        assert!(MmaLaunch::for_shape(64, 4096, 4096).holds(64));
        assert_eq!(
            MmaLaunch::for_shape(12, 4096, 4096),
            MmaLaunch { parts: 4, ..two }
        );
        assert_eq!(
            MmaLaunch::for_shape(32, 4096, 4096),
            MmaLaunch { parts: 4, ..two }
        );
        let looped = MmaLaunch::looped(4);
        assert!(!looped.pipelined && looped.holds(32) && looped.holds(200));
    }
}
