//! How the warpgroup-mma linear (`cuda::LinearLayer::wg`, `linear_wg.cu`,
//! sm_90a) lays out a launch. Plain arithmetic, tested without a GPU: the k
//! split is [`mma_k_parts`]'s (the shape's, never the rows'), so a row's
//! bits are those of the engine's other bf16 linears; the rest only moves
//! data.

use crate::mma_layout::{mma_k_parts, MMA_PIPELINED_MAX_ROWS};
use crate::tile_layout::{TILES_LONG_SLICE, TILES_WIDE_COLUMNS};

/// The layouts `linear_wg.cu` is compiled for: (warpgroups per block,
/// tokens per block, 32-wide k chunks per stage, stages, early transpose,
/// producer warpgroup).
/// Deeper pipelines (6-8 stages, or 128 k a stage) and 128-token tiles were
/// slower for every Llama-3.1-8B projection at 16-384 rows on an H200 (fewer
/// blocks fit a multiprocessor; results/h200/wgmma-2026-12-04/call3) and
/// are not built.
pub const WG_VARIANTS: [(usize, usize, usize, usize, bool, bool); 25] = [
    (1, 16, 2, 4, false, false),
    (2, 16, 2, 4, false, false),
    (1, 32, 2, 4, false, false),
    (2, 32, 2, 4, false, false),
    (1, 64, 2, 4, false, false),
    (2, 64, 2, 4, false, false),
    (1, 16, 2, 3, false, false),
    (1, 32, 2, 3, false, false),
    (1, 64, 2, 3, false, false),
    (2, 64, 2, 3, false, false),
    (1, 16, 2, 4, true, false),
    (1, 32, 2, 4, true, false),
    (1, 64, 2, 4, true, false),
    (2, 64, 2, 4, true, false),
    (1, 64, 2, 5, true, false),
    (2, 64, 2, 5, true, false),
    (1, 16, 2, 4, false, true),
    (1, 32, 2, 4, false, true),
    (1, 32, 2, 6, false, true),
    (1, 64, 2, 4, false, true),
    (2, 64, 2, 4, false, true),
    (1, 32, 4, 3, false, true),
    (1, 32, 2, 3, false, true),
    (2, 32, 2, 4, false, true),
    (2, 64, 2, 3, false, true),
];

/// Blocks below which [`WgLaunch::every`] gives each block one
/// warpgroup (64 columns) rather than two: about one per multiprocessor of
/// an H100/H200.
const WG_TARGET_BLOCKS: usize = 132;

/// One launch of the warpgroup-mma linear: blocks of `wgs` x 64 output
/// columns x `bm` tokens, k in `parts` slices summed by the blocks of one
/// cluster, stages of `chunks` x 32 k, `stages` deep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgLaunch {
    /// Slices of k (1, 2, 4 or 8): [`mma_k_parts`] of the weight's shape.
    pub parts: usize,
    /// Warpgroups per block, 64 output columns each.
    pub wgs: usize,
    /// Tokens per block (the wgmma N: 16, 32 or 64).
    pub bm: usize,
    /// 32-wide k chunks per pipeline stage.
    pub chunks: usize,
    /// Pipeline stages in shared memory.
    pub stages: usize,
    /// Two wgmma token tiles, the next stage's tokens transposed while this
    /// stage's steps run (one barrier a stage, not two).
    pub early: bool,
    /// A warpgroup of its own streams the stages in and transposes their
    /// tokens while the `wgs` others run the steps (`linear_wg_producer.cu`;
    /// never `early`).
    pub producer: bool,
}

impl WgLaunch {
    /// The layout for any `m` rows of a `[n, k]` weight (the
    /// `SPECULA_LINEAR_WG=1` path, every linear past one token tile): the
    /// smallest token tile holding the rows up to 64, tiles of 64 past that,
    /// two warpgroups a block unless that leaves the GPU short of blocks,
    /// with a producer warpgroup where that layout is compiled.
    pub fn every(m: usize, k: usize, n: usize) -> WgLaunch {
        let parts = mma_k_parts(k, n);
        let bm = match m {
            0..=16 => 16,
            17..=32 => 32,
            _ => 64,
        };
        let blocks = n.div_ceil(128) * parts * m.div_ceil(bm);
        let wgs = if blocks < WG_TARGET_BLOCKS { 1 } else { 2 };
        let producer = WgLaunch {
            producer: true,
            ..WgLaunch::new(parts, wgs, bm)
        };
        if producer.compiled() {
            producer
        } else {
            WgLaunch::new(parts, wgs, bm)
        }
    }

