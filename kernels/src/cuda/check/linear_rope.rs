//! Checks of the q|k|v projection with the RoPE epilogue
//! (`linear_rope.cu`): bit for bit against the projection followed by
//! `qkv_rope_append`, for 1-16 rows (one and two token tiles), k in
//! several slices, with and without a bias, two head widths.

use super::{differing, download, random, row_recorder, upload, CheckRow};
use crate::cuda::{qkv_rope_append, Gpu, GpuElement, GpuError, LinearLayer, QkvLayout, RopeAppend};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The fused launch against the two launches, q and both pools compared.
pub(super) fn check_linear_qkv_rope<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    if T::SUFFIX != "bf16" {
        return Ok(());
    }
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    // (heads, kv heads, head width, k): k in 4, 2, 1 and 8 slices
    // (mma_k_parts of these shapes).
    let shapes = [
        (8, 2, 128, 1024),
        (4, 2, 64, 512),
        (4, 2, 64, 256),
        (4, 1, 128, 4096),
    ];
    for (heads, kvh, hd, k) in shapes {
        let layout = QkvLayout {
            heads,
            kv_heads: kvh,
            head_dim: hd,
        };
        let n = (heads + 2 * kvh) * hd;
        let (kvw, entries) = (kvh * hd, 80);
        let layer = entries * kvw;
        let (w, _) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
        let (bias, _) = upload::<T>(gpu, &random(rng, n, 0.5))?;
        let inv: Vec<f32> = (0..hd / 2)
            .map(|i| 10000f32.powf(-2.0 * i as f32 / hd as f32))
            .collect();
        let inv = s.clone_htod(&inv)?;
        let mut differ = 0;
        for with_bias in [false, true] {
            let proj = LinearLayer::new(gpu, &w, with_bias.then_some(&bias), k, n);
            for m in [1usize, 5, 8, 12, 16] {
                if !proj.fuses_rope(m, layout) {
                    return Err(GpuError::Shape(format!(
                        "check_linear_qkv_rope: {m} rows of ({n} x {k}) should take the RoPE epilogue"
                    )));
                }
                let (x, _) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
                let pos: Vec<i32> = (0..m).map(|_| rng.random_range(0..30000)).collect();
                let entry: Vec<i32> = (0..m as i32).map(|r| 2 * r + 3).collect();
                let (pos, entry) = (s.clone_htod(&pos)?, s.clone_htod(&entry)?);
                // Two launches.
                let mut qkv = s.alloc_zeros::<T>(m * n)?;
                proj.rows(&mut qkv, &x, m)?;
                let (mut q_a, mut k_a, mut v_a) = (
                    s.alloc_zeros::<T>(m * heads * hd)?,
                    s.alloc_zeros::<T>(2 * layer)?,
                    s.alloc_zeros::<T>(2 * layer)?,
                );
                qkv_rope_append(
                    gpu, &mut q_a, &mut k_a, &mut v_a, &qkv, &pos, &inv, &entry, layer, layout,
                    None,
                )?;
                // One.
                let (mut q_b, mut k_b, mut v_b) = (
                    s.alloc_zeros::<T>(m * heads * hd)?,
                    s.alloc_zeros::<T>(2 * layer)?,
                    s.alloc_zeros::<T>(2 * layer)?,
                );
                proj.qkv_rope(
                    &x,
                    m,
                    RopeAppend {
                        q_out: &mut q_b,
                        k_pool: &mut k_b,
                        v_pool: &mut v_b,
                        positions: &pos,
                        inv_freq: &inv,
                        entry: &entry,
                        pool_offset: layer,
                        layout,
                    },
                )?;
                for (a, b) in [(&q_a, &q_b), (&k_a, &k_b), (&v_a, &v_b)] {
                    differ += differing(&download(gpu, a)?, &download(gpu, b)?);
                }
            }
        }
        row(
            "linear_qkv_rope",
            format!(
                "{heads}/{kvh} heads of {hd}, k {k}, rows 1-16, with and without bias: one launch vs the projection + qkv_rope_append (q, k and v pools)"
            ),
            differ as f64,
            0.0,
        );
    }
    Ok(())
}
