//! The mixture-of-experts routing launch (`moe_route.cu` for a row,
//! `moe_plan.cu` for the plan): router logits, each row's experts and
//! weights, and the pairs laid out by expert in slots of its [`MoePlan`]
//! for the grouped launches (`moe.rs`), with no host round trip, so a
//! forward stays one CUDA graph.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, launch_cluster, name, need, RawArg, THREADS};
use super::moe_forms::routes_in_a_cluster;
use super::moe_plan::{MoePlan, RouterSpec};
use super::norm::NORM_THREADS;
use cudarc::driver::CudaSlice;

/// The rows a routing reads.
pub enum RouteInput<'a, T> {
    /// `[rows, k]`, already normed.
    Normed(&'a CudaSlice<T>),
    /// The layer's post-attention norm, run by the routing itself (one
    /// launch fewer a layer): `normed[r] = rmsnorm(residual[r] + attn[r]) *
    /// w`, the bits of [`super::rms_norm_residual`], left in `normed` for
    /// the experts. The residual is not written: the next norm adds `attn`
    /// first ([`ExpertsOutput::attn`](super::ExpertsOutput::attn)). Only where [`moe_route_norm_fits`].
    Norm {
        /// Where the normed rows go.
        normed: &'a mut CudaSlice<T>,
        /// The residual stream before the attention's output.
        residual: &'a CudaSlice<T>,
        /// The attention's output.
        attn: &'a CudaSlice<T>,
        /// The norm's weights.
        w: &'a CudaSlice<T>,
        /// The norm's epsilon.
        eps: f32,
    },
}

/// Whether the routing can run a `k`-wide norm itself ([`RouteInput::Norm`]):
/// rows that fit the norm's register path (`rms_norm_row` in `norm.cu`).
pub fn moe_route_norm_fits<T: GpuElement>(k: usize) -> bool {
    let vec = 16 / T::BYTES;
    k.is_multiple_of(vec) && k / vec <= 4 * NORM_THREADS as usize
}

/// Routes every row of the input (`[rows, k]`, or normed by the routing:
/// [`RouteInput`]) through the router `gate: [experts, k]` (logits in f32)
/// with the optional `e_score_correction_bias`, and lays the pairs out by
/// expert. `stats` (two counters), when given, gains the routed experts
/// touched and one forward.
pub fn moe_route<T: GpuElement>(
    gpu: &Gpu,
    plan: &mut MoePlan,
    input: RouteInput<'_, T>,
    gate: &CudaSlice<T>,
    bias: Option<&CudaSlice<f32>>,
    k: usize,
    stats: Option<&mut CudaSlice<u64>>,
) -> Result<(), GpuError> {
    let sp = plan.spec;
    let rows = plan.rows;
    let n = rows * k;
    let sized = match &input {
        RouteInput::Normed(x) => x.len() >= n,
        RouteInput::Norm {
            normed,
            residual,
            attn,
            w,
            ..
        } => {
            normed.len() >= n
                && residual.len() >= n
                && attn.len() >= n
                && w.len() == k
                && moe_route_norm_fits::<T>(k)
        }
    };
    need(
        sized
            && gate.len() == sp.experts * k
            && bias.is_none_or(|b| b.len() == sp.experts)
            && stats.as_ref().is_none_or(|s| s.len() >= 2),
        || "moe_route: sizes disagree".into(),
    )?;
    if rows == 0 {
        return Ok(());
    }
    let vec = k.is_multiple_of(16 / T::BYTES);
    let (x, norm) = match input {
        RouteInput::Normed(x) => (RawArg::slice(gpu, x), None),
        RouteInput::Norm {
            normed,
            residual,
            attn,
            w,
            eps,
        } => (
            RawArg::Ptr(0),
            Some([
                RawArg::slice(gpu, normed),
                RawArg::slice(gpu, residual),
                RawArg::slice(gpu, attn),
                RawArg::slice(gpu, w),
                RawArg::F32(eps),
            ]),
        ),
    };
    let fused = norm.is_some();
    plan.routing_wrote_input = fused;
    let blocks = (sp.experts * 32).div_ceil(THREADS as usize) as u32;
    if rows == 1 && !fused && routes_in_a_cluster(plan.one_row, blocks as usize) {
        let mut args = vec![
            RawArg::slice(gpu, &plan.logits),
            x,
            RawArg::slice(gpu, gate),
            RawArg::I32(k as i32),
            RawArg::I32(i32::from(vec)),
            RawArg::opt(gpu, bias),
        ];
        args.extend(router_args(sp));
        args.extend(plan_args(gpu, plan, stats));
        // Score, choice and the gathered logits, then a float per warp.
        let smem = (3 * sp.experts + THREADS as usize / 32) * 4;
        let grid = cfg((blocks, 1), THREADS, smem as u32);
        // SAFETY: moe_route_one's parameters in order; sizes checked above
        // and in MoePlan::new; the grid's x is one cluster.
        return unsafe {
            launch_cluster(gpu, &name::<T>("moe_route_one"), grid, blocks, false, &args)
        };
    }
    let tail = norm.unwrap_or([
        RawArg::Ptr(0),
        RawArg::Ptr(0),
        RawArg::Ptr(0),
        RawArg::Ptr(0),
        RawArg::F32(0.0),
    ]);
    let mut args = vec![
        RawArg::slice(gpu, &plan.logits),
        x,
        RawArg::slice(gpu, gate),
        RawArg::I32(k as i32),
        RawArg::I32(i32::from(vec)),
        RawArg::slice(gpu, &plan.ticket),
        RawArg::opt(gpu, bias),
        RawArg::I32(rows as i32),
    ];
    args.extend(router_args(sp));
    args.push(RawArg::I32(plan.chunk as i32));
    args.extend(plan_args(gpu, plan, stats));
    args.extend(tail);
    // One warp per expert and row group for the logits; the last block to
    // finish routes every row (moe_route in moe.cu). With the norm, room for
    // a row (the norm sums as NORM_THREADS threads would: rms_norm_row).
    const _: () = assert!(NORM_THREADS == THREADS || NORM_THREADS == 2 * THREADS);
    let smem = if fused {
        plan_smem(sp, rows).max(k * T::BYTES)
    } else {
        plan_smem(sp, rows)
    };
    let grid = cfg(
        (blocks, rows.div_ceil(4).clamp(1, 256) as u32),
        THREADS,
        smem as u32,
    );
    // SAFETY: the kernel's parameters in order; sizes checked above and in MoePlan::new.
    unsafe { launch(gpu, &name::<T>("moe_route"), grid, &args) }
}

