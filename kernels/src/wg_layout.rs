//! How the warpgroup-mma linear (`cuda::LinearLayer::wg`, `linear_wg.cu`,
//! sm_90a) lays out a launch. Plain arithmetic, tested without a GPU: the k
//! split is [`mma_k_parts`]'s (the shape's, never the rows'), so a row's
//! bits are those of the engine's other bf16 linears; the rest only moves
//! data.

use crate::mma_layout::mma_k_parts;

/// The layouts `linear_wg.cu` is compiled for: (warpgroups per block,
/// tokens per block, 32-wide k chunks per stage, stages).
pub const WG_VARIANTS: [(usize, usize, usize, usize); 14] = [
    (1, 16, 2, 4),
    (1, 32, 2, 4),
    (1, 64, 2, 4),
    (1, 128, 2, 4),
    (2, 16, 2, 4),
    (2, 32, 2, 4),
    (2, 64, 2, 4),
    (2, 128, 2, 4),
    (1, 16, 4, 6),
    (1, 32, 4, 6),
    (1, 64, 2, 8),
    (1, 128, 2, 6),
    (2, 64, 2, 6),
    (2, 128, 2, 6),
];

/// Blocks below which [`WgLaunch::for_shape`] gives each block one
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
    /// Tokens per block (the wgmma N: 16, 32, 64 or 128).
    pub bm: usize,
    /// 32-wide k chunks per pipeline stage.
    pub chunks: usize,
    /// Pipeline stages in shared memory.
    pub stages: usize,
}

impl WgLaunch {
    /// The layout for `m` rows of a `[n, k]` weight: the smallest token tile
    /// holding the rows up to 64 (tiles of 64 past that: on an H200 two
    /// 64-token tiles beat one of 128 at 96-384 rows for every Llama-3.1-8B
    /// projection, results/h200/wgmma-2026-12-04), two warpgroups a block
    /// unless that leaves the GPU short of blocks, four stages of 64 k.
    pub fn for_shape(m: usize, k: usize, n: usize) -> WgLaunch {
        let parts = mma_k_parts(k, n);
        let bm = match m {
            0..=16 => 16,
            17..=32 => 32,
            _ => 64,
        };
        let blocks = n.div_ceil(128) * parts * m.div_ceil(bm);
        let wgs = if blocks < WG_TARGET_BLOCKS { 1 } else { 2 };
        WgLaunch {
            parts,
            wgs,
            bm,
            chunks: 2,
            stages: 4,
        }
    }

    /// Whether `linear_wg.cu` has a kernel for this layout.
    pub fn compiled(&self) -> bool {
        WG_VARIANTS.contains(&(self.wgs, self.bm, self.chunks, self.stages))
    }

    /// The kernel's name.
    pub fn kernel(&self) -> String {
        format!(
            "linear_wg_{}_{}_{}_{}_bf16",
            self.wgs, self.bm, self.chunks, self.stages
        )
    }

    /// Output columns per block.
    pub fn columns(&self) -> usize {
        64 * self.wgs
    }

    /// Dynamic shared memory of a block, bytes: the stages' weight and
    /// token tiles, then the transposed token tile the wgmma steps read.
    pub fn shared_bytes(&self) -> usize {
        (self.stages * (self.columns() + self.bm) + self.bm) * self.chunks * 64
    }

    /// Short name for tables: `wg/P/WGSxBM/cC/sS`.
    pub fn label(&self) -> String {
        format!(
            "wg/{}/{}x{}/c{}/s{}",
            self.parts, self.wgs, self.bm, self.chunks, self.stages
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
        ] {
            for m in [9, 16, 17, 32, 33, 64, 65, 96, 128, 129, 384, 4096] {
                let l = WgLaunch::for_shape(m, k, n);
                assert_eq!(l.parts, mma_k_parts(k, n), "k {k} n {n} m {m}");
                assert!(l.compiled(), "{l:?}");
                assert!(l.bm >= m.min(64), "{m} rows in tiles of {}", l.bm);
                // The partial sums of the cluster combine reuse the stages.
                assert!(l.shared_bytes() >= l.bm / 2 * 128 * l.wgs * 4, "{l:?}");
            }
        }
    }

    #[test]
    fn every_compiled_variant_fits_the_shared_memory_and_holds_its_partial_sums() {
        for (wgs, bm, chunks, stages) in WG_VARIANTS {
            let l = WgLaunch {
                parts: 1,
                wgs,
                bm,
                chunks,
                stages,
            };
            assert!(l.shared_bytes() <= 227 * 1024, "{l:?}");
            assert!(l.shared_bytes() >= bm / 2 * 128 * wgs * 4, "{l:?}");
            assert!(matches!(bm, 16 | 32 | 64 | 128) && matches!(wgs, 1 | 2));
        }
    }
}
