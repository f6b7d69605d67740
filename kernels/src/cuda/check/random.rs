//! Check of the device random fill: its range, mean and variance.

use super::{download, row_recorder, CheckRow};
use crate::cuda::{fill_uniform, Gpu, GpuElement, GpuError};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Device random fill: range, mean and variance of U(-1, 1) * 0.5 + 2.
pub(super) fn check_fill_uniform<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let n = 1 << 20;
    let mut x = gpu.stream.alloc_zeros::<T>(n)?;
    fill_uniform(gpu, &mut x, rng.random(), 0.5, 2.0)?;
    let v = download(gpu, &x)?;
    let mean = v.iter().map(|&a| a as f64).sum::<f64>() / n as f64;
    let var = v.iter().map(|&a| (a as f64 - mean).powi(2)).sum::<f64>() / n as f64;
    let in_range = v.iter().all(|&a| (1.49..=2.51).contains(&a));
    // Standard error of the mean is 0.29 / 1024 = 2.8e-4; variance 1/12 = 0.0833.
    let err = if in_range {
        ((mean - 2.0).abs() / 2.0).max((var - 0.25 / 3.0).abs() / (0.25 / 3.0) / 10.0)
    } else {
        f64::INFINITY
    };
    row(
        "fill_uniform",
        format!("{n} values, mean {mean:.4}, variance {var:.4}"),
        err,
        2e-3,
    );
    Ok(())
}