    /// The layout for `m` rows of a `[n, k]` weight where the wgmma linear
    /// beats the engine's other forms ([`crate::tile_layout::MmaForm`]),
    /// else `None`. Read off cold-weight timings of every Llama-3.1-8B and
    /// EAGLE-3 draft projection at 16-384 rows on an H200 (`specula-gpu-check
    /// --wgmma-timing`, results/h200/wgmma-2026-12-04/call4), then held
    /// against the 8B decode step and synthetic speedup at batch 1-64 in
    /// the same run as the engine without it (call 4 and call 5):
    /// - a wide weight (at least [`TILES_WIDE_COLUMNS`] outputs) past 48
    ///   rows, two warpgroups x 64 tokens with the early transpose (gate|up
    ///   77 against 99 us at 64 rows, 369 against 509 at 384; the LM head
    ///   1496 against 1908 at 384). Not at 17-48 rows: alone on par with the
    ///   tiled kernel, in the step slower (batch 32 decode 7818 against
    ///   6189 us, batch 8 verify of 48 rows 1.95 against 1.76 decode steps).
    ///   Nor at 9-16 rows any more: two warpgroups x 16 tokens took the
    ///   batch-16 step from 5742 to 5447 us on the H200 of
    ///   results/h200/wgmma-2026-12-04, but against today's small-row kernel
    ///   the step is faster without them (results/h200/narrow64-2026-12-06:
    ///   5866-5881 against 6032-6074 us on an H100);
    /// - a narrow weight over long k slices (at least [`TILES_LONG_SLICE`])
    ///   past 48 rows: one warpgroup x 32 tokens, three stages, up to 96 rows
    ///   (qkv 46 against 64 us at 96 rows, down 69 against 85 at 64), two x
    ///   64 with the early transpose past that (down 285 against 458 us at
    ///   384, qkv 144 against 220); but k in two slices (qkv) at 49-64 rows
    ///   four stages with the early transpose: with the stream held before
    ///   the timing and 21 launches back to back, 34.3-34.4 against
    ///   39.9-40.4 us a launch at 64 rows in two calls
    ///   (results/h200/narrow-2026-12-05, calls 1 and 3; at 96 rows three
    ///   stages stay ahead, and down at 64 rows keeps them: 64.1 against
    ///   65.6); in the 8B batch-64 step 8138, 8188 against 8351, 8333 us
    ///   (results/h200/share-2026-12-05/call5, interleaved);
    /// - a narrow weight over short slices (o, k in slices of 1024) never:
    ///   the small-row kernel stays faster (27 against 29-39 us at 64 rows).
    ///
    /// Where the early transpose was picked, the producer-warpgroup form
    /// now runs ([`WgLaunch::producer`]; results/h200/deep-2026-12-06,
    /// call 2, H100): down at 128 rows 116.0 against 124.8 us alone, qkv at
    /// 64 rows 27.2 against 32.5 us a launch in a stream, gate|up at 64 on
    /// par; the 8B step at batch 128 13777 / 13797 against 14746 / 14702
    /// us, batch 64 8462 against 8564 / 8579, the verify of batch 64 x 6
    /// rows 3.50 against 3.89 decode steps. The three-stage 1x32 layout
    /// stays (its producer form was slower: qkv at 96 rows 49.1 against
    /// 44.0 us). At 65-96 rows wide weights and down (k in four slices)
    /// take two consumer warpgroups x 32 tokens with a producer (call 3:
    /// gate|up at 96 rows 122.8 against 137.9 us, down 88.8 against 106.3);
    /// qkv keeps the three stages (44.3 us; the verify of batch 16 x 6).
    /// (2x32 for qkv at 193-384 rows, faster alone with the old end of
    /// `tiles_store`, 122.2 against 133.6 us at 384 rows, was slower with
    /// the compact end, 107.9 against 86.7: call 6.)
    /// `SPECULA_WG_PRODUCER=0` runs the early forms instead.
    pub fn for_shape(m: usize, k: usize, n: usize) -> Option<WgLaunch> {
        let parts = mma_k_parts(k, n);
        let wide = n >= TILES_WIDE_COLUMNS;
        let long = k / parts >= TILES_LONG_SLICE;
        if m <= MMA_PIPELINED_MAX_ROWS || !(wide || long) {
            return None;
        }
        match m {
            0..=48 => None,
            49..=64 if !wide && parts <= 2 => Some(WgLaunch {
                producer: true,
                ..WgLaunch::new(parts, 1, 32)
            }),
            49..=64 if !wide => Some(WgLaunch {
                stages: 3,
                ..WgLaunch::new(parts, 1, 32)
            }),
            65..=96 if !wide && parts <= 2 => Some(WgLaunch {
                stages: 3,
                ..WgLaunch::new(parts, 1, 32)
            }),
            65..=96 => Some(WgLaunch {
                producer: true,
                ..WgLaunch::new(parts, 2, 32)
            }),
            _ => Some(WgLaunch {
                producer: true,
                ..WgLaunch::new(parts, 2, 64)
            }),
        }
    }

