//! Device copies of model weights: uploaded from the CPU model (so both
//! backends compute with the same numbers) or drawn on the device
//! (`--random-weights`: throughput without downloading a checkpoint).
//! Projections that read the same input are fused: q|k|v and gate|up.

use crate::error::Result;
use crate::model::blocks::{Attention, Linear, Mlp, Norm};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{fill_uniform, Gpu, GpuElement, LinearLayer, QkvLayout};

/// Uploads host floats as `T`.
pub(crate) fn upload<T: GpuElement>(gpu: &Gpu, v: &[f32]) -> Result<CudaSlice<T>> {
    let t: Vec<T> = v.iter().map(|&x| T::from_f32(x)).collect();
    Ok(gpu.stream.clone_htod(&t)?)
}

/// Downloads `T`s as host floats.
pub(crate) fn download<T: GpuElement>(gpu: &Gpu, s: &CudaSlice<T>) -> Result<Vec<f32>> {
    Ok(gpu
        .stream
        .clone_dtoh(s)?
        .into_iter()
        .map(GpuElement::to_f32)
        .collect())
}

/// `n` values `offset + scale * U(-1, 1)` drawn on the device.
pub(crate) fn random<T: GpuElement>(
    gpu: &Gpu,
    n: usize,
    seed: u64,
    scale: f32,
    offset: f32,
) -> Result<CudaSlice<T>> {
    let mut x = unsafe { gpu.stream.alloc::<T>(n) }?;
    fill_uniform(gpu, &mut x, seed, scale, offset)?;
    Ok(x)
}

/// Per-tensor seeds from one run seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seeds(pub u64);

impl Seeds {
    /// The next tensor's seed.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.0
    }
}

/// A linear layer on the device, `[out, in]`.
pub(crate) struct DeviceLinear<T> {
    pub(crate) w: CudaSlice<T>,
    pub(crate) bias: Option<CudaSlice<T>>,
    pub(crate) out_dim: usize,
    pub(crate) in_dim: usize,
}

impl<T: GpuElement> DeviceLinear<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads `parts` stacked along the output dimension (one fused projection).
    pub(crate) fn upload(gpu: &Gpu, parts: &[&Linear]) -> Result<DeviceLinear<T>> {
        let in_dim = parts[0].in_dim;
        let out_dim = parts.iter().map(|l| l.out_dim).sum();
        let w: Vec<f32> = parts
            .iter()
            .flat_map(|l| l.w.to_f32().into_owned())
            .collect();
        // A part without a bias contributes zeros to the fused one.
        let bias = if parts.iter().any(|l| l.bias.is_some()) {
            let b: Vec<f32> = parts
                .iter()
                .flat_map(|l| match &l.bias {
                    Some(b) => b.clone(),
                    None => vec![0.0; l.out_dim],
                })
                .collect();
            Some(upload(gpu, &b)?)
        } else {
            None
        };
        Ok(DeviceLinear {
            w: upload(gpu, &w)?,
            bias,
            out_dim,
            in_dim,
        })
    }

    /// Uploads two projections of the same input with their rows interleaved
    /// (`2i` from `a`, `2i + 1` from `b`): the fused gate|up layout whose
    /// SiLU runs in the GEMM's epilogue.
    pub(crate) fn upload_interleaved(gpu: &Gpu, a: &Linear, b: &Linear) -> Result<DeviceLinear<T>> {
        if a.bias.is_some() || b.bias.is_some() {
            return Err(crate::error::EngineError::setting(
                "mlp_bias",
                "gate/up projections with biases are not supported by the GPU backend",
            ));
        }
        let k = a.in_dim;
        let mut w = Vec::with_capacity(2 * a.w.len());
        let (aw, bw) = (a.w.to_f32(), b.w.to_f32());
        for (ra, rb) in aw.chunks_exact(k).zip(bw.chunks_exact(k)) {
            w.extend_from_slice(ra);
            w.extend_from_slice(rb);
        }
        Ok(DeviceLinear {
            w: upload(gpu, &w)?,
            bias: None,
            out_dim: a.out_dim + b.out_dim,
            in_dim: k,
        })
    }

    /// Random weights with unit output variance for unit-variance inputs.
    pub(crate) fn random(
        gpu: &Gpu,
        out_dim: usize,
        in_dim: usize,
        seeds: &mut Seeds,
    ) -> Result<DeviceLinear<T>> {
        let scale = (3.0 / in_dim as f32).sqrt();
        Ok(DeviceLinear {
            w: random(gpu, out_dim * in_dim, seeds.next(), scale, 0.0)?,
            bias: None,
            out_dim,
            in_dim,
        })
    }

    /// `y[rows, out] = x[rows, in] W^T (+ bias)`.
    pub(crate) fn forward(
        &self,
        gpu: &Gpu,
        y: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        rows: usize,
    ) -> Result<()> {
        self.on(gpu).auto(y, x, rows)?;
        Ok(())
    }

    /// The layer as the linear kernels run it on `gpu`.
    pub(crate) fn on<'a>(&'a self, gpu: &'a Gpu) -> LinearLayer<'a, T> {
        LinearLayer {
            gpu,
            w: &self.w,
            bias: self.bias.as_ref(),
            k: self.in_dim,
            n: self.out_dim,
        }
    }

    /// Bytes of weights.
    pub(crate) fn bytes(&self) -> usize {
        (self.w.len() + self.bias.as_ref().map_or(0, |b| b.len())) * T::BYTES
    }
}

