//! The target's decoder layers on the GPU, for every family: grouped-query
//! or latent attention, then a dense MLP or experts, each behind an RMSNorm
//! and added to the residual (the CPU model's `DecoderLayer`).

use super::forward::{
    dense_mlp, gqa_attention, mlp_into, post_attention_norm, BatchOnDevice, Scratch, ScratchSizes,
};
use super::kv_pool::KvPool;
use super::profile::OpClock;
use super::sparse_weights::{DeviceMla, DeviceMlaQuery, DeviceMoe};
use super::weights::{DeviceGqa, DeviceMlp, DeviceNorm, Seeds};
use crate::config::TargetConfig;
use crate::error::Result;
use crate::model::layer::{DecoderLayer, FeedForward, Mixer};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::AttentionShape;
use specula_kernels::cuda::{
    mla_attention, mla_head_linear, mla_prep, moe_combine, moe_grouped, moe_route,
    rms_norm_residual, ExpertWeights, Gpu, GpuElement, HeadStrides, MlaPrepInputs, MlaRope,
    MlaScratch, MoePlan, QkvLayout, INVARIANT_MAX_ROWS,
};

/// A layer's attention (a few per model: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum LayerAttention<T> {
    /// Grouped-query attention.
    Gqa(DeviceGqa<T>),
    /// Latent attention (absorbed form).
    Latent(DeviceMla<T>),
}

/// A layer's feed-forward (a few per model: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum LayerFfn<T> {
    /// The gated MLP.
    Dense(DeviceMlp<T>),
    /// Routed (and shared) experts.
    Experts(DeviceMoe<T>),
}

/// One decoder layer of the target on the device.
pub(crate) struct TargetLayer<T> {
    pub(crate) input_norm: DeviceNorm<T>,
    pub(crate) attn: LayerAttention<T>,
    pub(crate) post_norm: DeviceNorm<T>,
    pub(crate) ffn: LayerFfn<T>,
}

impl<T: GpuElement> TargetLayer<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU decoder layer.
    pub(crate) fn upload(gpu: &Gpu, l: &DecoderLayer) -> Result<TargetLayer<T>> {
        Ok(TargetLayer {
            input_norm: DeviceNorm::upload(gpu, &l.input_norm)?,
            attn: match &l.attn {
                Mixer::Gqa(a) => LayerAttention::Gqa(DeviceGqa::upload(gpu, a)?),
                Mixer::Latent(a) => LayerAttention::Latent(DeviceMla::upload(gpu, a)?),
            },
            post_norm: DeviceNorm::upload(gpu, &l.post_norm)?,
            ffn: match &l.mlp {
                FeedForward::Dense(m) => LayerFfn::Dense(DeviceMlp::upload(gpu, m)?),
                FeedForward::Experts(m) => LayerFfn::Experts(DeviceMoe::upload(gpu, m)?),
            },
        })
    }

    /// Random weights for layer `i` of `c`'s shape.
    pub(crate) fn random(
        gpu: &Gpu,
        c: &TargetConfig,
        i: usize,
        seeds: &mut Seeds,
    ) -> Result<TargetLayer<T>> {
        let h = c.hidden_size;
        let eps = c.rms_norm_eps;
        let attn = match &c.mla {
            Some(m) => {
                LayerAttention::Latent(DeviceMla::random(gpu, m, c.num_attention_heads, h, seeds)?)
            }
            None => {
                let layout = QkvLayout {
                    heads: c.num_attention_heads,
                    kv_heads: c.num_key_value_heads,
                    head_dim: c.head_dim,
                };
                let qk_norm = c.family.has_qk_norm().then_some(eps);
                LayerAttention::Gqa(DeviceGqa::random(gpu, h, h, layout, qk_norm, seeds)?)
            }
        };
        let ffn = match &c.moe {
            Some(m) if m.sparse_layers[i] => {
                LayerFfn::Experts(DeviceMoe::random(gpu, m, h, seeds)?)
            }
            _ => LayerFfn::Dense(DeviceMlp::random(gpu, h, c.intermediate_size, seeds)?),
        };
        Ok(TargetLayer {
            input_norm: DeviceNorm::ones(gpu, h, eps)?,
            attn,
            post_norm: DeviceNorm::ones(gpu, h, eps)?,
            ffn,
        })
    }

    /// Bytes every forward reads (all but the routed experts).
    pub(crate) fn fixed_bytes(&self) -> usize {
        let attn = match &self.attn {
            LayerAttention::Gqa(a) => a.bytes(),
            LayerAttention::Latent(a) => a.bytes(),
        };
        let ffn = match &self.ffn {
            LayerFfn::Dense(m) => m.bytes(),
            LayerFfn::Experts(m) => m.fixed_bytes(),
        };
        attn + ffn + (self.input_norm.w.len() + self.post_norm.w.len()) * T::BYTES
    }
}

