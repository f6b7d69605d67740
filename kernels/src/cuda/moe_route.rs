//! The mixture-of-experts routing on the device (`moe_route.cu` for a
//! row, `moe_plan.cu` for the plan, `moe.cu` for the launch): router logits, each row's
//! experts and weights, and the pairs laid out by expert in slots for the
//! grouped launches (`moe.rs`), with no host round trip, so a forward stays
//! one CUDA graph.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, launch_cluster, name, need, RawArg, THREADS};
use super::moe_forms::{
    moe_l2, moe_slot_pairs, one_row_routing, routes_in_a_cluster, OneRowRouting,
};
use super::norm::NORM_THREADS;
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
    /// each expert's pairs in slots of at most `chunk`: the shared slices
    /// first (slice `j`'s pairs `j * rows..`, every row in order, so their
    /// slots are known before the routing), then the routed experts in
    /// ascending id, then (-1, 0, 0, 0) up to [`MoePlan::slots`].
    pub(crate) slot_table: CudaSlice<i32>,
    pub(crate) pair_row: CudaSlice<i32>,
    /// Each pair's route `r * routes + j` (row `r`'s `j`-th expert): where
    /// the down product leaves its output for the combine.
    pub(crate) pair_route: CudaSlice<i32>,
    /// Blocks of the routing launch that have finished (zero between launches).
    ticket: CudaSlice<u32>,
    pub(crate) spec: RouterSpec,
    /// Pairs a grouped block takes at most (a slot's share of an expert).
    pub(crate) chunk: usize,
    /// The last routing wrote the rows it routed ([`RouteInput::Norm`]): the
    /// gate|up must wait on it for every slot, the shared slices' too.
    pub(crate) routing_wrote_input: bool,
    /// How a forward of one row gathers its logits ([`OneRowRouting`]).
    pub(crate) one_row: OneRowRouting,
    /// The grouped launches stream their weights past L2 and the shared
    /// slices' gate|up asks L2 for their down weights ([`MoeL2`](super::MoeL2)).
    pub(crate) l2_ahead: bool,
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
            routing_wrote_input: false,
            one_row: one_row_routing(),
            l2_ahead: moe_l2().applies(rows, chunk),
        })
    }

    /// Pairs (row, expert) of a forward: `rows * routes`.
    pub fn pairs(&self) -> usize {
        self.rows * self.spec.routes()
    }

    /// Whether the grouped launches of this plan's forwards take the L2
    /// form ([`MoeL2`](super::MoeL2)): weights streamed, the shared slices'
    /// down asked of L2 ahead.
    pub fn l2_ahead(&self) -> bool {
        self.l2_ahead
    }

    /// Slots a grouped launch covers (its grid's y).
    pub(crate) fn slots(&self) -> usize {
        slot_cap(self.pairs(), self.spec.stacked(), self.chunk)
    }
}

/// Slots `pairs` pairs over `experts` stacked experts can fill, each
/// expert's pairs cut into slots of at most `chunk`: one per expert with
/// pairs (at most one per pair), plus one per whole `chunk` of pairs.
fn slot_cap(pairs: usize, experts: usize, chunk: usize) -> usize {
    (pairs.min(experts) + pairs / chunk).max(1)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Slots `moe_route_plan` lays out for these per-expert pair counts:
    /// each expert's pairs in slots of at most `chunk`.
    fn laid_out(counts: &[usize], chunk: usize) -> usize {
        counts.iter().map(|c| c.div_ceil(chunk)).sum()
    }

    /// The grid's slots cover every slot the routing can lay out, however
    /// the pairs fall: all on one expert, one each, shared slices every row
    /// reaches, and random routings (a launch short of slots would skip
    /// pairs, silently).
    #[test]
    fn the_slot_cap_covers_every_routing() {
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        for &(experts, routes, shared) in &[(64, 6, 0), (64, 8, 2), (256, 9, 1), (12, 3, 1)] {
            for rows in [1, 2, 7, 31, 64, 192, 512] {
                let pairs = rows * routes;
                for chunk in [32, pairs.max(1)] {
                    let cap = slot_cap(pairs, experts + shared, chunk);
                    let mut one = vec![0; experts + shared];
                    one[0] = pairs;
                    assert!(laid_out(&one, chunk) <= cap, "one expert, {rows} rows");
                    for _ in 0..50 {
                        let mut counts = vec![0; experts + shared];
                        for _ in 0..rows {
                            for s in 0..shared {
                                counts[experts + s] += 1;
                            }
                            for _ in 0..routes - shared {
                                counts[rng.random_range(0..experts)] += 1;
                            }
                        }
                        assert!(
                            laid_out(&counts, chunk) <= cap,
                            "{experts} experts + {shared}, {rows} rows, chunk {chunk}"
                        );
                    }
                }
            }
        }
    }

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
