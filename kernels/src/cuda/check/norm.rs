//! Check of RMSNorm with the residual add fused: the stored sum, then the
//! normalised output.

use super::{download, normwise_error, random, round, row_recorder, tolerance, upload, CheckRow};
use crate::cpu;
use crate::cuda::{rms_norm_residual, Gpu, GpuElement, GpuError};
use rand_chacha::ChaCha8Rng;

/// RMSNorm of 9 rows of 4096 after a residual add.
pub(super) fn check_rms_norm_residual<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (rows, h) = (9, 4096);
    let (mut resid, resid_h) = upload::<T>(gpu, &random(rng, rows * h, 2.0))?;
    let (delta, delta_h) = upload::<T>(gpu, &random(rng, rows * h, 2.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, h, 1.5))?;
    let mut out = s.alloc_zeros::<T>(rows * h)?;
    rms_norm_residual(gpu, &mut out, &mut resid, Some(&delta), &w, 1e-5, h)?;
    let mut sum: Vec<f32> = resid_h
        .iter()
        .zip(&delta_h)
        .map(|(a, b)| round::<T>(a + b))
        .collect();
    let (got_sum, got) = (download(gpu, &resid)?, download(gpu, &out)?);
    row(
        "residual_add",
        format!("{rows} x {h}"),
        normwise_error(&got_sum, &sum),
        tolerance::<T>(),
    );
    cpu::rms_norm(&mut sum, h, &w_h, 1e-5);
    row(
        "rms_norm_residual",
        format!("{rows} x {h}"),
        normwise_error(&got, &sum),
        tolerance::<T>(),
    );
    Ok(())
}
