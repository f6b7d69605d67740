//! The GPU kernels against their CPU references on fresh random inputs
//! ([`run_checks`]), and the device's measured ceilings that timings read
//! against ([`measure_ceilings`]).
//!
//! One file per op family, as the kernels are: `copy.rs`, `norm.rs`,
//! `rope.rs`, `activation.rs`, `select.rs`, `verify.rs`, `random.rs`,
//! `linear.rs`, `linear_tiles.rs`, `attention.rs`, `mla.rs`, `mla_prep_uk.rs`, `moe.rs`, `moe_route_norm.rs`; `ceilings.rs` the ceilings and the event
//! timer; this file the shared recorder and helpers.
//!
//! Error measure: the norm-wise relative error `max|gpu - cpu| / max|cpu|`.
//! The bf16 references run on the same bf16-rounded inputs in f32.

mod activation;
mod attention;
mod ceilings;
mod copy;
mod linear;
mod linear_rope;
mod linear_tiles;
mod mla;
mod mla_forms;
mod mla_pairs;
mod mla_prep_uk;
mod moe;
mod moe_route_norm;
mod moe_routing;
mod norm;
mod random;
mod rope;
mod select;
mod verify;

pub use ceilings::{measure_ceilings, time_ms, Ceilings};

use super::device::{Gpu, GpuElement, GpuError};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use half::bf16;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One kernel's agreement with its CPU reference.
#[derive(Debug, Clone)]
pub struct CheckRow {
    /// Kernel name.
    pub kernel: &'static str,
    /// Element type.
    pub dtype: &'static str,
    /// Problem size, in words.
    pub shape: String,
    /// Norm-wise relative error (0 for exact kernels that matched).
    pub error: f64,
    /// The bound it must stay under (0: must match exactly).
    pub tolerance: f64,
}

impl CheckRow {
    /// Whether it passed.
    pub fn pass(&self) -> bool {
        if self.tolerance == 0.0 {
            self.error == 0.0
        } else {
            self.error < self.tolerance
        }
    }
}

/// One check: draws its inputs from the generator, appends its rows.
type Check = fn(&Gpu, &mut ChaCha8Rng, &mut Vec<CheckRow>) -> Result<(), GpuError>;

/// The checks of the element-wise, selection, KV and cuBLAS kernels for `T`.
fn float_checks<T: GpuElement>() -> [Check; 7]
where
    CudaBlas: Gemm<T>,
{
    [
        copy::check_embedding_gather::<T>,
        norm::check_rms_norm_residual::<T>,
        rope::check_rope::<T>,
        activation::check_silu_mul::<T>,
        select::check_argmax_top_k::<T>,
        copy::check_kv_commit::<T>,
        linear::check_cublas::<T>,
    ]
}

/// The checks of the kernels the GPU model forward adds, for `T`.
fn model_checks<T: GpuElement>() -> [Check; 11] {
    [
        linear::check_linear_rows::<T>,
        linear::check_linear_mma::<T>,
        linear_tiles::check_linear_tiles::<T>,
        rope::check_qkv_rope_append::<T>,
        linear_rope::check_linear_qkv_rope::<T>,
        activation::check_silu_mul_fused::<T>,
        linear::check_linear_rows_silu::<T>,
        copy::check_copy_cols::<T>,
        select::check_argmax_split::<T>,
        select::check_top_k_logprobs::<T>,
        random::check_fill_uniform::<T>,
    ]
}

