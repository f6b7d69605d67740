//! Launches of the mixture-of-experts kernels (`moe.cu`, `moe_combine.cu`):
//! grouped expert products that read only the routed experts' weights (by
//! the plan of `moe_route.rs`), and the per-row combine.

use super::device::{Gpu, GpuElement, GpuError, SmallRowLinear};
use super::launch::{cfg, launch, name, need, RawArg, THREADS};
use super::moe_plan::MoePlan;
use super::norm::NORM_THREADS;
use crate::mma_layout::{k_parts_for_warps, mma_k_parts};
use crate::switch::Switch;
use cudarc::driver::CudaSlice;

/// Stacked expert weights `[experts, n, k]` (gate|up rows interleaved for
/// the SiLU epilogue).
#[derive(Clone, Copy)]
pub struct ExpertWeights<'a, T> {
    /// The weights.
    pub w: &'a CudaSlice<T>,
    /// Outputs per expert.
    pub n: usize,
    /// Inputs per row.
    pub k: usize,
}

/// Whether the grouped linear runs a `[n, k]` expert on tensor cores (as
/// the dense small-row linear: bf16, k a multiple of 32, tensor cores on).
pub fn moe_uses_mma<T: GpuElement>(gpu: &Gpu, k: usize) -> bool {
    gpu.small_row_linear == SmallRowLinear::Mma && T::SUFFIX == "bf16" && k.is_multiple_of(32)
}

/// Slices of k the grouped tensor-core linear sums separately for a `[n, k]`
/// expert with `routes` routes a token: a function of the weight's shape and
/// the router alone (the dense rule for the `routes` experts one token
/// reads side by side), never of the rows.
pub fn moe_k_parts(k: usize, n: usize, routes: usize) -> usize {
    match moe_target_warps() {
        Some(warps) => k_parts_for_warps(k, n * routes, warps),
        None => mma_k_parts(k, n * routes),
    }
}

/// Column tiles x k slices below which the grouped linear splits k further
/// (`SPECULA_MOE_WARPS`: 1056, 1536 or 2112; unset: the dense rule's 768);
/// read once. Unlike most switches it changes the bits (a slice is summed
/// on its own), but for any one setting a row's reduction order is still
/// the shape's alone, so every setting is batch-invariant.
fn moe_target_warps() -> Option<usize> {
    static WARPS: Switch<Option<usize>> = Switch::new(
        "SPECULA_MOE_WARPS",
        &[
            ("1056", Some(1056)),
            ("1536", Some(1536)),
            ("2112", Some(2112)),
        ],
        None,
        "768, the dense rule's",
    );
    WARPS.get()
}

/// Which of an expert's two products a grouped launch runs, and so how its
/// input and output rows are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertProduct {
    /// gate|up (interleaved rows) with SiLU-and-mul: pair `p` reads its
    /// row of `x: [rows, k]` and writes `y[p]` (`n / 2` wide).
    GateUp,
    /// down: pair `p` reads `x[p]` (the gate|up output) and writes its
    /// route's row `y[r * routes + j]` (row `r`'s `j`-th expert), where the
    /// combine reads it without looking the pair up.
    Down,
}

/// The grouped linear: for every pair `p` of the plan, `y[out] = x[in]
/// W_e^T` with `e` the pair's expert, the rows `in` and `out` as
/// [`ExpertProduct`] lays them out. One launch for every expert; blocks of
/// experts nobody chose exit at once. `ahead`: for a gate|up, the down
/// product's stacked weights, whose shared slices the plan's L2 form
/// (`MoePlan::l2_ahead`) asks L2 for early; ignored otherwise.
pub fn moe_grouped<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    experts: ExpertWeights<'_, T>,
    plan: &MoePlan,
    product: ExpertProduct,
    ahead: Option<&CudaSlice<T>>,
) -> Result<(), GpuError> {
    let ExpertWeights { w, n, k } = experts;
    let pairs = plan.pairs();
    let silu = product == ExpertProduct::GateUp;
    let width = if silu { n / 2 } else { n };
    let x_rows = if silu { plan.rows } else { pairs };
    need(
        w.len() == plan.spec.stacked() * n * k
            && x.len() >= x_rows * k
            && y.len() >= pairs * width
            && (!silu || n.is_multiple_of(2)),
        || format!("moe_grouped: sizes disagree (n {n}, k {k}, {pairs} pairs)"),
    )?;
    if pairs == 0 {
        return Ok(());
    }
    let (pair_row, pair_route) = match product {
        ExpertProduct::GateUp => (RawArg::slice(gpu, &plan.pair_row), RawArg::Ptr(0)),
        ExpertProduct::Down => (RawArg::Ptr(0), RawArg::slice(gpu, &plan.pair_route)),
    };
    let mut args = vec![
        RawArg::slice(gpu, y),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, w),
        RawArg::slice(gpu, &plan.slot_table),
        pair_row,
        pair_route,
        RawArg::I32(k as i32),
        RawArg::I32(n as i32),
    ];
    let slots = plan.slots() as u32;
    if moe_uses_mma::<T>(gpu, k) {
        let parts = moe_k_parts(k, n, plan.spec.routes());
        args.push(RawArg::I32(parts as i32));
        args.push(RawArg::I32(i32::from(silu)));
        // The gate|up of the shared slices starts before the routing ends
        // (their slots come first and need nothing it writes) unless the
        // routing made its input rows.
        let early = if silu && !plan.routing_wrote_input {
            plan.spec.shared
        } else {
            0
        };
        args.extend([
            RawArg::I32(early as i32),
            RawArg::I32(plan.rows as i32),
            RawArg::I32(plan.chunk as i32),
            RawArg::I32(plan.spec.experts as i32),
        ]);
        let smem = if parts > 1 { parts * 4 * 32 * 4 } else { 0 };
        let grid = cfg(
            (n.div_ceil(16) as u32, slots),
            (32 * parts) as u32,
            smem as u32,
        );
        let kernel = if plan.l2_ahead {
            // The down weights of the shared slices, [shared, k, n / 2] after the routed experts'.
            let ahead =
                ahead.filter(|d| silu && early > 0 && d.len() == plan.spec.stacked() * k * (n / 2));
            args.push(RawArg::opt(gpu, ahead));
            "moe_mma_l2_bf16"
        } else {
            "moe_mma_bf16"
        };
        // SAFETY: the kernel's parameters in order; sizes checked above
        // (`ahead` only where it holds the stacked down weights).
        return unsafe { launch(gpu, kernel, grid, &args) };
    }
    args.push(RawArg::I32(i32::from(k.is_multiple_of(16 / T::BYTES))));
    let cols = if silu { n / 2 } else { n };
    let grid = cfg(
        ((cols * 32).div_ceil(THREADS as usize) as u32, slots),
        THREADS,
        0,
    );
    let kernel = name::<T>(if silu { "moe_rows_silu" } else { "moe_rows" });
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, grid, &args) }
}

