//! How the resident-token warpgroup-mma linear (`cuda::LinearLayer::wgr`,
//! `linear_wgr.cu`, sm_90a) lays out a launch: blocks of `wgs` x 64 output
//! columns x `bm` tokens, the block's tokens resident in shared memory
//! `window` chunks of 32 k at a time, each warp's weights streamed into its
//! registers `chunks` chunks a stage. Plain arithmetic, tested without a
//! GPU: k in [`mma_k_parts`]'s slices (the shape's, never the rows'), so a
//! row's bits are those of the engine's other bf16 linears.

use crate::mma_layout::mma_k_parts;

/// The layouts `linear_wgr.cu` is compiled for: (warpgroups per block,
/// tokens per block, 32-wide k chunks a register stage).
pub const WGR_VARIANTS: [(usize, usize, usize); 6] = [
    (1, 32, 8),
    (2, 32, 8),
    (1, 64, 8),
    (2, 64, 8),
    (1, 64, 4),
    (2, 64, 4),
];

/// Token windows the timings try, bytes of shared memory at most (of an
/// H100/H200's 227 KiB a block): the whole slice where it fits one block a
/// multiprocessor, or a third of that for two or three blocks.
pub const WGR_WINDOW_BYTES: [usize; 2] = [200 << 10, 72 << 10];

/// One launch of the resident-token warpgroup-mma linear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgrLaunch {
    /// Slices of k (1, 2, 4 or 8): [`mma_k_parts`] of the weight's shape.
    pub parts: usize,
    /// Warpgroups per block, 64 output columns each.
    pub wgs: usize,
    /// Tokens per block (the wgmma N: 32 or 64).
    pub bm: usize,
    /// 32-wide k chunks of weights a register stage.
    pub chunks: usize,
    /// 32-wide k chunks of tokens resident at a time: the whole slice, or
    /// a multiple of `chunks`.
    pub window: usize,
}

impl WgrLaunch {
    /// The layout for a `[n, k]` weight with `wgs` warpgroups, `bm` tokens
    /// and `chunks` a stage, its token window the whole k slice if that
    /// fits `window_bytes` of shared memory, else the most whole stages
    /// that do (at least one).
    pub fn new(
        k: usize,
        n: usize,
        wgs: usize,
        bm: usize,
        chunks: usize,
        window_bytes: usize,
    ) -> Self {
        Self::sliced(mma_k_parts(k, n), k, wgs, bm, chunks, window_bytes)
    }

    /// [`WgrLaunch::new`] with k in `parts` slices (the checks try every
    /// split; the engine's is the shape's).
    pub fn sliced(
        parts: usize,
        k: usize,
        wgs: usize,
        bm: usize,
        chunks: usize,
        window_bytes: usize,
    ) -> Self {
        let slice = k / parts / 32;
        let fits = (window_bytes / (bm * 64)).max(chunks);
        let window = if slice <= fits {
            slice
        } else {
            fits - fits % chunks
        };
        WgrLaunch {
            parts,
            wgs,
            bm,
            chunks,
            window,
        }
    }

    /// The layout `SPECULA_LINEAR_WGR=1` gives `m` rows (33-64) of a
    /// `[n, k]` weight: 64 tokens, eight chunks a stage, the largest window,
    /// two warpgroups a block unless that leaves fewer blocks than about one
    /// a multiprocessor (qkv's 48 column tiles x 2 slices). Unmeasured in
    /// the step: a guess to compare.
    pub fn for_rows(m: usize, k: usize, n: usize) -> WgrLaunch {
        let parts = mma_k_parts(k, n);
        let wgs = if n.div_ceil(128) * parts * m.div_ceil(64) >= 120 {
            2
        } else {
            1
        };
        WgrLaunch::new(k, n, wgs, 64, 8, WGR_WINDOW_BYTES[0])
    }

