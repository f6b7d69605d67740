//! The fused MoE launches against the launches they replace, bit for bit:
//! the post-attention RMSNorm with the routing (`moe_norm_route`).

use super::{differing, download, random, upload};
use crate::cuda::{
    moe_norm_route, moe_route, rms_norm_residual, Gpu, GpuElement, GpuError, MoePlan, RouterSpec,
    RouterWeights,
};
use cudarc::driver::CudaSlice;
use rand_chacha::ChaCha8Rng;

/// Values (norm output, residual, logits, weights) and ints (ids, pair
/// positions, expert offsets, pair rows, active experts) where
/// `moe_norm_route` differs from `rms_norm_residual` then `moe_route`, on
/// fresh random rows, deltas and norm weights.
pub(super) fn norm_route_diff<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    sp: RouterSpec,
    router: RouterWeights<'_, T>,
    rows: usize,
    h: usize,
) -> Result<usize, GpuError> {
    let s = &gpu.stream;
    let (x, _) = upload::<T>(gpu, &random(rng, rows * h, 1.0))?;
    let (delta, _) = upload::<T>(gpu, &random(rng, rows * h, 1.0))?;
    let (w, _) = upload::<T>(gpu, &random(rng, h, 1.5))?;
    let (mut res_a, mut res_b) = (s.clone_dtod(&x)?, s.clone_dtod(&x)?);
    let mut norm_a = s.alloc_zeros::<T>(rows * h)?;
    let mut norm_b = s.alloc_zeros::<T>(rows * h)?;
    let mut plan_a = MoePlan::new(gpu, rows, sp)?;
    let mut plan_b = MoePlan::new(gpu, rows, sp)?;
    rms_norm_residual(gpu, &mut norm_a, &mut res_a, Some(&delta), &w, 1e-6, h)?;
    moe_route(gpu, &mut plan_a, &norm_a, router.gate, router.bias, h, None)?;
    moe_norm_route(
        gpu,
        &mut plan_b,
        &mut norm_b,
        &mut res_b,
        Some(&delta),
        (&w, 1e-6),
        router,
        None,
    )?;
    let floats = |a: &CudaSlice<f32>, b: &CudaSlice<f32>| -> Result<usize, GpuError> {
        Ok(differing(&s.clone_dtoh(a)?, &s.clone_dtoh(b)?))
    };
    let ints = |a: &CudaSlice<i32>, b: &CudaSlice<i32>| -> Result<usize, GpuError> {
        let (a, b) = (s.clone_dtoh(a)?, s.clone_dtoh(b)?);
        Ok(a.iter().zip(&b).filter(|(x, y)| x != y).count())
    };
    let pairs = rows * sp.top_k;
    let mut n = differing(&download(gpu, &norm_a)?, &download(gpu, &norm_b)?)
        + differing(&download(gpu, &res_a)?, &download(gpu, &res_b)?)
        + floats(&plan_a.logits, &plan_b.logits)?
        + floats(&plan_a.weights, &plan_b.weights)?
        + ints(&plan_a.ids, &plan_b.ids)?
        + ints(&plan_a.pos, &plan_b.pos)?
        + ints(&plan_a.expert_off, &plan_b.expert_off)?
        + ints(&plan_a.n_active, &plan_b.n_active)?;
    // Pair rows and active experts past the counts are unspecified.
    let active = s.clone_dtoh(&plan_a.n_active)?[0] as usize;
    let (ra, rb) = (
        s.clone_dtoh(&plan_a.pair_row)?,
        s.clone_dtoh(&plan_b.pair_row)?,
    );
    n += (0..pairs).filter(|&i| ra[i] != rb[i]).count();
    let (aa, ab) = (s.clone_dtoh(&plan_a.active)?, s.clone_dtoh(&plan_b.active)?);
    n += (0..active).filter(|&i| aa[i] != ab[i]).count();
    Ok(n)
}
