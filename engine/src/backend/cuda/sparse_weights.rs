//! Device weights of latent attention and mixture-of-experts layers
//! (DeepSeek V2/V3, Kimi, Qwen3-MoE): uploaded from the CPU model or drawn
//! on the device for a config's shape. Latent attention keeps `kv_b_proj`
//! split the absorbed way (`W_UK^T` per head for the query, `W_UV` per head
//! for the output); experts are stacked `[experts, out, in]` with gate|up
//! rows interleaved (the shared experts' slices after them unless
//! `SPECULA_SHARED` places them apart: `shared_experts.rs`).

use super::shared_experts::{shared_placement, stack_shared_slices, SharedPlacement};
use super::weights::{random, upload, DeviceLinear, DeviceMlp, DeviceNorm, Seeds};
use crate::config::{GroupScore, MlaConfig, MoeConfig, Scoring, LATENT_NORM_EPS};
use crate::error::{EngineError, Result};
use crate::model::mla::{MlaAttention, QueryProj};
use crate::model::moe::MoeBlock;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{Gpu, GpuElement, MlaShape, RouterSpec};

/// How a latent-attention layer projects its queries (one per layer: the
/// variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum DeviceMlaQuery<T> {
    /// `q_proj` and `kv_a_proj_with_mqa` fused: `[heads * qk | lora + rope]` per row.
    Plain(DeviceLinear<T>),
    /// `q_a_proj`, `q_a_layernorm`, `q_b_proj`, and `kv_a_proj_with_mqa` apart.
    Lora {
        q_a: DeviceLinear<T>,
        q_norm: DeviceNorm<T>,
        q_b: DeviceLinear<T>,
        kv_a: DeviceLinear<T>,
    },
}

/// Latent attention of one layer on the device.
pub(crate) struct DeviceMla<T> {
    pub(crate) q: DeviceMlaQuery<T>,
    pub(crate) kv_norm: DeviceNorm<T>,
    /// `W_UK^T`: `[heads, lora, nope]`.
    pub(crate) w_ukt: CudaSlice<T>,
    /// `W_UV`: `[heads, v, lora]`.
    pub(crate) w_uv: CudaSlice<T>,
    pub(crate) o: DeviceLinear<T>,
    pub(crate) shape: MlaShape,
}