/// `out[r] = sum_j w[r, j] * yexp[r * routes + j]` over row `r`'s routes
/// in order (routed experts in ascending id, then the shared slices;
/// multiply, then add; `yexp` as [`ExpertProduct::Down`] leaves it), plus
/// `shared[r]` when given (shared experts run apart).
pub fn moe_combine<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    yexp: &CudaSlice<T>,
    shared: Option<&CudaSlice<T>>,
    plan: &MoePlan,
    hidden: usize,
) -> Result<(), GpuError> {
    let rows = plan.rows;
    need(
        plan.spec.routes() <= 16
            && out.len() >= rows * hidden
            && yexp.len() >= plan.pairs() * hidden
            && shared.is_none_or(|s| s.len() >= rows * hidden),
        || "moe_combine: sizes disagree".into(),
    )?;
    if rows == 0 {
        return Ok(());
    }
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, yexp),
        RawArg::opt(gpu, shared),
        RawArg::slice(gpu, &plan.weights),
        RawArg::I32(plan.spec.routes() as i32),
        RawArg::I32(hidden as i32),
    ];
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe {
        launch(
            gpu,
            &name::<T>("moe_combine"),
            cfg(
                (rows as u32, hidden.div_ceil(THREADS as usize) as u32),
                THREADS,
                0,
            ),
            &args,
        )
    }
}

/// The experts' output of a forward, waiting to be combined: the routed
/// outputs by route, the shared experts' output, and the plan that routed them.
#[derive(Clone, Copy)]
pub struct ExpertsOutput<'a, T> {
    /// Each route's expert output, `[rows, routes, hidden]`.
    pub yexp: &'a CudaSlice<T>,
    /// The shared experts' output, `[rows, hidden]`, when the layer has them.
    pub shared: Option<&'a CudaSlice<T>>,
    /// The routing that made `yexp`.
    pub plan: &'a MoePlan,
    /// The layer's attention output, `[rows, hidden]`, when the routing ran
    /// the post-attention norm itself ([`RouteInput::Norm`](super::RouteInput::Norm)): not yet in the
    /// residual, added before the combine.
    pub attn: Option<&'a CudaSlice<T>>,
}

/// `residual[r] += attn[r]` when the experts carry it (rounded as
/// [`super::rms_norm_residual`] stores it), `residual[r] += ` row `r`'s combine (as [`moe_combine`] stores it), then
/// `out[r] = rmsnorm(residual[r]) * w`, as [`super::rms_norm_residual`]
/// computes it: the combine and the next layer's RMSNorm in one launch, the
/// same bits as the two launches.
pub fn moe_combine_norm<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    residual: &mut CudaSlice<T>,
    experts: ExpertsOutput<'_, T>,
    w: &CudaSlice<T>,
    eps: f32,
) -> Result<(), GpuError> {
    let ExpertsOutput {
        yexp,
        shared,
        plan,
        attn,
    } = experts;
    let (rows, hidden) = (plan.rows, w.len());
    need(
        plan.spec.routes() <= 16
            && residual.len() == rows * hidden
            && out.len() >= rows * hidden
            && yexp.len() >= plan.pairs() * hidden
            && shared.is_none_or(|s| s.len() >= rows * hidden)
            && attn.is_none_or(|a| a.len() >= rows * hidden),
        || "moe_combine_norm: sizes disagree".into(),
    )?;
    if rows == 0 {
        return Ok(());
    }
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, residual),
        RawArg::slice(gpu, yexp),
        RawArg::opt(gpu, shared),
        RawArg::slice(gpu, &plan.weights),
        RawArg::I32(plan.spec.routes() as i32),
        RawArg::slice(gpu, w),
        RawArg::F32(eps),
        RawArg::I32(hidden as i32),
        RawArg::opt(gpu, attn),
    ];
    // One block a row, as rms_norm_residual.
    let grid = cfg((rows as u32, 1), NORM_THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &name::<T>("moe_combine_norm"), grid, &args) }
}