    /// The layout [`WgLaunch::for_shape`] picked before the producer form
    /// (`SPECULA_WG_PRODUCER=0`): a producer layout as the early
    /// transpose's of the same tile, or where that is not compiled, the
    /// plain one's.
    pub fn without_producer(self) -> WgLaunch {
        if !self.producer {
            return self;
        }
        let plain = WgLaunch {
            producer: false,
            ..self
        };
        let early = WgLaunch {
            early: true,
            ..plain
        };
        if early.compiled() {
            early
        } else {
            plain
        }
    }

    /// Four stages of 64 k, `wgs` warpgroups, `bm` tokens, k in `parts`.
    fn new(parts: usize, wgs: usize, bm: usize) -> WgLaunch {
        WgLaunch {
            parts,
            wgs,
            bm,
            chunks: 2,
            stages: 4,
            early: false,
            producer: false,
        }
    }

    /// Every compiled layout ([`WG_VARIANTS`]) with k in `parts` slices.
    pub fn variants(parts: usize) -> impl Iterator<Item = WgLaunch> {
        WG_VARIANTS.iter().map(
            move |&(wgs, bm, chunks, stages, early, producer)| WgLaunch {
                parts,
                wgs,
                bm,
                chunks,
                stages,
                early,
                producer,
            },
        )
    }

    /// Whether `linear_wg.cu` has a kernel for this layout.
    pub fn compiled(&self) -> bool {
        WG_VARIANTS.contains(&(
            self.wgs,
            self.bm,
            self.chunks,
            self.stages,
            self.early,
            self.producer,
        ))
    }

    /// The kernel's name.
    pub fn kernel(&self) -> String {
        format!(
            "linear_wg_{}_{}_{}_{}{}{}_bf16",
            self.wgs,
            self.bm,
            self.chunks,
            self.stages,
            if self.early { "e" } else { "" },
            if self.producer { "p" } else { "" }
        )
    }

    /// Output columns per block.
    pub fn columns(&self) -> usize {
        64 * self.wgs
    }

    /// Threads per block: 128 a warpgroup, the producer's included.
    pub fn threads(&self) -> usize {
        128 * (self.wgs + usize::from(self.producer))
    }

    /// Dynamic shared memory of a block, bytes: the stages' weight and
    /// token tiles, then the transposed token tile(s) the wgmma steps read.
    pub fn shared_bytes(&self) -> usize {
        let tiles = if self.early || self.producer { 2 } else { 1 };
        (self.stages * (self.columns() + self.bm) + tiles * self.bm) * self.chunks * 64
    }