/// The shared work buffers' widths for `layers` with residual width `hidden`.
pub(crate) fn scratch_sizes<T>(layers: &[TargetLayer<T>], hidden: usize) -> ScratchSizes {
    let mut s = ScratchSizes {
        qkv: 1,
        q: 1,
        hidden,
        inner: 1,
        shape: AttentionShape {
            n_heads: 1,
            n_kv_heads: 1,
            head_dim: 8,
        },
    };
    for l in layers {
        match &l.attn {
            LayerAttention::Gqa(a) => {
                let t = a.layout;
                s.qkv = s.qkv.max(a.qkv.out_dim);
                s.q = s.q.max(t.heads * t.head_dim);
                s.shape = AttentionShape {
                    n_heads: t.heads,
                    n_kv_heads: t.kv_heads,
                    head_dim: t.head_dim,
                };
            }
            LayerAttention::Latent(a) => {
                if let DeviceMlaQuery::Plain(q) = &a.q {
                    s.qkv = s.qkv.max(q.out_dim);
                }
            }
        }
        s.inner = s.inner.max(match &l.ffn {
            LayerFfn::Dense(m) => m.inner,
            LayerFfn::Experts(m) => m.shared.as_ref().map_or(1, |sh| sh.inner),
        });
    }
    s
}

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

