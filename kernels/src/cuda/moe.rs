//! Launches of the mixture-of-experts kernels (`moe.cu`): router logits and
//! routing with the pairs' layout on the device (no host round trip, so a
//! forward stays one CUDA graph), grouped expert products that read only
//! the routed experts' weights, and the per-row combine.

use super::device::{Gpu, GpuElement, GpuError, SmallRowLinear};
use super::launch::{cfg, launch, name, need, RawArg, THREADS};
use super::norm::NORM_THREADS;
use crate::mma_layout::{k_parts_for_warps, mma_k_parts};
use cudarc::driver::CudaSlice;

/// How a router turns logits into experts and weights (the engine's `MoeConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouterSpec {
    /// Routed experts (at most 512).
    pub experts: usize,
    /// Experts per token (at most 16).
    pub top_k: usize,
    /// Sigmoid scores (else a softmax over all experts).
    pub sigmoid: bool,
    /// Groups of experts (1: no group limit; at most 64).
    pub n_group: usize,
    /// Groups kept per token.
    pub topk_group: usize,
    /// A group scores the sum of its two best (else its best).
    pub top_two_sum: bool,
    /// The chosen weights are renormalised to sum to 1.
    pub norm_topk_prob: bool,
    /// Factor on the weights.
    pub scaling: f32,
    /// Always-routed experts after the routed ones (ids `experts..`, weight
    /// 1 each): the shared experts in expert-sized slices, stacked with the
    /// routed experts so the grouped launches read them too (0: none, or
    /// shared experts of their own).
    pub shared: usize,
}

impl RouterSpec {
    /// Each row's routes: its `top_k` routed experts, then the shared slices.
    pub fn routes(&self) -> usize {
        self.top_k + self.shared
    }

    /// Experts a grouped launch's weights hold: the routed ones, then the shared slices.
    pub fn stacked(&self) -> usize {
        self.experts + self.shared
    }
}

/// A forward's routing on the device, sized for its rows: logits, each
/// row's experts and weights (ascending expert id), and the pairs laid out
/// by expert.
pub struct MoePlan {
    pub(crate) rows: usize,
    pub(crate) logits: CudaSlice<f32>,
    pub(crate) ids: CudaSlice<i32>,
    pub(crate) weights: CudaSlice<f32>,
    /// The slot table: per slot 4 ints, (expert, first pair, end pair, 0),
    /// each expert's pairs in slots of at most `chunk` in ascending id, then
    /// (-1, 0, 0, 0) up to [`MoePlan::slots`].
    pub(crate) slot_table: CudaSlice<i32>,
    pub(crate) pair_row: CudaSlice<i32>,
    /// Each pair's route `r * routes + j` (row `r`'s `j`-th expert): where
    /// the down product leaves its output for the combine.
    pub(crate) pair_route: CudaSlice<i32>,
    /// Blocks of the routing launch that have finished (zero between launches).
    ticket: CudaSlice<u32>,
    spec: RouterSpec,
    /// Pairs a grouped block takes at most (a slot's share of an expert).
    chunk: usize,
}

impl MoePlan {
    /// Buffers for `rows` rows routed by `spec`.
    pub fn new(gpu: &Gpu, rows: usize, spec: RouterSpec) -> Result<MoePlan, GpuError> {
        need(
            (1..=512).contains(&spec.experts)
                && (1..=16).contains(&spec.top_k)
                && spec.routes() <= 16
                && spec.stacked() <= 512
                && spec.top_k <= spec.experts
                && (1..=64).contains(&spec.n_group)
                && spec.experts.is_multiple_of(spec.n_group)
                && (1..=spec.n_group).contains(&spec.topk_group)
                && spec.topk_group * (spec.experts / spec.n_group) >= spec.top_k,
            || {
                format!("moe: unsupported router {spec:?} (at most 512 experts with the shared slices, 16 routes a token, 64 groups; the kept groups must hold top_k experts)")
            },
        )?;
        let s = &gpu.stream;
        let pairs = (rows * spec.routes()).max(1);
        let chunk = moe_slot_pairs().unwrap_or(pairs);
        let slots = slot_cap(rows * spec.routes(), spec.stacked(), chunk);
        Ok(MoePlan {
            rows,
            logits: s.alloc_zeros((rows * spec.experts).max(1))?,
            ids: s.alloc_zeros(pairs)?,
            weights: s.alloc_zeros(pairs)?,
            slot_table: s.alloc_zeros(4 * slots)?,
            pair_row: s.alloc_zeros(pairs)?,
            pair_route: s.alloc_zeros(pairs)?,
            ticket: s.alloc_zeros(1)?,
            spec,
            chunk,
        })
    }