/// The router's parameters as both routing kernels take them: experts,
/// top-k, groups, groups kept, flags (bit 0 sigmoid scores, 1 a group's two
/// best summed, 2 renormalised weights), scaling, shared slices.
fn router_args(sp: RouterSpec) -> [RawArg; 7] {
    let flags =
        i32::from(sp.sigmoid) | i32::from(sp.top_two_sum) << 1 | i32::from(sp.norm_topk_prob) << 2;
    [
        RawArg::I32(sp.experts as i32),
        RawArg::I32(sp.top_k as i32),
        RawArg::I32(sp.n_group as i32),
        RawArg::I32(sp.topk_group as i32),
        RawArg::I32(flags),
        RawArg::F32(sp.scaling),
        RawArg::I32(sp.shared as i32),
    ]
}

/// What both routing kernels write, as they take it: the slots a grouped
/// launch covers, then the plan's routes, weights, slot table, pairs' rows
/// and routes, and the optional counters.
fn plan_args(gpu: &Gpu, plan: &MoePlan, stats: Option<&mut CudaSlice<u64>>) -> [RawArg; 7] {
    [
        RawArg::I32(plan.slots() as i32),
        RawArg::slice(gpu, &plan.ids),
        RawArg::slice(gpu, &plan.weights),
        RawArg::slice(gpu, &plan.slot_table),
        RawArg::slice(gpu, &plan.pair_row),
        RawArg::slice(gpu, &plan.pair_route),
        RawArg::opt(gpu, stats.map(|s| &*s)),
    ]
}

/// Pairs up to which the routing keeps every row's experts in shared
/// memory (`MOE_SMEM_PAIRS` in `moe_plan.cu`).
const MOE_SMEM_PAIRS: usize = 1024;

/// Warps that route rows (`MOE_ROUTE_WARPS` in `moe_plan.cu`: the launch's 8).
const MOE_ROUTE_WARPS: usize = THREADS as usize / 32;

/// Bytes of dynamic shared memory the routing of `rows` rows asks for
/// (`moe_route_plan` in `moe_plan.cu`): per routing warp 2 x experts scores,
/// then counts and offsets of the stacked experts and the staged expert ids.
fn plan_smem(sp: RouterSpec, rows: usize) -> usize {
    let ints = 2 * sp.stacked() + 1 + (rows * sp.routes()).min(MOE_SMEM_PAIRS);
    (MOE_ROUTE_WARPS * 2 * sp.experts + ints) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_stacked_experts_count_the_shared_slices() {
        let sp = RouterSpec {
            experts: 64,
            top_k: 6,
            sigmoid: false,
            n_group: 1,
            topk_group: 1,
            top_two_sum: false,
            norm_topk_prob: false,
            scaling: 1.0,
            shared: 2,
        };
        assert_eq!((sp.routes(), sp.stacked()), (8, 66));
        // The routing's shared memory holds the stacked experts' counts and offsets.
        let plain = RouterSpec { shared: 0, ..sp };
        assert_eq!(plan_smem(sp, 1) - plan_smem(plain, 1), (2 * 2 + 2) * 4);
    }
}
