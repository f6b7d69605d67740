//! Checks of SiLU-and-multiply: gate and up as two tensors, and as the
//! halves of a fused gate|up row (the interleaved layout is checked with
//! the linear that produces it, `linear.rs`).

use super::{download, normwise_error, random, row_recorder, tolerance, upload, CheckRow};
use crate::cpu;
use crate::cuda::{silu_mul, silu_mul_rows, GateUpLayout, Gpu, GpuElement, GpuError};
use rand_chacha::ChaCha8Rng;

/// SiLU and multiply over three MLP rows of Llama-3-8B.
pub(super) fn check_silu_mul<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let n = 14336 * 3;
    let (g, mut g_h) = upload::<T>(gpu, &random(rng, n, 4.0))?;
    let (u, u_h) = upload::<T>(gpu, &random(rng, n, 2.0))?;
    let mut out = gpu.stream.alloc_zeros::<T>(n)?;
    silu_mul(gpu, &mut out, &g, &u)?;
    cpu::silu_and_mul(&mut g_h, &u_h);
    row(
        "silu_mul",
        format!("{n}"),
        normwise_error(&download(gpu, &out)?, &g_h),
        tolerance::<T>(),
    );
    Ok(())
}

/// Fused gate|up SiLU, gate and up as the row's halves.
pub(super) fn check_silu_mul_fused<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let (rows, inner) = (3, 1000);
    let (gu, gu_h) = upload::<T>(gpu, &random(rng, rows * 2 * inner, 4.0))?;
    let mut o = gpu.stream.alloc_zeros::<T>(rows * inner)?;
    silu_mul_rows(gpu, &mut o, &gu, rows, inner, GateUpLayout::Halves)?;
    let mut want = Vec::new();
    for r in 0..rows {
        let mut g = gu_h[r * 2 * inner..r * 2 * inner + inner].to_vec();
        cpu::silu_and_mul(&mut g, &gu_h[r * 2 * inner + inner..(r + 1) * 2 * inner]);
        want.extend(g);
    }
    row(
        "silu_mul_fused",
        format!("{rows} x 2 x {inner}"),
        normwise_error(&download(gpu, &o)?, &want),
        tolerance::<T>(),
    );
    Ok(())
}
