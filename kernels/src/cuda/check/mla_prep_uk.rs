//! The latent attention's preparation and `W_UK^T` in one launch
//! (`mla_prep_uk`, its product one output a warp and `MLA_HEAD_DOTS` side by
//! side) against the two launches it replaces (`mla_prep`, then
//! `mla_head_linear` one output a warp, into the same query rows): every
//! output bit for bit.

use super::mla::{rope_inv_freq, MLA_ODD_SHAPE};
use super::{differing, download, random, row_recorder, upload, CheckRow};
use crate::cuda::{
    mla_head_linear, mla_prep, mla_prep_uk, Gpu, GpuElement, GpuError, HeadProduct, HeadStrides,
    MlaPrepInputs, MlaRope, MlaShape, MLA_HEAD_DOTS,
};
use rand_chacha::ChaCha8Rng;

/// DeepSeek-V2-Lite's latent widths and a small odd shape, at 1, 6 and 70
/// rows: the query rows and cache entries of both forms must match exactly.
pub(super) fn check_mla_prep_uk<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let shapes = [
        MlaShape {
            heads: 16,
            lora: 512,
            rope: 64,
            nope: 128,
            v_dim: 128,
        },
        MLA_ODD_SHAPE,
    ];
    for sh in shapes {
        for rows in [1usize, 6, 70] {
            // Outputs side by side only over whole 16-byte slices (the
            // launch takes one a warp otherwise).
            let slices = [sh.nope, sh.nope + sh.rope]
                .iter()
                .all(|v| v.is_multiple_of(16 / T::BYTES));
            let forms: &[usize] = if slices { &[1, MLA_HEAD_DOTS] } else { &[1] };
            for &dots in forms {
                let differ = compare::<T>(gpu, rng, sh, rows, dots)?;
                let mut row = row_recorder::<T>(rows_out);
                row(
                    "mla_prep_uk",
                    format!(
                        "{rows} rows, {} heads, lora {} + rope {}, nope {}, {dots} outputs a warp: differing values against mla_prep + W_UK",
                        sh.heads, sh.lora, sh.rope, sh.nope
                    ),
                    differ as f64,
                    0.0,
                );
            }
        }
    }
    Ok(())
}

/// Outputs (query rows, then cache entries) where the one launch (`dots`
/// outputs a warp in its product) and the two (one a warp) differ, on fresh
/// random inputs.
fn compare<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    sh: MlaShape,
    rows: usize,
    dots: usize,
) -> Result<usize, GpuError> {
    let s = &gpu.stream;
    let (nh, d, qk) = (sh.heads, sh.entry(), sh.nope + sh.rope);
    let (q, _) = upload::<T>(gpu, &random(rng, rows * nh * qk, 1.0))?;
    let (ckv, _) = upload::<T>(gpu, &random(rng, rows * d, 1.0))?;
    let (kv_norm, _) = upload::<T>(gpu, &random(rng, sh.lora, 1.0))?;
    let scale = 1.0 / (sh.nope as f32).sqrt();
    let (w_ukt, _) = upload::<T>(gpu, &random(rng, nh * sh.lora * sh.nope, scale))?;
    let inv_freq = s.clone_htod(&rope_inv_freq(sh.rope))?;
    let positions: Vec<i32> = (0..rows as i32).map(|r| 100 + 3 * r).collect();
    // Entries in reverse, one pool row left empty before them.
    let entries: Vec<i32> = (0..rows as i32).rev().map(|r| r + 1).collect();
    let inputs = MlaPrepInputs {
        q: &q,
        q_stride: nh * qk,
        ckv: &ckv,
        ckv_offset: 0,
        ckv_stride: d,
        kv_norm: (&kv_norm, 1e-6),
        positions: &s.clone_htod(&positions)?,
        entries: &s.clone_htod(&entries)?,
    };
    let rope = MlaRope {
        inv_freq: &inv_freq,
        interleave: true,
        factor: 1.3,
    };
    let mut qcat = [
        s.alloc_zeros::<T>(rows * nh * d)?,
        s.alloc_zeros::<T>(rows * nh * d)?,
    ];
    let mut pool = [
        s.alloc_zeros::<T>((rows + 1) * d)?,
        s.alloc_zeros::<T>((rows + 1) * d)?,
    ];
    let [q0, q1] = &mut qcat;
    let [p0, p1] = &mut pool;
    mla_prep(gpu, q0, p0, 0, &inputs, rope, sh)?;
    // W_UK^T with its strides written out here, not through mla_uk: the
    // reference does not share the launch's own stride arithmetic.
    let qs = HeadStrides {
        row: nh * qk,
        head: qk,
    };
    let cs = HeadStrides {
        row: nh * d,
        head: d,
    };
    let product = HeadProduct {
        rows,
        heads: nh,
        n: sh.lora,
        k: sh.nope,
    };
    mla_head_linear(gpu, q0, cs, &q, qs, &w_ukt, product, 1)?;
    mla_prep_uk(gpu, q1, p1, 0, &inputs, rope, sh, &w_ukt, dots)?;
    Ok(differing(&download(gpu, q0)?, &download(gpu, q1)?)
        + differing(&download(gpu, p0)?, &download(gpu, p1)?))
}
