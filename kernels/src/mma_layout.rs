//! How the tensor-core small-row linear (`cuda::LinearLayer::mma`) lays out a
//! launch. Plain arithmetic, so it is tested without a GPU: the k split must
//! come from the weight's shape alone (a row's reduction order may not
//! depend on the batch), and must divide k into whole 32-wide chunks.

use crate::tile_layout::TILES_WIDE_COLUMNS;

/// Column tiles x k slices below which [`mma_k_parts`] splits k further.
const MMA_TARGET_WARPS: usize = 768;

/// How many slices of k the tensor-core small-row linear sums separately for a
/// `[n, k]` weight: enough warps in flight for a narrow projection, each
/// slice at least 256 wide. A function of the shape alone, never of the
/// rows, so a row's reduction order is the same in every batch.
pub fn mma_k_parts(k: usize, n: usize) -> usize {
    k_parts_for_warps(k, n, MMA_TARGET_WARPS)
}

/// [`mma_k_parts`]' rule with `target_warps` in place of its 768 (column
/// tiles x k slices below which k splits further).
pub fn k_parts_for_warps(k: usize, n: usize, target_warps: usize) -> usize {
    let tiles = n.div_ceil(16);
    let mut parts = 1;
    while parts < 8
        && tiles * parts < target_warps
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

/// Rows up to which the small-row linear takes the pipelined kernel's
/// eight-tile layout where [`MmaLaunch::eight_tiles`] does (narrow weights).
pub const MMA_PIPELINED_EIGHT_TILES_MAX_ROWS: usize = 64;

/// Outputs from which [`MmaLaunch::for_shape`] gives the pipelined kernel
/// two column tiles a block (at least 128 blocks of 32 columns).
pub const MMA_GROUPS_MIN_COLUMNS: usize = 4096;

/// Token tiles the pipelined kernel runs `m` rows in (`linear_mma_tile1`,
/// `tile2`, `tile4`, `tile8`), or `None` past 64 rows. Past
/// [`MMA_PIPELINED_TILES_MAX_ROWS`] only in [`MmaLaunch::eight_tiles`]'s
/// layout.
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
    /// The engine launches it in stream order, not as a programmatic
    /// dependent (`cuda::mma_in_order_tiles`): so the 8B batch-64 step went
    /// from 9167-9174 to 8785-8796 us, the batch-8 verify of 48 rows from
    /// 8347-8388 to 8156-8158 (H100, results/h200/b64-2026-12-05/call3); as
    /// a dependent it made that step 15% slower (call 2).
    pub fn eight_tiles(m: usize, k: usize, n: usize) -> Option<MmaLaunch> {
        let parts = mma_k_parts(k, n);
        let wide = n >= TILES_WIDE_COLUMNS;
        if wide || pipelined_tiles(m) != Some(8) || (m > 48 && parts <= 2) {
            return None;
        }
        MmaLaunch::pipelined_for(m, parts)
    }

    /// Whether `linear_mma.cu` has a kernel for this layout: at most eight
    /// warps a block, the looped kernel for four or eight chunks, the
    /// pipelined one for a stage width [`MmaLaunch::pipelined_for`] gives.
    pub fn compiled(&self) -> bool {
        let warps = matches!(self.parts, 1 | 2 | 4 | 8)
            && self.groups >= 1
            && self.groups * self.parts <= 8;
        let stage = if self.pipelined {
            matches!(self.groups, 1 | 2) && matches!(self.chunks, 2 | 4 | 8)
        } else {
            matches!(self.chunks, 4 | 8)
        };
        warps && stage
    }

    /// Whether this layout fits `m` rows: the pipelined kernel's stage
    /// width is fixed by its token tiles ([`MmaLaunch::pipelined_for`]).
    pub fn holds(&self, m: usize) -> bool {
        !self.pipelined
            || MmaLaunch::pipelined_for(m, self.parts).is_some_and(|l| l.chunks == self.chunks)
    }

    /// This layout with two column tiles a block where it is pipelined,
    /// `groups` asks for two or more and `parts` leaves room (at most eight
    /// warps a block), else one (`linear_mma_tile{N}_g2` or `_tile{N}`).
    /// The warps of one k slice then load the same tokens together, which
    /// their multiprocessor's L1 serves once; the same bits.
    pub fn with_groups(self, groups: usize) -> MmaLaunch {
        if !self.pipelined {
            return self;
        }
        MmaLaunch {
            groups: if groups >= 2 && self.parts <= 4 { 2 } else { 1 },
            ..self
        }
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
        // Two column tiles a block there, for weights of at least
        // MMA_GROUPS_MIN_COLUMNS outputs where parts leaves room: on an H100
        // the 8B decode step at batch 1 / 8 / 32 took 5460-5466 / 5601-5607
        // / 6636-6662 us against 5480-5485 / 5677-5689 / 6692-6723 with one,
        // batch 16 the same; in eight tiles (33-64 rows) one stays faster
        // (results/h200/b64-2026-12-05/call6). On every weight the
        // DeepSeek-V2-Lite batch-1 step was 2.4% slower (call 7: its
        // narrower o, down and latent projections, half as many blocks).
        if let Some(l) =
            MmaLaunch::pipelined_for(m, parts).filter(|_| m <= MMA_PIPELINED_TILES_MAX_ROWS)
        {
            l.with_groups(if n >= MMA_GROUPS_MIN_COLUMNS { 2 } else { 1 })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile_layout::{
        MmaForm, TileLaunch, TILES_MIN_ROWS, TILES_WIDE_MIN_ROWS, TILE_SHAPES,
    };

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
                    assert!(m <= MMA_PIPELINED_TILES_MAX_ROWS && l.compiled());
                    let plain = MmaLaunch::pipelined_for(m, parts);
                    assert_eq!(Some(l), plain.map(|p| p.with_groups(l.groups)));
                    let two = parts <= 4 && n >= MMA_GROUPS_MIN_COLUMNS;
                    assert_eq!(l.groups, if two { 2 } else { 1 });
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
    fn a_higher_warp_target_splits_the_experts_until_it_is_met() {
        // DeepSeek-V2-Lite's six routed experts a token (SPECULA_MOE_WARPS).
        let (down, gate_up) = ((1408, 2048 * 6), (2048, 2816 * 6));
        assert_eq!(k_parts_for_warps(down.0, down.1, 768), 1);
        assert_eq!(k_parts_for_warps(down.0, down.1, 1056), 2);
        assert_eq!(k_parts_for_warps(gate_up.0, gate_up.1, 1056), 1);
        assert_eq!(k_parts_for_warps(gate_up.0, gate_up.1, 1536), 2);
        // Four slices of 352 (11 chunks of 32); never a slice under 256.
        assert_eq!(k_parts_for_warps(down.0, down.1, 2112), 4);
        assert_eq!(k_parts_for_warps(down.0, down.1, 6144), 4);
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
        let grouped = one.with_groups(2);
        assert!(grouped.holds(1) && grouped.compiled() && grouped.groups == 2);
        assert_eq!(
            MmaLaunch::pipelined(4).with_groups(4).groups,
            2,
            "one or two"
        );
        assert_eq!(MmaLaunch::pipelined(8).with_groups(2).groups, 1);
        assert_eq!(MmaLaunch::looped(1).with_groups(2), MmaLaunch::looped(1));
        assert!(MmaLaunch::for_shape(64, 4096, 4096).holds(64));
        let grouped_two = MmaLaunch {
            parts: 4,
            groups: 2,
            ..two
        };
        assert_eq!(MmaLaunch::for_shape(12, 4096, 4096), grouped_two);
        assert_eq!(MmaLaunch::for_shape(32, 4096, 4096), grouped_two);
        assert_eq!(
            MmaLaunch::eight_tiles(64, 4096, 4096).map(|l| l.groups),
            Some(1)
        );
        assert_eq!(
            MmaLaunch::for_shape(8, 2048, 2048).groups,
            1,
            "64 blocks: too few"
        );
        let looped = MmaLaunch::looped(4);
        assert!(!looped.pipelined && looped.holds(32) && looped.holds(200));
    }
}
