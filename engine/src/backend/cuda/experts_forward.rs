//! The experts half of a sparse layer on the GPU (see `layers.rs` for the
//! layer around it): the post-attention norm, routing, grouped gate|up and
//! down with the shared experts stacked or apart, their combine left for
//! the next norm.

use super::forward::{mlp_into, post_attention_norm, Scratch};
use super::profile::OpClock;
use super::shared_experts::{shared_placement, SharedPlacement as Place};
use super::sparse_forward::{MoeBuffers, PostNorm, SparseBuffers};
use super::sparse_weights::DeviceMoe;
use crate::error::Result;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{
    invariant_linear_rows, moe_grouped, moe_route, moe_route_norm_fits, ExpertProduct,
    ExpertWeights, ExpertsOutput, Gpu, GpuElement, RouteInput,
};
use specula_kernels::switch::Switch;

/// The post-attention norm into `sc.normed` and the experts of it: routing,
/// grouped gate|up with SiLU, grouped down (with the shared experts' slices
/// when stacked), the shared experts apart. Their combine is the next
/// RMSNorm's ([`SparseBuffers::experts_output`]). With no shared experts
/// apart, the routing can run the norm itself (`SPECULA_ROUTE_NORM=fused`:
/// [`RouteInput::Norm`], the same bits), leaving the attention's output for
/// the next norm to add.
#[allow(clippy::too_many_arguments)]
pub(super) fn experts<T: GpuElement>(
    gpu: &Gpu,
    m: &DeviceMoe<T>,
    post: PostNorm<'_, T>,
    rows: usize,
    sc: &mut Scratch<T>,
    buf: &mut MoeBuffers<T>,
    stats: Option<&mut CudaSlice<u64>>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    let h = m.hidden;
    // The shared experts apart (none where stacked with the routed ones, the
    // default) read only the normed rows: they run beside the routing and
    // the routed experts, but in order after them while the clock times
    // spans or when the shared projections would go to cuBLAS on the main
    // stream (`SPECULA_SHARED` places them otherwise).
    let place = match shared_placement() {
        Place::Beside | Place::Stacked if rows > invariant_linear_rows() || clock.running() => {
            Place::After
        }
        Place::Stacked => Place::Beside,
        order => order,
    };
    let shared = m.shared.as_ref().map(|s| (s, place));
    let norm_in_routing = routing_runs_norm(m);
    if !norm_in_routing {
        post_attention_norm(gpu, post.norm, post.residual, sc, clock)?;
    }
    if let Some((s, Place::Beside)) = shared {
        gpu.fork(|| mlp_into(gpu, s, rows, sc, Some(&mut buf.shared_out), clock))??;
    }
    if let Some((s, Place::Before)) = shared {
        mlp_into(gpu, s, rows, sc, Some(&mut buf.shared_out), clock)?;
    }
    let input = if norm_in_routing {
        RouteInput::Norm {
            normed: &mut sc.normed,
            residual: post.residual,
            attn: &sc.o,
            w: &post.norm.w,
            eps: post.norm.eps,
        }
    } else {
        RouteInput::Normed(&sc.normed)
    };
    moe_route(
        gpu,
        &mut buf.plan,
        input,
        &m.gate,
        m.bias.as_ref(),
        h,
        stats,
    )?;
    clock.mark(gpu, "router");
    if let Some((s, Place::Between)) = shared {
        mlp_into(gpu, s, rows, sc, Some(&mut buf.shared_out), clock)?;
    }
    let gu = ExpertWeights {
        w: &m.gate_up,
        n: 2 * m.inner,
        k: h,
    };
    moe_grouped(
        gpu,
        &mut buf.act,
        &sc.normed,
        gu,
        &buf.plan,
        ExpertProduct::GateUp,
        Some(&m.down),
    )?;
    let dn = ExpertWeights {
        w: &m.down,
        n: h,
        k: m.inner,
    };
    moe_grouped(
        gpu,
        &mut buf.yexp,
        &buf.act,
        dn,
        &buf.plan,
        ExpertProduct::Down,
        None,
    )?;
    clock.mark(gpu, "routed experts");
    match shared {
        Some((_, Place::Beside)) => gpu.join()?,
        Some((s, Place::After)) => mlp_into(gpu, s, rows, sc, Some(&mut buf.shared_out), clock)?,
        _ => {}
    }
    Ok(())
}

impl<T: GpuElement> SparseBuffers<T> {
    /// The output of the last experts layer `m` ran, left for the next
    /// RMSNorm to combine (`moe_combine_norm`), with that layer's attention
    /// output `attn` when its routing ran the post-attention norm; none
    /// without experts.
    pub(crate) fn experts_output<'a>(
        &'a self,
        m: &DeviceMoe<T>,
        attn: &'a CudaSlice<T>,
    ) -> Option<ExpertsOutput<'a, T>> {
        self.moe.as_ref().map(|buf| ExpertsOutput {
            yexp: &buf.yexp,
            shared: m.shared.as_ref().map(|_| &buf.shared_out),
            plan: &buf.plan,
            attn: routing_runs_norm(m).then_some(attn),
        })
    }
}

/// Whether `m`'s routing runs the layer's post-attention norm, leaving the
/// attention output for the next norm: asked for (`route_norm`), no shared
/// experts apart (they read the normed rows before the routing), and a
/// residual width the routing's norm holds.
fn routing_runs_norm<T: GpuElement>(m: &DeviceMoe<T>) -> bool {
    m.shared.is_none() && route_norm() && moe_route_norm_fits::<T>(m.hidden)
}

/// Whether an experts layer's routing runs its post-attention norm
/// (`SPECULA_ROUTE_NORM`: `apart`, the default, or `fused`; the same bits
/// either way); read once.
fn route_norm() -> bool {
    static FUSED: Switch<bool> = Switch::new(
        "SPECULA_ROUTE_NORM",
        &[("apart", false), ("fused", true)],
        false,
        "apart",
    );
    FUSED.get()
}
