//! Device weights built straight from a checkpoint through the
//! [`Uploader`] (no CPU model in between): linears with their fused
//! layouts assembled on the device (q|k|v stacked, gate|up rows
//! interleaved), norms, grouped-query attention, the gated MLP, a dense
//! decoder layer, and the EAGLE-3 draft. The names and shape checks are
//! the CPU loader's (`model::blocks`, `model::draft`), so both read the
//! same tensors and refuse the same files.

use super::upload::Uploader;
use super::weights::{DeviceBlock, DeviceGqa, DeviceLinear, DeviceMlp, DeviceNorm};
use crate::checkpoint::Checkpoint;
use crate::error::{EngineError, Result};
use crate::model::blocks::AttentionDims;
use cudarc::cublas::{CudaBlas, Gemm};
use specula_kernels::cuda::{GpuElement, QkvLayout};

/// One projection of a fused linear: its tensor prefix and output rows.
pub(crate) struct Part<'a> {
    /// `{name}.weight` (and `{name}.bias`).
    pub(crate) name: &'a str,
    /// Output rows.
    pub(crate) out: usize,
}

impl<T: GpuElement> DeviceLinear<T>
where
    CudaBlas: Gemm<T>,
{
    /// `parts` stacked along the output dimension (one fused projection;
    /// biases when `bias`), each `[out, in_dim]`.
    pub(crate) fn load(
        up: &mut Uploader<'_>,
        ck: &Checkpoint,
        parts: &[Part<'_>],
        in_dim: usize,
        bias: bool,
        why: &str,
    ) -> Result<DeviceLinear<T>> {
        let out_dim: usize = parts.iter().map(|p| p.out).sum();
        let mut w = up.alloc::<T>(out_dim * in_dim)?;
        let mut b = if bias {
            Some(up.alloc::<T>(out_dim)?)
        } else {
            None
        };
        let mut row = 0;
        for p in parts {
            let name = format!("{}.weight", p.name);
            up.place(
                ck,
                &name,
                &[p.out, in_dim],
                why,
                &mut w,
                in_dim,
                row * in_dim,
            )?;
            if let Some(b) = b.as_mut() {
                let name = format!("{}.bias", p.name);
                up.place(ck, &name, &[p.out], why, b, p.out, row)?;
            }
            row += p.out;
        }
        Ok(DeviceLinear {
            w,
            bias: b,
            out_dim,
            in_dim,
        })
    }

    /// `gate` and `up` (`[inner, hidden]` each, no bias) with their rows
    /// interleaved: row `2i` from gate, `2i + 1` from up (the fused layout
    /// whose SiLU runs in the GEMM's epilogue).
    pub(crate) fn load_interleaved(
        up: &mut Uploader<'_>,
        ck: &Checkpoint,
        gate: &str,
        up_proj: &str,
        inner: usize,
        hidden: usize,
        why: &str,
    ) -> Result<DeviceLinear<T>> {
        for n in [gate, up_proj] {
            if ck.contains(&format!("{n}.bias")) {
                return Err(EngineError::setting(
                    "mlp_bias",
                    "gate/up projections with biases are not supported by the GPU backend",
                ));
            }
        }
        let mut w = up.alloc::<T>(2 * inner * hidden)?;
        let shape = [inner, hidden];
        up.place(
            ck,
            &format!("{gate}.weight"),
            &shape,
            why,
            &mut w,
            2 * hidden,
            0,
        )?;
        let name = format!("{up_proj}.weight");
        up.place(ck, &name, &shape, why, &mut w, 2 * hidden, hidden)?;
        Ok(DeviceLinear {
            w,
            bias: None,
            out_dim: 2 * inner,
            in_dim: hidden,
        })
    }
}

impl<T: GpuElement> DeviceNorm<T> {
    /// `{name}.weight` of `[dim]`.
    pub(crate) fn load(
        up: &mut Uploader<'_>,
        ck: &Checkpoint,
        name: &str,
        dim: usize,
        eps: f32,
        why: &str,
    ) -> Result<DeviceNorm<T>> {
        Ok(DeviceNorm {
            w: up.tensor(ck, &format!("{name}.weight"), &[dim], why)?,
            eps,
        })
    }
}

impl<T: GpuElement> DeviceGqa<T>
where
    CudaBlas: Gemm<T>,
{
    /// `{prefix}.{q,k,v,o}_proj` (q|k|v fused) and `q_norm`/`k_norm`.
    pub(crate) fn load(
        up: &mut Uploader<'_>,
        ck: &Checkpoint,
        prefix: &str,
        d: &AttentionDims,
        why: &str,
    ) -> Result<DeviceGqa<T>> {
        let s = d.shape;
        let qd = s.n_heads * s.head_dim;
        let kd = s.kv_width();
        let (q, k, v) = (
            format!("{prefix}.q_proj"),
            format!("{prefix}.k_proj"),
            format!("{prefix}.v_proj"),
        );
        let parts = [
            Part { name: &q, out: qd },
            Part { name: &k, out: kd },
            Part { name: &v, out: kd },
        ];
        let qkv = DeviceLinear::load(up, ck, &parts, d.in_dim, d.qkv_bias, why)?;
        let o_name = format!("{prefix}.o_proj");
        let o = Part {
            name: &o_name,
            out: d.out_dim,
        };
        let o = DeviceLinear::load(up, ck, &[o], qd, false, why)?;
        let head_norm = match d.qk_norm_eps {
            Some(eps) => {
                let hd = s.head_dim;
                let qn = DeviceNorm::load(up, ck, &format!("{prefix}.q_norm"), hd, eps, why)?;
                let kn = DeviceNorm::load(up, ck, &format!("{prefix}.k_norm"), hd, eps, why)?;
                Some((qn, kn))
            }
            None => None,
        };
        Ok(DeviceGqa {
            qkv,
            o,
            layout: QkvLayout {
                heads: s.n_heads,
                kv_heads: s.n_kv_heads,
                head_dim: s.head_dim,
            },
            head_norm,
        })
    }
}

impl<T: GpuElement> DeviceMlp<T>
where
    CudaBlas: Gemm<T>,
{
    /// `{prefix}.{gate,up,down}_proj` (gate|up interleaved).
    pub(crate) fn load(
        up: &mut Uploader<'_>,
        ck: &Checkpoint,
        prefix: &str,
        hidden: usize,
        inner: usize,
        why: &str,
    ) -> Result<DeviceMlp<T>> {
        let (g, u) = (format!("{prefix}.gate_proj"), format!("{prefix}.up_proj"));
        let down_name = format!("{prefix}.down_proj");
        let down = Part {
            name: &down_name,
            out: hidden,
        };
        Ok(DeviceMlp {
            gate_up: DeviceLinear::load_interleaved(up, ck, &g, &u, inner, hidden, why)?,
            down: DeviceLinear::load(up, ck, &[down], inner, false, why)?,
            inner,
        })
    }
}

impl<T: GpuElement> DeviceBlock<T>
where
    CudaBlas: Gemm<T>,
{
    /// Attention under `{prefix}.self_attn`, `{prefix}.post_attention_layernorm`
    /// and the MLP under `{prefix}.mlp` (the draft's midlayer).
    pub(crate) fn load(
        up: &mut Uploader<'_>,
        ck: &Checkpoint,
        prefix: &str,
        dims: &AttentionDims,
        inner: usize,
        eps: f32,
    ) -> Result<DeviceBlock<T>> {
        let h = dims.out_dim;
        let why_attn = "attention input, num_attention_heads, num_key_value_heads, head_dim";
        let post = format!("{prefix}.post_attention_layernorm");
        Ok(DeviceBlock {
            attn: DeviceGqa::load(up, ck, &format!("{prefix}.self_attn"), dims, why_attn)?,
            post_norm: DeviceNorm::load(up, ck, &post, h, eps, "hidden_size")?,
            mlp: DeviceMlp::load(
                up,
                ck,
                &format!("{prefix}.mlp"),
                h,
                inner,
                "hidden_size, intermediate_size",
            )?,
        })
    }
}