/// Every kernel against its CPU reference, in f32 and bf16 (inputs drawn
/// from `seed` in a fixed order: a seed gives the same rows).
pub fn run_checks(gpu: &Gpu, seed: u64) -> Result<Vec<CheckRow>, GpuError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows = Vec::new();
    let checks = float_checks::<f32>()
        .into_iter()
        .chain(float_checks::<bf16>())
        .chain([
            ceilings::check_timer_hold as Check,
            copy::check_scatter_words,
            verify::check_verify_greedy_tree,
            attention::check_attention::<f32>,
            attention::check_attention::<bf16>,
            mla::check_mla::<f32>,
            mla::check_mla::<bf16>,
            mla_prep_uk::check_mla_prep_uk::<f32>,
            mla_prep_uk::check_mla_prep_uk::<bf16>,
            moe::check_moe::<f32>,
            moe::check_moe::<bf16>,
            moe_route_norm::check_moe_route_norm::<f32>,
            moe_route_norm::check_moe_route_norm::<bf16>,
        ])
        .chain(model_checks::<f32>())
        .chain(model_checks::<bf16>())
        .chain([ceilings::check_launch_chain as Check]);
    for check in checks {
        check(gpu, &mut rng, &mut rows)?;
    }
    Ok(rows)
}

/// A recorder of `T`'s check rows into `out`: (kernel, shape, error, tolerance).
pub(crate) fn row_recorder<T: GpuElement>(
    out: &mut Vec<CheckRow>,
) -> impl FnMut(&'static str, String, f64, f64) + '_ {
    move |kernel, shape, error, tolerance| {
        out.push(CheckRow {
            kernel,
            dtype: T::SUFFIX,
            shape,
            error,
            tolerance,
        })
    }
}

/// `n` values uniform in `[-scale, scale)`.
pub(crate) fn random(rng: &mut ChaCha8Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

/// Uploads `v` as `T`; returns the device copy and the values it really holds.
pub(crate) fn upload<T: GpuElement>(
    gpu: &Gpu,
    v: &[f32],
) -> Result<(CudaSlice<T>, Vec<f32>), GpuError> {
    let t: Vec<T> = v.iter().map(|&x| T::from_f32(x)).collect();
    let back = t.iter().map(|x| x.to_f32()).collect();
    Ok((gpu.stream.clone_htod(&t)?, back))
}

/// The device values of `s` as floats.
pub(crate) fn download<T: GpuElement>(gpu: &Gpu, s: &CudaSlice<T>) -> Result<Vec<f32>, GpuError> {
    Ok(gpu
        .stream
        .clone_dtoh(s)?
        .into_iter()
        .map(|x| x.to_f32())
        .collect())
}

/// How many values of `a` differ from `b`'s bit for bit.
pub(crate) fn differing(a: &[f32], b: &[f32]) -> usize {
    a.iter().zip(b).filter(|(a, b)| a != b).count()
}

/// `max|a - b| / max|b|`; a NaN in one of a pair and not the other counts
/// as an infinite difference (`f64::max` would drop it), NaN in both as none.
pub fn normwise_error(a: &[f32], b: &[f32]) -> f64 {
    let diff = a
        .iter()
        .zip(b)
        .map(|(x, y)| match (x.is_nan(), y.is_nan()) {
            (true, true) => 0.0,
            (false, false) => (*x as f64 - *y as f64).abs(),
            _ => f64::INFINITY,
        })
        .fold(0.0, f64::max);
    let scale = b.iter().map(|y| (*y as f64).abs()).fold(0.0, f64::max);
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    diff / scale.max(f64::MIN_POSITIVE)
}

/// The error bound of a rounding kernel in `T`.
pub(crate) fn tolerance<T: GpuElement>() -> f64 {
    if T::BYTES == 2 {
        1e-2
    } else {
        1e-5
    }
}

/// `v` rounded to `T` and back.
pub(crate) fn round<T: GpuElement>(v: f32) -> f32 {
    T::from_f32(v).to_f32()
}

#[cfg(test)]
mod tests {
    use super::normwise_error;

    /// Regression: a NaN output beside a finite reference passed, as
    /// `f64::max` drops NaN.
    #[test]
    fn a_nan_output_is_an_infinite_error_and_matching_nans_none() {
        assert_eq!(normwise_error(&[1.0, f32::NAN], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(normwise_error(&[1.0, 2.0], &[1.0, f32::NAN]), f64::INFINITY);
        assert_eq!(normwise_error(&[1.0, f32::NAN], &[1.0, f32::NAN]), 0.0);
        assert!((normwise_error(&[1.0, 2.5], &[1.0, 2.0]) - 0.25).abs() < 1e-12);
    }
}