/// An RMSNorm weight on the device.
pub(crate) struct DeviceNorm<T> {
    pub(crate) w: CudaSlice<T>,
    pub(crate) eps: f32,
}

impl<T: GpuElement> DeviceNorm<T> {
    /// Uploads a CPU norm.
    pub(crate) fn upload(gpu: &Gpu, n: &Norm) -> Result<DeviceNorm<T>> {
        Ok(DeviceNorm {
            w: upload(gpu, &n.w)?,
            eps: n.eps,
        })
    }

    /// A norm of ones.
    pub(crate) fn ones(gpu: &Gpu, dim: usize, eps: f32) -> Result<DeviceNorm<T>> {
        Ok(DeviceNorm {
            w: random(gpu, dim, 0, 0.0, 1.0)?,
            eps,
        })
    }
}

/// Grouped-query attention on the device: fused q|k|v and o projections.
pub(crate) struct DeviceGqa<T> {
    pub(crate) qkv: DeviceLinear<T>,
    pub(crate) o: DeviceLinear<T>,
    pub(crate) layout: QkvLayout,
    /// Per-head RMSNorms of q and k before RoPE (Qwen3).
    pub(crate) head_norm: Option<(DeviceNorm<T>, DeviceNorm<T>)>,
}

impl<T: GpuElement> DeviceGqa<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU attention block.
    pub(crate) fn upload(gpu: &Gpu, attn: &Attention) -> Result<DeviceGqa<T>> {
        Ok(DeviceGqa {
            qkv: DeviceLinear::upload(gpu, &[&attn.q, &attn.k, &attn.v])?,
            o: DeviceLinear::upload(gpu, &[&attn.o])?,
            layout: QkvLayout {
                heads: attn.shape.n_heads,
                kv_heads: attn.shape.n_kv_heads,
                head_dim: attn.shape.head_dim,
            },
            head_norm: match (&attn.q_norm, &attn.k_norm) {
                (Some(q), Some(k)) => {
                    Some((DeviceNorm::upload(gpu, q)?, DeviceNorm::upload(gpu, k)?))
                }
                _ => None,
            },
        })
    }

    /// Random weights for an input of `in_dim` and an output of `hidden`
    /// (per-head q/k norms of ones with `head_norm_eps`).
    pub(crate) fn random(
        gpu: &Gpu,
        in_dim: usize,
        hidden: usize,
        layout: QkvLayout,
        head_norm_eps: Option<f32>,
        seeds: &mut Seeds,
    ) -> Result<DeviceGqa<T>> {
        let hd = layout.head_dim;
        let head_norm = match head_norm_eps {
            Some(e) => Some((DeviceNorm::ones(gpu, hd, e)?, DeviceNorm::ones(gpu, hd, e)?)),
            None => None,
        };
        let qd = layout.heads * layout.head_dim;
        let qkv_out = (layout.heads + 2 * layout.kv_heads) * layout.head_dim;
        Ok(DeviceGqa {
            qkv: DeviceLinear::random(gpu, qkv_out, in_dim, seeds)?,
            o: DeviceLinear::random(gpu, hidden, qd, seeds)?,
            layout,
            head_norm,
        })
    }

    /// Bytes of weights read by one forward.
    pub(crate) fn bytes(&self) -> usize {
        self.qkv.bytes()
            + self.o.bytes()
            + self
                .head_norm
                .as_ref()
                .map_or(0, |(q, k)| (q.w.len() + k.w.len()) * T::BYTES)
    }
}