    /// Pairs (row, expert) of a forward: `rows * routes`.
    pub fn pairs(&self) -> usize {
        self.rows * self.spec.routes()
    }

    /// Slots a grouped launch covers (its grid's y).
    fn slots(&self) -> usize {
        slot_cap(self.pairs(), self.spec.stacked(), self.chunk)
    }
}

/// Slots `pairs` pairs over `experts` stacked experts can fill, each
/// expert's pairs cut into slots of at most `chunk`: one per expert with
/// pairs (at most one per pair), plus one per whole `chunk` of pairs.
fn slot_cap(pairs: usize, experts: usize, chunk: usize) -> usize {
    (pairs.min(experts) + pairs / chunk).max(1)
}

/// Pairs a grouped block takes at most (`SPECULA_MOE_SLOT`: `32`, the
/// default, or `off`, an expert's pairs in one block however many); read
/// once. The same bits either way: a pair's result does not depend on the
/// pairs beside it.
fn moe_slot_pairs() -> Option<usize> {
    static CHUNK: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *CHUNK.get_or_init(|| {
        crate::switch::switch(
            "SPECULA_MOE_SLOT",
            &[("32", Some(32)), ("off", None)],
            Some(32),
            "32",
        )
    })
}

/// Routes every row of `x: [rows, k]` through the router `gate: [experts,
/// k]` (logits in f32) with the optional `e_score_correction_bias`, and lays
/// the pairs out by expert. `stats` (two counters), when given, gains the
/// experts touched and one forward.
pub fn moe_route<T: GpuElement>(
    gpu: &Gpu,
    plan: &mut MoePlan,
    x: &CudaSlice<T>,
    gate: &CudaSlice<T>,
    bias: Option<&CudaSlice<f32>>,
    k: usize,
    stats: Option<&mut CudaSlice<u64>>,
) -> Result<(), GpuError> {
    let sp = plan.spec;
    let rows = plan.rows;
    need(
        x.len() >= rows * k
            && gate.len() == sp.experts * k
            && bias.is_none_or(|b| b.len() == sp.experts)
            && stats.as_ref().is_none_or(|s| s.len() >= 2),
        || "moe_route: sizes disagree".into(),
    )?;
    if rows == 0 {
        return Ok(());
    }
    let vec = k.is_multiple_of(16 / T::BYTES);
    let flags =
        i32::from(sp.sigmoid) | i32::from(sp.top_two_sum) << 1 | i32::from(sp.norm_topk_prob) << 2;
    let args = [
        RawArg::slice(gpu, &plan.logits),
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, gate),
        RawArg::I32(k as i32),
        RawArg::I32(i32::from(vec)),
        RawArg::slice(gpu, &plan.ticket),
        RawArg::opt(gpu, bias),
        RawArg::I32(rows as i32),
        RawArg::I32(sp.experts as i32),
        RawArg::I32(sp.top_k as i32),
        RawArg::I32(sp.n_group as i32),
        RawArg::I32(sp.topk_group as i32),
        RawArg::I32(flags),
        RawArg::F32(sp.scaling),
        RawArg::I32(sp.shared as i32),
        RawArg::I32(plan.chunk as i32),
        RawArg::I32(plan.slots() as i32),
        RawArg::slice(gpu, &plan.ids),
        RawArg::slice(gpu, &plan.weights),
        RawArg::slice(gpu, &plan.slot_table),
        RawArg::slice(gpu, &plan.pair_row),
        RawArg::slice(gpu, &plan.pair_route),
        RawArg::opt(gpu, stats.map(|s| &*s)),
    ];
    // One warp per expert and row group for the logits; the last block to
    // finish routes every row (moe_route in moe.cu).
    let blocks = (sp.experts * 32).div_ceil(THREADS as usize) as u32;
    let grid = cfg(
        (blocks, rows.div_ceil(4).clamp(1, 256) as u32),
        THREADS,
        plan_smem(sp, rows) as u32,
    );
    // SAFETY: the kernel's parameters in order; sizes checked above and in MoePlan::new.
    unsafe { launch(gpu, &name::<T>("moe_route"), grid, &args) }
}

