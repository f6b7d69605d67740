//! The forward pieces of latent attention and experts on the GPU (see
//! `layers.rs` for the layer around them): their per-shape buffers and the
//! absorbed-form latent attention (the experts: `experts_forward.rs`).

use super::batch::BatchOnDevice;
use super::forward::Scratch;
use super::kv_pool::KvPool;
use super::layers::{LayerAttention, LayerFfn, TargetLayer};
use super::profile::OpClock;
use super::sparse_weights::{DeviceMla, DeviceMlaQuery};
use super::weights::DeviceNorm;
use crate::error::Result;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{
    mla_attention_uv, mla_prep, mla_prep_uk, mla_uk, rms_norm_residual, Gpu, GpuElement,
    MlaAttentionForms, MlaPrepInputs, MlaRope, MlaScratch, MoePlan,
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
    pub(super) plan: MoePlan,
    pub(super) act: CudaSlice<T>,
    pub(super) yexp: CudaSlice<T>,
    pub(super) shared_out: CudaSlice<T>,
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

/// Latent attention of `input` into `sc.o`: queries and the compressed
/// row, the cache entry and the rotated query parts, `q_lat = W_UK^T
/// q_nope`, attention over the compressed cache, `W_UV`, o projection.
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
    clock: &mut OpClock,
) -> Result<()>
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
    Ok(())
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