impl<T: GpuElement> DeviceMla<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU latent attention, splitting `kv_b_proj` into the absorbed factors.
    pub(crate) fn upload(gpu: &Gpu, a: &MlaAttention) -> Result<DeviceMla<T>> {
        let shape = mla_shape(&a.c, a.heads);
        let q = match &a.q {
            QueryProj::Plain(q) => DeviceMlaQuery::Plain(DeviceLinear::upload(gpu, &[q, &a.kv_a])?),
            QueryProj::Lora(qa, norm, qb) => DeviceMlaQuery::Lora {
                q_a: DeviceLinear::upload(gpu, &[qa])?,
                q_norm: DeviceNorm::upload(gpu, norm)?,
                q_b: DeviceLinear::upload(gpu, &[qb])?,
                kv_a: DeviceLinear::upload(gpu, &[&a.kv_a])?,
            },
        };
        let MlaShape {
            heads,
            lora,
            nope,
            v_dim,
            ..
        } = shape;
        let kv_b = a.kv_b.w.to_f32();
        let mut ukt = vec![0f32; heads * lora * nope];
        let mut uv = Vec::with_capacity(heads * v_dim * lora);
        for h in 0..heads {
            let rows = &kv_b[h * (nope + v_dim) * lora..(h + 1) * (nope + v_dim) * lora];
            for j in 0..nope {
                for c in 0..lora {
                    ukt[(h * lora + c) * nope + j] = rows[j * lora + c];
                }
            }
            uv.extend_from_slice(&rows[nope * lora..]);
        }
        Ok(DeviceMla {
            q,
            kv_norm: DeviceNorm::upload(gpu, &a.kv_norm)?,
            w_ukt: upload(gpu, &ukt)?,
            w_uv: upload(gpu, &uv)?,
            o: DeviceLinear::upload(gpu, &[&a.o])?,
            shape,
        })
    }

    /// Random weights for `c` with `heads` heads and residual width `hidden`.
    pub(crate) fn random(
        gpu: &Gpu,
        c: &MlaConfig,
        heads: usize,
        hidden: usize,
        seeds: &mut Seeds,
    ) -> Result<DeviceMla<T>> {
        let shape = mla_shape(c, heads);
        let (d, qk) = (shape.entry(), shape.nope + shape.rope);
        let q = match c.q_lora_rank {
            None => {
                DeviceMlaQuery::Plain(DeviceLinear::random(gpu, heads * qk + d, hidden, seeds)?)
            }
            Some(r) => DeviceMlaQuery::Lora {
                q_a: DeviceLinear::random(gpu, r, hidden, seeds)?,
                q_norm: DeviceNorm::ones(gpu, r, LATENT_NORM_EPS)?,
                q_b: DeviceLinear::random(gpu, heads * qk, r, seeds)?,
                kv_a: DeviceLinear::random(gpu, d, hidden, seeds)?,
            },
        };
        let (lora, nope, vd) = (shape.lora, shape.nope, shape.v_dim);
        Ok(DeviceMla {
            q,
            kv_norm: DeviceNorm::ones(gpu, lora, LATENT_NORM_EPS)?,
            w_ukt: random(
                gpu,
                heads * lora * nope,
                seeds.next(),
                (3.0 / lora as f32).sqrt(),
                0.0,
            )?,
            w_uv: random(
                gpu,
                heads * vd * lora,
                seeds.next(),
                (3.0 / lora as f32).sqrt(),
                0.0,
            )?,
            o: DeviceLinear::random(gpu, hidden, heads * vd, seeds)?,
            shape,
        })
    }

    /// Bytes of weights one forward reads.
    pub(crate) fn bytes(&self) -> usize {
        let q = match &self.q {
            DeviceMlaQuery::Plain(l) => l.bytes(),
            DeviceMlaQuery::Lora {
                q_a,
                q_norm,
                q_b,
                kv_a,
            } => q_a.bytes() + q_b.bytes() + kv_a.bytes() + q_norm.w.len() * T::BYTES,
        };
        q + (self.w_ukt.len() + self.w_uv.len() + self.kv_norm.w.len()) * T::BYTES + self.o.bytes()
    }
}

/// The kernels' shape of a latent-attention config.
pub(crate) fn mla_shape(c: &MlaConfig, heads: usize) -> MlaShape {
    MlaShape {
        heads,
        lora: c.kv_lora_rank,
        rope: c.qk_rope_head_dim,
        nope: c.qk_nope_head_dim,
        v_dim: c.v_head_dim,
    }
}

/// The routing kernels' view of an MoE config.
pub(crate) fn router_spec(m: &MoeConfig) -> RouterSpec {
    let (n_group, topk_group, top_two_sum) = match m.grouping {
        Some(g) => (g.n_group, g.topk_group, g.score == GroupScore::TopTwoSum),
        None => (1, 1, false),
    };
    RouterSpec {
        experts: m.n_routed_experts,
        top_k: m.top_k,
        sigmoid: m.scoring == Scoring::Sigmoid,
        n_group,
        topk_group,
        top_two_sum,
        norm_topk_prob: m.norm_topk_prob,
        scaling: m.routed_scaling_factor,
        shared: 0,
    }
}

/// The experts of one MoE layer on the device.
pub(crate) struct DeviceMoe<T> {
    /// Router `[experts, hidden]`.
    pub(crate) gate: CudaSlice<T>,
    /// `e_score_correction_bias` (f32), if the router has one.
    pub(crate) bias: Option<CudaSlice<f32>>,
    /// `[stacked, 2 * inner, hidden]`, gate and up rows interleaved: the
    /// routed experts, then `spec.shared` slices of the shared experts.
    pub(crate) gate_up: CudaSlice<T>,
    /// `[stacked, hidden, inner]`.
    pub(crate) down: CudaSlice<T>,
    /// The shared experts as an MLP of their own (none when stacked).
    pub(crate) shared: Option<DeviceMlp<T>>,
    pub(crate) spec: RouterSpec,
    pub(crate) hidden: usize,
    pub(crate) inner: usize,
}