/// Pairs up to which the routing keeps every row's experts in shared
/// memory (`MOE_SMEM_PAIRS` in `moe.cu`).
const MOE_SMEM_PAIRS: usize = 1024;

/// Warps that route rows (`MOE_ROUTE_WARPS` in `moe.cu`: the launch's 8).
const MOE_ROUTE_WARPS: usize = THREADS as usize / 32;

/// Bytes of dynamic shared memory the routing of `rows` rows asks for
/// (`moe_route_plan` in `moe.cu`): per routing warp 2 x experts scores,
/// then counts and offsets of the stacked experts and the staged expert ids.
fn plan_smem(sp: RouterSpec, rows: usize) -> usize {
    let ints = 2 * sp.stacked() + 1 + (rows * sp.routes()).min(MOE_SMEM_PAIRS);
    (MOE_ROUTE_WARPS * 2 * sp.experts + ints) * 4
}

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
    static WARPS: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *WARPS.get_or_init(|| {
        crate::switch::switch(
            "SPECULA_MOE_WARPS",
            &[
                ("1056", Some(1056)),
                ("1536", Some(1536)),
                ("2112", Some(2112)),
            ],
            None,
            "768, the dense rule's",
        )
    })
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
/// experts nobody chose exit at once.
pub fn moe_grouped<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    experts: ExpertWeights<'_, T>,
    plan: &MoePlan,
    product: ExpertProduct,
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
        let smem = if parts > 1 { parts * 4 * 32 * 4 } else { 0 };
        let grid = cfg(
            (n.div_ceil(16) as u32, slots),
            (32 * parts) as u32,
            smem as u32,
        );
        // SAFETY: the kernel's parameters in order; sizes checked above.
        return unsafe { launch(gpu, "moe_mma_bf16", grid, &args) };
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
}

/// `residual[r] += ` row `r`'s combine (as [`moe_combine`] stores it), then
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
    let ExpertsOutput { yexp, shared, plan } = experts;
    let (rows, hidden) = (plan.rows, w.len());
    need(
        plan.spec.routes() <= 16
            && residual.len() == rows * hidden
            && out.len() >= rows * hidden
            && yexp.len() >= plan.pairs() * hidden
            && shared.is_none_or(|s| s.len() >= rows * hidden),
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
    ];
    // One block a row, as rms_norm_residual.
    let grid = cfg((rows as u32, 1), NORM_THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &name::<T>("moe_combine_norm"), grid, &args) }
}

/// Each row's routes (experts in ascending id, then the shared slices) and
/// weights as the device holds them.
pub fn moe_routes(gpu: &Gpu, plan: &MoePlan) -> Result<(Vec<i32>, Vec<f32>), GpuError> {
    let s = &gpu.stream;
    let n = plan.pairs();
    let mut ids = s.clone_dtoh(&plan.ids)?;
    let mut w = s.clone_dtoh(&plan.weights)?;
    ids.truncate(n);
    w.truncate(n);
    Ok((ids, w))
}
