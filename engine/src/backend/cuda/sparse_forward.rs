//! The forward pieces of latent attention and experts on the GPU (see
//! `layers.rs` for the layer around them): their per-shape buffers, the
//! absorbed-form latent attention and the routed + shared experts.

use super::batch::BatchOnDevice;
use super::forward::{mlp_into, post_attention_norm, Scratch};
use super::kv_pool::KvPool;
use super::layers::{LayerAttention, LayerFfn, TargetLayer};
use super::profile::OpClock;
use super::shared_experts::{shared_placement, SharedPlacement as Place};
use super::sparse_weights::{DeviceMla, DeviceMlaQuery, DeviceMoe};
use super::weights::DeviceNorm;
use crate::error::Result;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{
    invariant_linear_rows, mla_attention_uv, mla_prep, mla_prep_uk, mla_uk, moe_grouped, moe_route,
    moe_route_norm_fits, rms_norm_residual, shared_ahead, ExpertProduct, ExpertWeights,
    ExpertsOutput, Gpu, GpuElement, L2Span, MlaAttentionForms, MlaPrepInputs, MlaRope, MlaScratch,
    MoePlan, RouteInput, SharedAhead,
};
use specula_kernels::switch::Switch;

/// Latent attention's buffers of one forward shape.
pub(crate) struct MlaBuffers<T> {
    qa: CudaSlice<T>,
    qa_normed: CudaSlice<T>,
    q: CudaSlice<T>,
    ckv: CudaSlice<T>,
    qcat: CudaSlice<T>,
    olat: CudaSlice<T>,
    heads_out: CudaSlice<T>,
    scratch: MlaScratch,
}

/// The experts' buffers of one forward shape.
pub(crate) struct MoeBuffers<T> {
    plan: MoePlan,
    act: CudaSlice<T>,
    yexp: CudaSlice<T>,
    shared_out: CudaSlice<T>,
}

/// A layer's post-attention norm and the residual stream it adds the
/// attention's output (`sc.o`) to.
pub(crate) struct PostNorm<'a, T> {
    pub(crate) norm: &'a DeviceNorm<T>,
    pub(crate) residual: &'a mut CudaSlice<T>,
}

/// The buffers latent attention and experts add to a forward shape.
pub(crate) struct SparseBuffers<T> {
    pub(super) mla: Option<MlaBuffers<T>>,
    pub(super) moe: Option<MoeBuffers<T>>,
}

impl<T: GpuElement> SparseBuffers<T> {
    /// Buffers for `b`'s rows through `layers` (none for a dense model).
    pub(crate) fn new(gpu: &Gpu, b: &BatchOnDevice, layers: &[TargetLayer<T>]) -> Result<Self> {
        let rows = b.rows;
        let s = &gpu.stream;
        let mla = match layers.iter().find_map(|l| match &l.attn {
            LayerAttention::Latent(a) => Some(a),
            _ => None,
        }) {
            None => None,
            Some(a) => {
                let sh = a.shape;
                let (qk, d) = (sh.nope + sh.rope, sh.entry());
                let qa_w = match &a.q {
                    DeviceMlaQuery::Lora { q_a, .. } => q_a.out_dim,
                    DeviceMlaQuery::Plain(_) => 1,
                };
                Some(MlaBuffers {
                    qa: s.alloc_zeros(rows * qa_w)?,
                    qa_normed: s.alloc_zeros(rows * qa_w)?,
                    q: s.alloc_zeros(rows * sh.heads * qk)?,
                    ckv: s.alloc_zeros(rows * d)?,
                    qcat: s.alloc_zeros(rows * sh.heads * d)?,
                    olat: s.alloc_zeros(rows * sh.heads * sh.lora)?,
                    heads_out: s.alloc_zeros(rows * sh.heads * sh.v_dim)?,
                    scratch: MlaScratch::new::<T>(gpu, &b.keys, sh)?,
                })
            }
        };
        let moe = match layers.iter().find_map(|l| match &l.ffn {
            LayerFfn::Experts(m) => Some(m),
            _ => None,
        }) {
            None => None,
            Some(m) => {
                let plan = MoePlan::new(gpu, rows, m.spec)?;
                let pairs = plan.pairs().max(1);
                Some(MoeBuffers {
                    act: s.alloc_zeros(pairs * m.inner)?,
                    yexp: s.alloc_zeros(pairs * m.hidden)?,
                    shared_out: s.alloc_zeros(rows.max(1) * m.hidden)?,
                    plan,
                })
            }
        };
        Ok(SparseBuffers { mla, moe })
    }
}