/// The buffers latent attention and experts add to a forward shape.
pub(crate) struct SparseBuffers<T> {
    mla: Option<MlaBuffers<T>>,
    moe: Option<MoeBuffers<T>>,
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

/// What one layer's forward reads besides its weights.
pub(crate) struct LayerInputs<'a> {
    pub(crate) batch: &'a BatchOnDevice,
    pub(crate) layer: usize,
    /// RoPE of grouped-query attention.
    pub(crate) inv_freq: &'a CudaSlice<f32>,
    /// RoPE of latent attention and its softmax scale.
    pub(crate) mla_rope: Option<(MlaRope<'a>, f32)>,
    /// Counters of experts touched (decode and verify forwards only).
    pub(crate) stats: Option<&'a mut CudaSlice<u64>>,
}

/// Runs one layer on `input` (its input norm's output): `x += attention`,
/// `sc.normed = post_norm(x)`, `sc.mlp = feed_forward(sc.normed)` (added to
/// `x` by the next norm).
#[allow(clippy::too_many_arguments)]
pub(crate) fn layer_forward<T: GpuElement>(
    gpu: &Gpu,
    l: &TargetLayer<T>,
    x: &mut CudaSlice<T>,
    input: &CudaSlice<T>,
    pool: &mut KvPool<T>,
    li: LayerInputs<'_>,
    sc: &mut Scratch<T>,
    sp: &mut SparseBuffers<T>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    let b = li.batch;
    match &l.attn {
        LayerAttention::Gqa(a) => {
            gqa_attention(gpu, a, input, b, pool, li.layer, li.inv_freq, sc, clock)?
        }
        LayerAttention::Latent(a) => {
            let buf = sp
                .mla
                .as_mut()
                .expect("latent buffers exist for a latent layer");
            let (rope, scale) = li.mla_rope.expect("latent RoPE exists for a latent layer");
            latent_attention(
                gpu, a, input, b, pool, li.layer, rope, scale, sc, buf, clock,
            )?;
        }
    }
    post_attention_norm(gpu, &l.post_norm, x, sc, clock)?;
    match &l.ffn {
        LayerFfn::Dense(m) => dense_mlp(gpu, m, b.rows, sc, clock),
        LayerFfn::Experts(m) => {
            let buf = sp
                .moe
                .as_mut()
                .expect("expert buffers exist for an expert layer");
            let stats = li.stats.filter(|_| b.rows <= INVARIANT_MAX_ROWS);
            experts(gpu, m, b.rows, sc, buf, stats, clock)
        }
    }
}

/// Latent attention of `input` into `sc.o`: queries and the compressed
/// row, the cache entry and the rotated query parts, `q_lat = W_UK^T
/// q_nope`, attention over the compressed cache, `W_UV`, o projection.
#[allow(clippy::too_many_arguments)]
fn latent_attention<T: GpuElement>(
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
    mla_prep(gpu, &mut buf.qcat, &mut pool.k, offset, &inputs, rope, sh)?;
    let qs = HeadStrides {
        row: q_stride,
        head: qk,
    };
    let cs = HeadStrides {
        row: nh * d,
        head: d,
    };
    mla_head_linear(
        gpu,
        &mut buf.qcat,
        cs,
        q,
        qs,
        &a.w_ukt,
        rows,
        nh,
        sh.lora,
        sh.nope,
    )?;
    clock.mark(gpu, "latent prep + W_UK");
    mla_attention(
        gpu,
        &mut buf.olat,
        &buf.qcat,
        &pool.k,
        offset,
        &b.keys,
        &mut buf.scratch,
        sh,
        scale,
    )?;
    clock.mark(gpu, "latent attention");
    let ls = HeadStrides {
        row: nh * sh.lora,
        head: sh.lora,
    };
    let vs = HeadStrides {
        row: nh * sh.v_dim,
        head: sh.v_dim,
    };
    mla_head_linear(
        gpu,
        &mut buf.heads_out,
        vs,
        &buf.olat,
        ls,
        &a.w_uv,
        rows,
        nh,
        sh.v_dim,
        sh.lora,
    )?;
    a.o.forward(gpu, &mut sc.o, &buf.heads_out, rows)?;
    clock.mark(gpu, "W_UV + linear o");
    Ok(())
}

/// The experts of `sc.normed` into `sc.mlp`: routing, grouped gate|up with
/// SiLU, grouped down, the shared experts, the combine.
fn experts<T: GpuElement>(
    gpu: &Gpu,
    m: &DeviceMoe<T>,
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
    moe_route(
        gpu,
        &mut buf.plan,
        &sc.normed,
        &m.gate,
        m.bias.as_ref(),
        h,
        stats,
    )?;
    clock.mark(gpu, "router");
    let gu = ExpertWeights {
        w: &m.gate_up,
        n: 2 * m.inner,
        k: h,
    };
    moe_grouped(gpu, &mut buf.act, &sc.normed, gu, &buf.plan, true, true)?;
    let dn = ExpertWeights {
        w: &m.down,
        n: h,
        k: m.inner,
    };
    moe_grouped(gpu, &mut buf.yexp, &buf.act, dn, &buf.plan, false, false)?;
    clock.mark(gpu, "routed experts");
    if let Some(shared) = &m.shared {
        mlp_into(gpu, shared, rows, sc, Some(&mut buf.shared_out), clock)?;
    }
    let shared = m.shared.as_ref().map(|_| &buf.shared_out);
    moe_combine(gpu, &mut sc.mlp, &buf.yexp, shared, &buf.plan, h)?;
    clock.mark(gpu, "combine");
    Ok(())
}
