//! How the warpgroup-mma linear (`cuda::LinearLayer::wg`, `linear_wg.cu`,
//! sm_90a) lays out a launch. Plain arithmetic, tested without a GPU: the k
//! split is [`mma_k_parts`]'s (the shape's, never the rows'), so a row's
//! bits are those of the engine's other bf16 linears; the rest only moves
//! data.

use crate::mma_layout::{mma_k_parts, MMA_PIPELINED_TILES_MAX_ROWS};
use crate::tile_layout::{TILES_LONG_SLICE, TILES_WIDE_COLUMNS};

/// The layouts `linear_wg.cu` is compiled for: (warpgroups per block,
/// tokens per block, 32-wide k chunks per stage, stages, early transpose,
/// producer warpgroup).
/// Deeper pipelines (6-8 stages, or 128 k a stage) and 128-token tiles were
/// slower for every Llama-3.1-8B projection at 16-384 rows on an H200 (fewer
/// blocks fit a multiprocessor; results/h200/wgmma-2026-12-04/call3) and
/// are not built; nor are the producer forms of one warpgroup x 32 tokens in
/// six stages, in three stages, or in three stages of 128 k, never the
/// fastest at 48-384 rows on an H100 (results/h200/deep-2026-12-06, calls
/// 2-7).
pub const WG_VARIANTS: [(usize, usize, usize, usize, bool, bool); 22] = [
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
    (1, 64, 2, 4, false, true),
    (2, 64, 2, 4, false, true),
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
    /// beats the engine's other forms ([`crate::tile_layout::MmaForm`] and
    /// the small-row kernel's eight tiles), else `None`: past 32 rows, with
    /// a producer warpgroup ([`WgLaunch::producer`]), two consumer
    /// warpgroups x 64 tokens, but x 32 at 65-96 rows, and qkv (narrow, k in
    /// at most two long slices) one x 32 at 49-64 and two x 64 at 65-96; o
    /// (k in short slices) past 64 rows (two x 32 at 65-96, two x 64 past
    /// 96). Read off
    /// cold-weight timings of every Llama-3.1-8B projection at 48-384 rows
    /// on an H100 once the tiled end (`tiles_store`) was a compact loop
    /// (`specula-gpu-check --wgmma-timing`, results/h200/deep-2026-12-06,
    /// call 7), us against the form run before: qkv 29.7 / 37.5 at 48 rows,
    /// 41.4 / 52.0 at 96; gate|up 94.4 / 108.6 at 48, 128.0 / 158.8 at 96;
    /// down 55.0 / 72.0 at 48, 55.0 / 61.6 (eight tiles) at 64; o 32.2 /
    /// 42.3 at 96, on par at 64 (23.0); o past 96 rows (results/h200/
    /// reach-2026-12-06, call 1) 34.4 / 50.6 at 128, 68.7 / 131.7 at 384
    /// (the looped small-row kernel). The history: results/h200/wgmma-2026-12-04
    /// (the first rule, the early transpose), narrow64-2026-12-06 (not at
    /// 9-32 rows), deep-2026-12-06 (the producer form, calls 2-6).
    /// `SPECULA_WG_PRODUCER=0` runs each layout's early-transpose (or plain)
    /// form instead.
    pub fn for_shape(m: usize, k: usize, n: usize) -> Option<WgLaunch> {
        let parts = mma_k_parts(k, n);
        let wide = n >= TILES_WIDE_COLUMNS;
        let long = k / parts >= TILES_LONG_SLICE;
        let qkv = !wide && long && parts <= 2;
        let with = |wgs, bm| {
            Some(WgLaunch {
                producer: true,
                ..WgLaunch::new(parts, wgs, bm)
            })
        };
        if m <= MMA_PIPELINED_TILES_MAX_ROWS {
            return None;
        }
        if !(wide || long) {
            // o: the small-row kernel's eight tiles to 64 rows (23.0 us at
            // 64, on par), 2x32 at 65-96 (32.2 against 42.3 us at 96), 2x64
            // past 96 (68.7 against 131.7 us at 384).
            return match m {
                ..=64 => None,
                65..=96 => with(2, 32),
                _ => with(2, 64),
            };
        }
        match m {
            49..=64 if qkv => with(1, 32),
            65..=96 if !qkv => with(2, 32),
            _ => with(2, 64),
        }
    }

    /// The same tile without the producer warpgroup
    /// (`SPECULA_WG_PRODUCER=0`): a producer layout as the early-transpose
    /// layout of that tile, or where that is not compiled, the plain one.
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
    fn every_8b_projection_past_32_rows_takes_its_measured_wgmma_layout() {
        let wg = |m, k, n| WgLaunch::for_shape(m, k, n);
        let shape = |l: Option<WgLaunch>| l.map(|l| (l.wgs, l.bm, l.producer));
        let (qkv, o, gate_up, down, lm_head) = (
            (4096, 6144),
            (4096, 4096),
            (4096, 28_672),
            (14_336, 4096),
            (4096, 128_256),
        );
        for (k, n) in [qkv, o, gate_up, down, lm_head] {
            for m in [1, 8, 9, 16, 17, 32] {
                assert!(wg(m, k, n).is_none(), "{m} rows of {n} x {k}");
            }
        }
        // o: the small-row kernel to 64 rows, 2x32 at 65-96, 2x64 past.
        for m in [33, 64] {
            assert!(wg(m, o.0, o.1).is_none(), "o at {m} rows");
        }
        assert_eq!(shape(wg(65, o.0, o.1)), Some((2, 32, true)));
        assert_eq!(shape(wg(96, o.0, o.1)), Some((2, 32, true)));
        assert_eq!(shape(wg(97, o.0, o.1)), Some((2, 64, true)));
        assert_eq!(shape(wg(384, o.0, o.1)), Some((2, 64, true)));
        for (k, n) in [gate_up, down, lm_head] {
            for (m, want) in [
                (33, (2, 64)),
                (64, (2, 64)),
                (65, (2, 32)),
                (96, (2, 32)),
                (97, (2, 64)),
            ] {
                assert_eq!(
                    shape(wg(m, k, n)),
                    Some((want.0, want.1, true)),
                    "{m} rows of {n} x {k}"
                );
            }
        }
        for (m, want) in [
            (33, (2, 64)),
            (48, (2, 64)),
            (49, (1, 32)),
            (64, (1, 32)),
            (65, (2, 64)),
            (384, (2, 64)),
        ] {
            assert_eq!(
                shape(wg(m, qkv.0, qkv.1)),
                Some((want.0, want.1, true)),
                "qkv at {m} rows"
            );
        }
    }

    /// The kernel names `linear_wg.cu` and `linear_wg_producer.cu`
    /// instantiate (`LINEAR_WG(...)`, `LINEAR_WG_PRODUCER(...)` lines).
    fn instantiated_kernels() -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        for (src, producer) in [
            (include_str!("cuda/linear_wg.cu"), false),
            (include_str!("cuda/linear_wg_producer.cu"), true),
        ] {
            let mac = if producer {
                "LINEAR_WG_PRODUCER("
            } else {
                "LINEAR_WG("
            };
            for line in src.lines().filter(|l| l.starts_with(mac)) {
                let args: Vec<&str> = line[mac.len()..line.len() - 1]
                    .split(',')
                    .map(str::trim)
                    .collect();
                let tag = if producer { "p" } else { args[5] };
                names.insert(format!(
                    "linear_wg_{}_{}_{}_{}{tag}_bf16",
                    args[0], args[1], args[2], args[3]
                ));
            }
        }
        names
    }

    #[test]
    fn the_rust_variant_list_and_the_cuda_instantiations_name_the_same_kernels() {
        let listed: std::collections::BTreeSet<String> =
            WgLaunch::variants(1).map(|l| l.kernel()).collect();
        assert_eq!(listed.len(), WG_VARIANTS.len(), "a variant listed twice");
        assert_eq!(listed, instantiated_kernels());
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