/// The stacked shared slices' weights an experts layer `m`'s latent
/// attention asks L2 for while it leaves DRAM idle ([`SharedAhead`]), in a
/// forward of these buffers whose grouped launches take the L2 form: the
/// gate|up slices, then the down's with `SharedAhead::All`; none with the
/// shared experts apart or none at all. (The attention asks only where its
/// merge runs `W_UV`: [`latent_attention`] says whether it did.)
pub(super) fn shared_slices_ahead<'a, T: GpuElement>(
    m: &'a DeviceMoe<T>,
    buf: &MoeBuffers<T>,
) -> Vec<L2Span<'a, T>> {
    let (spec, h, inner) = (m.spec, m.hidden, m.inner);
    let wanted = shared_ahead();
    if spec.shared == 0 || !buf.plan.l2_ahead() || wanted == SharedAhead::Routing {
        return Vec::new();
    }
    // Gate|up [stacked, 2 * inner, hidden] and down [stacked, hidden,
    // inner]: the shared slices after the routed experts.
    let slice = inner * h;
    let mut spans = vec![L2Span {
        buf: &m.gate_up,
        start: spec.experts * 2 * slice,
        len: spec.shared * 2 * slice,
    }];
    if wanted == SharedAhead::All {
        spans.push(L2Span {
            buf: &m.down,
            start: spec.experts * slice,
            len: spec.shared * slice,
        });
    }
    spans
}

