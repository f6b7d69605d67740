//! A forward's routing plan on the device: the router's description
//! ([`RouterSpec`]) and the buffers the routing (`moe_route.rs`) fills and
//! the grouped launches (`moe.rs`) read ([`MoePlan`]): logits, each row's
//! experts and weights, and the pairs laid out by expert in slots
//! (`moe_plan.cu` lays them out).

use super::device::{Gpu, GpuError};
use super::launch::need;
use super::moe_forms::{moe_l2, moe_slot_pairs, one_row_routing, OneRowRouting};
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
    pub(crate) ticket: CudaSlice<u32>,
    pub(crate) spec: RouterSpec,
    /// Pairs a grouped block takes at most (a slot's share of an expert).
    pub(crate) chunk: usize,
    /// The last routing wrote the rows it routed ([`RouteInput::Norm`](super::moe_route::RouteInput::Norm)): the
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
}
