//! The target's decoder layers on the GPU, for every family: grouped-query
//! or latent attention, then a dense MLP or experts, each behind an RMSNorm
//! and added to the residual (the CPU model's `DecoderLayer`).

use super::batch::BatchOnDevice;
use super::experts_forward::experts;
use super::forward::{dense_mlp, gqa_attention, post_attention_norm, Scratch, ScratchSizes};
use super::kv_pool::KvPool;
use super::profile::OpClock;
use super::sparse_forward::{latent_attention, PostNorm, SparseBuffers};
use super::sparse_weights::{DeviceMla, DeviceMlaQuery, DeviceMoe};
use super::weights::{DeviceGqa, DeviceMlp, DeviceNorm, Seeds};
use crate::config::TargetConfig;
use crate::error::Result;
use crate::model::layer::{DecoderLayer, FeedForward, Mixer};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::AttentionShape;
use specula_kernels::cuda::{
    moe_combine_norm, rms_norm_residual, Gpu, GpuElement, MlaRope, QkvLayout, INVARIANT_MAX_ROWS,
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
/// `sc.normed = post_norm(x)`, then the feed-forward of `sc.normed`, added to
/// `x` by the next norm ([`norm_after`]): a dense MLP's into `sc.mlp`, an
/// experts layer's left uncombined in `sp`.
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
    match &l.ffn {
        LayerFfn::Dense(m) => {
            post_attention_norm(gpu, &l.post_norm, x, sc, clock)?;
            dense_mlp(gpu, m, b.rows, sc, clock)
        }
        LayerFfn::Experts(m) => {
            let buf = sp
                .moe
                .as_mut()
                .expect("expert buffers exist for an expert layer");
            let stats = li.stats.filter(|_| b.rows <= INVARIANT_MAX_ROWS);
            let rows = b.rows;
            let post = PostNorm {
                norm: &l.post_norm,
                residual: x,
            };
            experts(gpu, m, post, rows, sc, buf, stats, clock)
        }
    }
}

/// The RMSNorm that follows layer `prev` (none: the first layer's, on the
/// embeddings): `x +=` what `prev`'s feed-forward made (`sc.mlp` for a dense
/// MLP; an experts layer's combine, fused into this launch, after `sc.o`
/// when its routing ran the post-attention norm), then `out = norm(x)`.
pub(crate) fn norm_after<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    x: &mut CudaSlice<T>,
    prev: Option<&TargetLayer<T>>,
    sc: &Scratch<T>,
    sp: &SparseBuffers<T>,
    norm: &DeviceNorm<T>,
) -> Result<()> {
    let h = norm.w.len();
    let mlp = &sc.mlp;
    match prev.map(|l| &l.ffn) {
        Some(LayerFfn::Experts(m)) => {
            let yo = sp
                .experts_output(m, &sc.o)
                .expect("expert buffers exist for an expert layer");
            moe_combine_norm(gpu, out, x, yo, &norm.w, norm.eps)?
        }
        Some(LayerFfn::Dense(_)) => {
            rms_norm_residual(gpu, out, x, Some(mlp), &norm.w, norm.eps, h)?
        }
        None => rms_norm_residual(gpu, out, x, None, &norm.w, norm.eps, h)?,
    }
    Ok(())
}