    /// Short name for tables: `wg/P/WGSxBM/cC/sS` (`/e`: early transpose,
    /// `/p`: producer warpgroup).
    pub fn label(&self) -> String {
        format!(
            "wg/{}/{}x{}/c{}/s{}{}{}",
            self.parts,
            self.wgs,
            self.bm,
            self.chunks,
            self.stages,
            if self.early { "/e" } else { "" },
            if self.producer { "/p" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wgmma_layout_keeps_the_shapes_k_split_and_is_always_compiled() {
        for (k, n) in [
            (4096, 6144),
            (4096, 4096),
            (4096, 28_672),
            (14_336, 4096),
            (4096, 128_256),
            (1024, 520),
            (12_288, 4096),
            (8192, 6144),
        ] {
            for m in [
                9, 16, 17, 32, 33, 48, 49, 64, 65, 96, 128, 129, 192, 384, 4096,
            ] {
                let every = WgLaunch::every(m, k, n);
                let mut layouts = vec![every, every.without_producer()];
                if let Some(l) = WgLaunch::for_shape(m, k, n) {
                    // SPECULA_WG_PRODUCER=0 runs each picked layout so.
                    let old = l.without_producer();
                    assert_eq!((old.wgs, old.bm, old.threads()), (l.wgs, l.bm, 128 * l.wgs));
                    assert_eq!(l.threads(), 128 * (l.wgs + usize::from(l.producer)));
                    layouts.extend([l, old]);
                }
                for l in layouts {
                    assert_eq!(l.parts, mma_k_parts(k, n), "k {k} n {n} m {m}");
                    assert!(l.compiled(), "{l:?}");
                    assert!(
                        l.bm >= m.min(32) || l.bm == 16 && m <= 16,
                        "{m} rows: {l:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn wide_weights_and_long_slices_take_wgmma_and_the_o_projection_never() {
        let wg = |m, k, n| WgLaunch::for_shape(m, k, n);
        let shape = |l: Option<WgLaunch>| l.map(|l| (l.wgs, l.bm, l.stages, l.producer));
        for (k, n) in [(4096, 28_672), (4096, 128_256)] {
            for m in [8, 9, 16, 17, 32, 48] {
                assert!(wg(m, k, n).is_none(), "{m} rows");
            }
            for m in [49, 64, 97, 384, 4096] {
                assert_eq!(shape(wg(m, k, n)), Some((2, 64, 4, true)), "{m} rows");
            }
        }
        for m in [1, 9, 16, 64, 96, 384, 4096] {
            assert!(wg(m, 4096, 4096).is_none(), "o at {m} rows");
        }
        // qkv (k in 2 slices of 2048) and down (4 of 3584) past 48 rows.
        for (k, n) in [(4096, 6144), (14_336, 4096)] {
            assert!(wg(16, k, n).is_none() && wg(48, k, n).is_none());
            assert_eq!(shape(wg(97, k, n)), Some((2, 64, 4, true)));
        }
        // qkv past 96 rows on 2x64 with a producer.
        for m in [128, 193, 384] {
            let l = wg(m, 4096, 6144).expect("qkv");
            assert_eq!((l.wgs, l.bm, l.producer), (2, 64, true), "{m} rows");
        }
        // At 65-96 rows qkv keeps three stages; down and gate|up take 2x32
        // with a producer.
        for m in [65, 96] {
            assert_eq!(shape(wg(m, 4096, 6144)), Some((1, 32, 3, false)));
            assert_eq!(shape(wg(m, 14_336, 4096)), Some((2, 32, 4, true)));
            assert_eq!(shape(wg(m, 4096, 28_672)), Some((2, 32, 4, true)));
        }
        // At 49-64 rows qkv streams faster in four stages with a producer;
        // down not.
        for m in [49, 64] {
            assert_eq!(shape(wg(m, 4096, 6144)), Some((1, 32, 4, true)));
            assert_eq!(shape(wg(m, 14_336, 4096)), Some((1, 32, 3, false)));
        }
    }

    #[test]
    fn every_compiled_variant_fits_the_shared_memory_and_holds_its_partial_sums() {
        for l in WgLaunch::variants(1) {
            let (wgs, bm) = (l.wgs, l.bm);
            assert!(l.compiled(), "{l:?}");
            assert!(l.shared_bytes() <= 227 * 1024, "{l:?}");
            assert!(l.shared_bytes() >= bm / 2 * 128 * wgs * 4, "{l:?}");
            assert!(!(l.producer && l.early), "{l:?}");
            assert!(matches!(bm, 16 | 32 | 64) && matches!(wgs, 1 | 2));
        }
    }
}