/// The gated MLP on the device: gate|up rows interleaved (SiLU in the epilogue), down.
pub(crate) struct DeviceMlp<T> {
    pub(crate) gate_up: DeviceLinear<T>,
    pub(crate) down: DeviceLinear<T>,
    pub(crate) inner: usize,
}

impl<T: GpuElement> DeviceMlp<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU MLP.
    pub(crate) fn upload(gpu: &Gpu, mlp: &Mlp) -> Result<DeviceMlp<T>> {
        Ok(DeviceMlp {
            gate_up: DeviceLinear::upload_interleaved(gpu, &mlp.gate, &mlp.up)?,
            down: DeviceLinear::upload(gpu, &[&mlp.down])?,
            inner: mlp.gate.out_dim,
        })
    }

    /// Random weights for a residual of `hidden` and `inner` gated units.
    pub(crate) fn random(
        gpu: &Gpu,
        hidden: usize,
        inner: usize,
        seeds: &mut Seeds,
    ) -> Result<DeviceMlp<T>> {
        Ok(DeviceMlp {
            gate_up: DeviceLinear::random(gpu, 2 * inner, hidden, seeds)?,
            down: DeviceLinear::random(gpu, hidden, inner, seeds)?,
            inner,
        })
    }

    /// Bytes of weights read by one forward.
    pub(crate) fn bytes(&self) -> usize {
        self.gate_up.bytes() + self.down.bytes()
    }
}

/// Attention and MLP of one decoder layer (the target's or the draft's midlayer).
pub(crate) struct DeviceBlock<T> {
    pub(crate) attn: DeviceGqa<T>,
    pub(crate) post_norm: DeviceNorm<T>,
    pub(crate) mlp: DeviceMlp<T>,
}

impl<T: GpuElement> DeviceBlock<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU attention block, its post-attention norm and MLP.
    pub(crate) fn upload(
        gpu: &Gpu,
        attn: &Attention,
        post_norm: &Norm,
        mlp: &Mlp,
    ) -> Result<DeviceBlock<T>> {
        Ok(DeviceBlock {
            attn: DeviceGqa::upload(gpu, attn)?,
            post_norm: DeviceNorm::upload(gpu, post_norm)?,
            mlp: DeviceMlp::upload(gpu, mlp)?,
        })
    }

    /// Random weights for an input of `in_dim`, a residual of `hidden`
    /// (per-head q/k norms of ones with `head_norm_eps`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn random(
        gpu: &Gpu,
        in_dim: usize,
        hidden: usize,
        inner: usize,
        layout: QkvLayout,
        eps: f32,
        head_norm_eps: Option<f32>,
        seeds: &mut Seeds,
    ) -> Result<DeviceBlock<T>> {
        Ok(DeviceBlock {
            attn: DeviceGqa::random(gpu, in_dim, hidden, layout, head_norm_eps, seeds)?,
            post_norm: DeviceNorm::ones(gpu, hidden, eps)?,
            mlp: DeviceMlp::random(gpu, hidden, inner, seeds)?,
        })
    }
}
