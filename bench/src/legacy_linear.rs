//! The CPU linear kernel as it was before the SIMD kernels (issue 19), kept
//! for one release so that benchmarks can show the gain beside it: one
//! scalar dot product per output element (eight interleaved partial sums,
//! no FMA), f32 weights (bfloat16 checkpoints widened to f32 at load), rayon
//! tasks that each allocate their own output block.

use rayon::prelude::*;

/// Work (multiply-adds) below which [`linear`] stayed on one thread.
const PARALLEL_MIN_WORK: usize = 1 << 19;
/// Output columns handed to one rayon task.
const COLUMNS_PER_TASK: usize = 32;

/// The old fixed-order dot product.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let body = a.len() / 8 * 8;
    for (x, y) in a[..body].chunks_exact(8).zip(b[..body].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0f32;
    for (x, y) in a[body..].iter().zip(&b[body..]) {
        tail += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// The old `out = x w^T`: `x: [m, k]`, `w: [n, k]` in f32, `out: [m, n]`.
pub fn linear(x: &[f32], m: usize, k: usize, w: &[f32], n: usize, out: &mut [f32]) {
    assert_eq!(x.len(), m * k, "linear: x is not [m, k]");
    assert_eq!(w.len(), n * k, "linear: w is not [n, k]");
    assert_eq!(out.len(), m * n, "linear: out is not [m, n]");
    let column_block = |j0: usize, cols: usize, dst: &mut [f32]| {
        for (jj, wj) in w[j0 * k..(j0 + cols) * k].chunks_exact(k).enumerate() {
            for i in 0..m {
                dst[i * cols + jj] = dot(&x[i * k..(i + 1) * k], wj);
            }
        }
    };
    if m * n * k < PARALLEL_MIN_WORK || n < 2 * COLUMNS_PER_TASK {
        column_block(0, n, out);
        return;
    }
    let blocks: Vec<(usize, Vec<f32>)> = (0..n)
        .step_by(COLUMNS_PER_TASK)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|j0| {
            let cols = COLUMNS_PER_TASK.min(n - j0);
            let mut dst = vec![0f32; m * cols];
            column_block(j0, cols, &mut dst);
            (j0, dst)
        })
        .collect();
    for (j0, dst) in blocks {
        let cols = dst.len() / m;
        for i in 0..m {
            out[i * n + j0..i * n + j0 + cols].copy_from_slice(&dst[i * cols..(i + 1) * cols]);
        }
    }
}