impl<T: GpuElement> DeviceMoe<T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads a CPU MoE block.
    pub(crate) fn upload(gpu: &Gpu, b: &MoeBlock) -> Result<DeviceMoe<T>> {
        let m = &b.config;
        let (hidden, inner) = (b.gate.in_dim, m.moe_intermediate_size);
        let mut gu = Vec::with_capacity(m.n_routed_experts * 2 * inner * hidden);
        let mut down = Vec::with_capacity(m.n_routed_experts * hidden * inner);
        for e in &b.experts {
            if e.gate.bias.is_some() || e.up.bias.is_some() || e.down.bias.is_some() {
                return Err(EngineError::Device(
                    "experts with biases: not supported by the GPU backend".into(),
                ));
            }
            let (g, u) = (e.gate.w.to_f32(), e.up.w.to_f32());
            for (rg, ru) in g.chunks_exact(hidden).zip(u.chunks_exact(hidden)) {
                gu.extend_from_slice(rg);
                gu.extend_from_slice(ru);
            }
            down.extend_from_slice(&e.down.w.to_f32());
        }
        let mut spec = router_spec(m);
        let mut shared = b.shared.as_ref();
        if let Some(s) = shared.filter(|_| shared_placement() == SharedPlacement::Stacked) {
            let slices = m.n_shared_experts;
            if stack_shared_slices(s, slices, inner, &mut gu, &mut down) {
                spec.shared = slices;
                shared = None;
            }
        }
        Ok(DeviceMoe {
            gate: upload(gpu, &b.gate.w.to_f32())?,
            bias: match &b.bias {
                Some(v) => Some(gpu.stream.clone_htod(v)?),
                None => None,
            },
            gate_up: upload(gpu, &gu)?,
            down: upload(gpu, &down)?,
            shared: match shared {
                Some(s) => Some(DeviceMlp::upload(gpu, s)?),
                None => None,
            },
            spec,
            hidden,
            inner,
        })
    }

    /// Random weights for `m` with residual width `hidden` (a zero correction bias when the router has one).
    pub(crate) fn random(
        gpu: &Gpu,
        m: &MoeConfig,
        hidden: usize,
        seeds: &mut Seeds,
    ) -> Result<DeviceMoe<T>> {
        let (e, inner) = (m.n_routed_experts, m.moe_intermediate_size);
        let s_in = (3.0 / hidden as f32).sqrt();
        let s_inner = (3.0 / inner as f32).sqrt();
        let mut spec = router_spec(m);
        if shared_placement() == SharedPlacement::Stacked {
            spec.shared = m.n_shared_experts;
        }
        let stacked = spec.stacked();
        Ok(DeviceMoe {
            gate: random(gpu, e * hidden, seeds.next(), s_in, 0.0)?,
            bias: if m.correction_bias {
                Some(gpu.stream.alloc_zeros(e)?)
            } else {
                None
            },
            gate_up: random(gpu, stacked * 2 * inner * hidden, seeds.next(), s_in, 0.0)?,
            down: random(gpu, stacked * hidden * inner, seeds.next(), s_inner, 0.0)?,
            shared: if m.n_shared_experts > 0 && spec.shared == 0 {
                Some(DeviceMlp::random(
                    gpu,
                    hidden,
                    inner * m.n_shared_experts,
                    seeds,
                )?)
            } else {
                None
            },
            spec,
            hidden,
            inner,
        })
    }

    /// Bytes every forward reads: the router and the shared experts (apart
    /// or stacked).
    pub(crate) fn fixed_bytes(&self) -> usize {
        self.gate.len() * T::BYTES
            + self.bias.as_ref().map_or(0, |b| b.len() * 4)
            + self.shared.as_ref().map_or(0, |s| s.bytes())
            + self.spec.shared * self.expert_bytes()
    }

    /// Bytes of one expert (gate, up, down).
    pub(crate) fn expert_bytes(&self) -> usize {
        3 * self.hidden * self.inner * T::BYTES
    }
}
