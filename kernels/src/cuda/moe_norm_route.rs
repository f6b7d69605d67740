//! Launch of a MoE layer's post-attention RMSNorm and its routing as one
//! kernel (`moe_norm_route.cu`): one launch fewer a layer, the same bits as
//! [`super::rms_norm_residual`] then [`super::moe_route`].

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, name, need, RawArg};
use super::moe::{plan_smem, route_args, MoePlan};
use cudarc::driver::CudaSlice;

/// A router's weights: the gate `[experts, hidden]` and the optional
/// `e_score_correction_bias`.
#[derive(Clone, Copy)]
pub struct RouterWeights<'a, T> {
    /// The gate.
    pub gate: &'a CudaSlice<T>,
    /// The selection bias, one per expert.
    pub bias: Option<&'a CudaSlice<f32>>,
}

/// `residual += delta` (when given), `out = rmsnorm(residual) * w` with
/// `norm = (w, eps)`, then every row of `out` routed through `router` and
/// the pairs laid out by expert, into `plan`; `stats` as for
/// [`super::moe_route`].
#[allow(clippy::too_many_arguments)]
pub fn moe_norm_route<T: GpuElement>(
    gpu: &Gpu,
    plan: &mut MoePlan,
    out: &mut CudaSlice<T>,
    residual: &mut CudaSlice<T>,
    delta: Option<&CudaSlice<T>>,
    norm: (&CudaSlice<T>, f32),
    router: RouterWeights<'_, T>,
    stats: Option<&mut CudaSlice<u64>>,
) -> Result<(), GpuError> {
    let (w, eps) = norm;
    let (sp, rows, hidden) = (plan.spec, plan.rows, w.len());
    need(
        residual.len() == rows * hidden
            && out.len() >= rows * hidden
            && delta.is_none_or(|d| d.len() >= rows * hidden)
            && router.gate.len() == sp.experts * hidden
            && router.bias.is_none_or(|b| b.len() == sp.experts)
            && stats.as_ref().is_none_or(|s| s.len() >= 2),
        || "moe_norm_route: sizes disagree".into(),
    )?;
    if rows == 0 {
        return Ok(());
    }
    let vec = hidden.is_multiple_of(16 / T::BYTES);
    let mut args = vec![
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, residual),
        RawArg::opt(gpu, delta),
        RawArg::slice(gpu, w),
        RawArg::F32(eps),
        RawArg::I32(hidden as i32),
        RawArg::slice(gpu, &plan.logits),
        RawArg::slice(gpu, router.gate),
        RawArg::I32(i32::from(vec)),
    ];
    args.extend(route_args(gpu, plan, router.bias, stats));
    // One block of 512 threads a row, as rms_norm_residual.
    let grid = cfg((rows as u32, 1), 512, plan_smem(sp, rows) as u32);
    // SAFETY: the kernel's parameters in order; sizes checked above and in MoePlan::new.
    unsafe { launch(gpu, &name::<T>("moe_norm_route"), grid, &args) }
}