    /// Every compiled layout for a `[n, k]` weight, in each window size of
    /// [`WGR_WINDOW_BYTES`] that differs.
    pub fn variants(k: usize, n: usize) -> Vec<WgrLaunch> {
        Self::variants_sliced(mma_k_parts(k, n), k, &WGR_WINDOW_BYTES)
    }

    /// Every compiled layout with k in `parts` slices, in each of
    /// `window_bytes` that gives another window.
    pub fn variants_sliced(parts: usize, k: usize, window_bytes: &[usize]) -> Vec<WgrLaunch> {
        let mut v: Vec<WgrLaunch> = Vec::new();
        for &(wgs, bm, chunks) in &WGR_VARIANTS {
            for &bytes in window_bytes {
                let l = WgrLaunch::sliced(parts, k, wgs, bm, chunks, bytes);
                if !v.contains(&l) {
                    v.push(l);
                }
            }
        }
        v
    }

    /// Whether `linear_wgr.cu` has this layout's kernel and its window is
    /// whole stages (or the whole slice).
    pub fn compiled(&self, k: usize) -> bool {
        let slice = k / self.parts / 32;
        WGR_VARIANTS.contains(&(self.wgs, self.bm, self.chunks))
            && self.window >= 1
            && (self.window >= slice || self.window.is_multiple_of(self.chunks))
    }

    /// The kernel's name.
    pub fn kernel(&self) -> String {
        format!("linear_wgr_{}_{}_{}_bf16", self.wgs, self.bm, self.chunks)
    }

    /// Output columns per block.
    pub fn columns(&self) -> usize {
        64 * self.wgs
    }

    /// Dynamic shared memory of a block, bytes: the token window, or the
    /// slices' partial sums that reuse it, whichever is larger.
    pub fn shared_bytes(&self) -> usize {
        let window = self.window * self.bm * 64;
        let partials = self.bm / 2 * 128 * self.wgs * 4;
        window.max(partials)
    }

    /// Short name for tables: `wgr/P/WGSxBM/cC/wW` (W: window chunks).
    pub fn label(&self) -> String {
        format!(
            "wgr/{}/{}x{}/c{}/w{}",
            self.parts, self.wgs, self.bm, self.chunks, self.window
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 8B projections (k, n) the kernel is for.
    const SHAPES: [(usize, usize); 4] =
        [(4096, 6144), (4096, 4096), (14_336, 4096), (4096, 28_672)];

    #[test]
    fn a_window_is_the_whole_slice_where_it_fits_else_whole_stages() {
        // o: k in four slices of 1024 (32 chunks): 64 tokens x 32 chunks = 128 KiB.
        let o = WgrLaunch::new(4096, 4096, 2, 64, 8, 200 << 10);
        assert_eq!((o.parts, o.window), (4, 32));
        assert_eq!(o.shared_bytes(), 128 << 10);
        // down: slices of 3584 (112 chunks) do not fit: 50 chunks fit, 48 whole stages.
        let down = WgrLaunch::new(14_336, 4096, 1, 64, 8, 200 << 10);
        assert_eq!((down.parts, down.window), (4, 48));
        let small = WgrLaunch::new(14_336, 4096, 1, 64, 8, 72 << 10);
        assert_eq!(small.window, 16);
        for (k, n) in SHAPES {
            for l in WgrLaunch::variants(k, n) {
                assert!(l.compiled(k), "{l:?}");
                assert!(l.shared_bytes() <= 227 << 10, "{l:?}");
                assert_eq!(l.parts, mma_k_parts(k, n), "{l:?}");
            }
        }
    }

    #[test]
    fn the_partial_sums_fit_a_small_window() {
        // 16 chunks of 32 tokens = 32 KiB; two warpgroups' partials 32 x 256 x 4 = 32 KiB.
        let l = WgrLaunch {
            parts: 4,
            wgs: 2,
            bm: 32,
            chunks: 8,
            window: 8,
        };
        assert_eq!(l.shared_bytes(), 16 * 256 * 4);
        assert!(l.compiled(4096) && !WgrLaunch { window: 12, ..l }.compiled(4096));
    }
}