/// Latent attention of `input` into `sc.o`: queries and the compressed
/// row, the cache entry and the rotated query parts, `q_lat = W_UK^T
/// q_nope`, attention over the compressed cache, `W_UV`, o projection.
/// Whether the attention asked L2 for `ahead` (from
/// [`shared_slices_ahead`]; it does where its merge runs `W_UV`).
#[allow(clippy::too_many_arguments)]
pub(super) fn latent_attention<T: GpuElement>(
    gpu: &Gpu,
    a: &DeviceMla<T>,
    input: &CudaSlice<T>,
    b: &BatchOnDevice,
    pool: &mut KvPool<T>,
    layer: usize,
    rope: MlaRope<'_>,
    scale: f32,
    sc: &mut Scratch<T>,
    buf: &mut MlaBuffers<T>,
    ahead: &[L2Span<'_, T>],
    clock: &mut OpClock,
) -> Result<bool>
where
    CudaBlas: Gemm<T>,
{
    let rows = b.rows;
    let sh = a.shape;
    let (qk, d, nh) = (sh.nope + sh.rope, sh.entry(), sh.heads);
    let (q, q_stride, ckv, ckv_offset, ckv_stride) = match &a.q {
        DeviceMlaQuery::Plain(fused) => {
            fused.forward(gpu, &mut sc.qkv, input, rows)?;
            let w = fused.out_dim;
            (&sc.qkv, w, &sc.qkv, nh * qk, w)
        }
        DeviceMlaQuery::Lora {
            q_a,
            q_norm,
            q_b,
            kv_a,
        } => {
            q_a.forward(gpu, &mut buf.qa, input, rows)?;
            let r = q_a.out_dim;
            rms_norm_residual(
                gpu,
                &mut buf.qa_normed,
                &mut buf.qa,
                None,
                &q_norm.w,
                q_norm.eps,
                r,
            )?;
            q_b.forward(gpu, &mut buf.q, &buf.qa_normed, rows)?;
            kv_a.forward(gpu, &mut buf.ckv, input, rows)?;
            (&buf.q, nh * qk, &buf.ckv, 0, d)
        }
    };
    clock.mark(gpu, "latent q + kv_a");
    let offset = pool.layer_offset(layer);
    let inputs = MlaPrepInputs {
        q,
        q_stride,
        ckv,
        ckv_offset,
        ckv_stride,
        kv_norm: (&a.kv_norm.w, a.kv_norm.eps),
        positions: &b.positions,
        entries: &b.entries,
    };
    // The tail's forms (SPECULA_MLA_DOTS, _UV, _MERGE), read once here for
    // W_UK's product and the attention.
    let forms = MlaAttentionForms::from_env();
    // The cache entry and the rotated query parts (qcat's last `rope`
    // values of each head) beside q_lat = W_UK^T q_nope (its first `lora`):
    // both read only q and the compressed row. In one launch (the same
    // bits: check row mla_prep_uk; V2-Lite batch 1 0.6% faster a step,
    // results/h200/narrow-2026-12-05), or with SPECULA_MLA_PREP=two in two,
    // forked.
    if prep_in_one_launch() {
        mla_prep_uk(
            gpu,
            &mut buf.qcat,
            &mut pool.k,
            offset,
            &inputs,
            rope,
            sh,
            &a.w_ukt,
            forms.dots,
        )?;
    } else {
        let fork = !clock.running();
        let prep = |qcat: &mut CudaSlice<T>, k: &mut CudaSlice<T>| {
            mla_prep(gpu, qcat, k, offset, &inputs, rope, sh)
        };
        if fork {
            gpu.fork(|| prep(&mut buf.qcat, &mut pool.k))??;
        } else {
            prep(&mut buf.qcat, &mut pool.k)?;
        }
        mla_uk(gpu, &mut buf.qcat, &inputs, sh, &a.w_ukt, forms.dots)?;
        if fork {
            gpu.join()?;
        }
    }
    clock.mark(gpu, "latent prep + W_UK");
    // W_UV of the heads' latent outputs, in the attention's merge where it
    // can (unless SPECULA_MLA_UV=apart), the splits merged as
    // SPECULA_MLA_MERGE says (the same bits every way).
    let merged = mla_attention_uv(
        gpu,
        &mut buf.olat,
        &mut buf.heads_out,
        &a.w_uv,
        &buf.qcat,
        &pool.k,
        offset,
        &b.keys,
        &mut buf.scratch,
        sh,
        scale,
        forms,
        ahead,
    )?;
    clock.mark(
        gpu,
        if merged {
            "latent attention + W_UV"
        } else {
            "latent attention, W_UV"
        },
    );
    a.o.forward(gpu, &mut sc.o, &buf.heads_out, rows)?;
    clock.mark(gpu, "linear o");
    Ok(merged && !ahead.is_empty())
}

/// Whether the latent attention's preparation and `W_UK` run as one
/// launch (the default; `SPECULA_MLA_PREP=two`: two launches, forked; read
/// once).
fn prep_in_one_launch() -> bool {
    static ONE: Switch<bool> = Switch::new(
        "SPECULA_MLA_PREP",
        &[("one", true), ("two", false)],
        true,
        "one",
    );
    ONE.get()
}

/// The post-attention norm into `sc.normed` and the experts of it: routing,
/// grouped gate|up with SiLU, grouped down (with the shared experts' slices
/// when stacked), the shared experts apart. Their combine is the next
/// RMSNorm's ([`SparseBuffers::experts_output`]). With no shared experts
/// apart, the routing can run the norm itself (`SPECULA_ROUTE_NORM=fused`:
/// [`RouteInput::Norm`], the same bits), leaving the attention's output for
/// the next norm to add. `down_asked`: the attention asked L2 for the
/// shared slices' down weights ([`shared_slices_ahead`]), so the gate|up's
/// shared blocks do not (where the L2 form applies, they otherwise do).
#[allow(clippy::too_many_arguments)]
pub(super) fn experts<T: GpuElement>(
    gpu: &Gpu,
    m: &DeviceMoe<T>,
    post: PostNorm<'_, T>,
    rows: usize,
    sc: &mut Scratch<T>,
    buf: &mut MoeBuffers<T>,
    stats: Option<&mut CudaSlice<u64>>,
    down_asked: bool,
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
        (!down_asked).then_some(&m.down),
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
