//! Building blocks shared by the target and the draft: linear layers, the
//! attention block over a ragged batch, the gated MLP.

use super::batch::ForwardBatch;
use crate::checkpoint::Checkpoint;
use crate::error::Result;
use crate::kv_cache::KvCache;
use crate::weights::Weights;
use rayon::prelude::*;
use specula_kernels::cpu::{self, AttentionShape, KeyList, Rope};

/// Multiply-adds of one attention call below which it stays on one thread.
const ATTENTION_PARALLEL_MIN_WORK: usize = 1 << 16;

/// Attention of each row's queries (`q: [rows, heads x head_dim]`, RoPE
/// applied) over its cache's `layer` and its visible keys, into `[rows,
/// heads x head_dim]`; rows run on threads only for long prefills (waking
/// threads costs tens of microseconds).
pub(crate) fn attend_rows(
    q: &[f32],
    batch: &ForwardBatch,
    caches: &[KvCache],
    layer: usize,
    shape: AttentionShape,
    scale: f32,
) -> Vec<f32> {
    let width = shape.n_heads * shape.head_dim;
    let mut att = vec![0f32; batch.len() * width];
    let one_row = |r: usize, out: &mut [f32]| {
        let row = &batch.rows[r];
        let (kc, vc) = caches[row.cache].layer(layer);
        let keys = KeyList {
            prefix: row.visible.prefix,
            extra: &row.visible.extra,
        };
        cpu::attention(
            &q[r * width..(r + 1) * width],
            kc,
            vc,
            keys,
            shape,
            scale,
            out,
        );
    };
    let work: usize = batch
        .rows
        .iter()
        .map(|r| (r.visible.prefix + r.visible.extra.len()) * width)
        .sum();
    if work < ATTENTION_PARALLEL_MIN_WORK {
        att.chunks_mut(width)
            .enumerate()
            .for_each(|(r, out)| one_row(r, out));
    } else {
        att.par_chunks_mut(width)
            .enumerate()
            .for_each(|(r, out)| one_row(r, out));
    }
    att
}

/// A linear layer in the Hugging Face `[out, in]` layout.
#[derive(Clone)]
pub struct Linear {
    pub(crate) w: Weights,
    pub(crate) bias: Option<Vec<f32>>,
    pub(crate) out_dim: usize,
    pub(crate) in_dim: usize,
}

impl Linear {
    /// Loads `{name}.weight` (and `{name}.bias` when `bias`) of shape `[out, in]`.
    pub fn load(
        ck: &Checkpoint,
        name: &str,
        out_dim: usize,
        in_dim: usize,
        bias: bool,
        why: &str,
    ) -> Result<Linear> {
        let w = ck.weights(&format!("{name}.weight"), &[out_dim, in_dim], why)?;
        let bias = if bias {
            Some(ck.f32(&format!("{name}.bias"), &[out_dim], why)?)
        } else {
            None
        };
        Ok(Linear {
            w,
            bias,
            out_dim,
            in_dim,
        })
    }

    /// Wraps an existing `[out, in]` matrix (a tied embedding).
    pub fn from_weight(w: Vec<f32>, out_dim: usize, in_dim: usize) -> Linear {
        assert_eq!(w.len(), out_dim * in_dim);
        Linear {
            w: Weights::F32(w),
            bias: None,
            out_dim,
            in_dim,
        }
    }

    /// The outputs of several linears over the same `x: [rows, in]` (one
    /// split over threads for all; each output what [`Linear::forward`]
    /// gives). They must share `in_dim`.
    pub fn forward_together<const N: usize>(x: &[f32], linears: [&Linear; N]) -> [Vec<f32>; N] {
        let in_dim = linears[0].in_dim;
        assert!(
            linears.iter().all(|l| l.in_dim == in_dim),
            "forward_together: in_dim differs"
        );
        let rows = x.len() / in_dim;
        let mut outs = linears.map(|l| vec![0f32; rows * l.out_dim]);
        let mut products: Vec<cpu::Product<'_>> = linears
            .iter()
            .zip(outs.iter_mut())
            .map(|(l, out)| cpu::Product {
                w: l.w.matrix(),
                n: l.out_dim,
                bias: l.bias.as_deref(),
                out,
            })
            .collect();
        cpu::products(x, rows, in_dim, &mut products);
        drop(products);
        outs
    }

    /// `x: [rows, in]` -> `[rows, out]`.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.in_dim;
        let mut out = vec![0f32; rows * self.out_dim];
        cpu::linear(
            x,
            rows,
            self.in_dim,
            self.w.matrix(),
            self.out_dim,
            self.bias.as_deref(),
            &mut out,
        );
        out
    }
}

/// An RMSNorm weight with its epsilon.
pub struct Norm {
    pub(crate) w: Vec<f32>,
    pub(crate) eps: f32,
}

impl Norm {
    /// Loads `{name}.weight` of shape `[dim]`.
    pub fn load(ck: &Checkpoint, name: &str, dim: usize, eps: f32, why: &str) -> Result<Norm> {
        Ok(Norm {
            w: ck.f32(&format!("{name}.weight"), &[dim], why)?,
            eps,
        })
    }

    /// Normalised copy of `x: [rows, dim]`.
    pub fn apply(&self, x: &[f32]) -> Vec<f32> {
        let mut y = x.to_vec();
        cpu::rms_norm(&mut y, self.w.len(), &self.w, self.eps);
        y
    }

    /// Normalises `x` in place.
    pub fn apply_inplace(&self, x: &mut [f32]) {
        cpu::rms_norm(x, self.w.len(), &self.w, self.eps);
    }
}

/// Self-attention of one decoder layer (grouped-query, RoPE, optional q/k norms and biases).
pub struct Attention {
    pub(crate) q: Linear,
    pub(crate) k: Linear,
    pub(crate) v: Linear,
    pub(crate) o: Linear,
    pub(crate) q_norm: Option<Norm>,
    pub(crate) k_norm: Option<Norm>,
    pub(crate) shape: AttentionShape,
}

/// Sizes of an attention block.
pub struct AttentionDims {
    /// Width of the block's input.
    pub in_dim: usize,
    /// Width of its output (the residual stream).
    pub out_dim: usize,
    /// Head layout.
    pub shape: AttentionShape,
    /// Biases on q, k, v.
    pub qkv_bias: bool,
    /// Per-head RMSNorm on q and k (Qwen3), with this epsilon.
    pub qk_norm_eps: Option<f32>,
}

impl Attention {
    /// Loads `{prefix}.{q,k,v,o}_proj` (and `q_norm`/`k_norm`).
    pub fn load(ck: &Checkpoint, prefix: &str, d: &AttentionDims, why: &str) -> Result<Attention> {
        let s = d.shape;
        let qd = s.n_heads * s.head_dim;
        let kd = s.kv_width();
        let norm = |n: &str| -> Result<Option<Norm>> {
            d.qk_norm_eps
                .map(|eps| Norm::load(ck, &format!("{prefix}.{n}"), s.head_dim, eps, why))
                .transpose()
        };
        Ok(Attention {
            q: Linear::load(
                ck,
                &format!("{prefix}.q_proj"),
                qd,
                d.in_dim,
                d.qkv_bias,
                why,
            )?,
            k: Linear::load(
                ck,
                &format!("{prefix}.k_proj"),
                kd,
                d.in_dim,
                d.qkv_bias,
                why,
            )?,
            v: Linear::load(
                ck,
                &format!("{prefix}.v_proj"),
                kd,
                d.in_dim,
                d.qkv_bias,
                why,
            )?,
            o: Linear::load(ck, &format!("{prefix}.o_proj"), d.out_dim, qd, false, why)?,
            q_norm: norm("q_norm")?,
            k_norm: norm("k_norm")?,
            shape: s,
        })
    }

    /// Attention output `[rows, out]` for the normalised input `x: [rows, in]`;
    /// appends each row's key and value to its cache's `layer` first.
    pub fn forward(
        &self,
        x: &[f32],
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        layer: usize,
        rope: &Rope,
    ) -> Vec<f32> {
        let s = self.shape;
        let (qd, kd) = (s.n_heads * s.head_dim, s.kv_width());
        let [mut q, mut k, v] = Linear::forward_together(x, [&self.q, &self.k, &self.v]);
        if let (Some(qn), Some(kn)) = (&self.q_norm, &self.k_norm) {
            qn.apply_inplace(&mut q);
            kn.apply_inplace(&mut k);
        }
        for (r, row) in batch.rows.iter().enumerate() {
            rope.apply(&mut q[r * qd..(r + 1) * qd], row.position);
            rope.apply(&mut k[r * kd..(r + 1) * kd], row.position);
            caches[row.cache].push(layer, &k[r * kd..(r + 1) * kd], &v[r * kd..(r + 1) * kd]);
        }
        let scale = 1.0 / (s.head_dim as f32).sqrt();
        let att = attend_rows(&q, batch, caches, layer, s, scale);
        self.o.forward(&att)
    }
}

/// The gated SiLU MLP.
pub struct Mlp {
    pub(crate) gate: Linear,
    pub(crate) up: Linear,
    pub(crate) down: Linear,
}

impl Mlp {
    /// Loads `{prefix}.{gate,up,down}_proj`.
    pub fn load(
        ck: &Checkpoint,
        prefix: &str,
        hidden: usize,
        inner: usize,
        why: &str,
    ) -> Result<Mlp> {
        Ok(Mlp {
            gate: Linear::load(
                ck,
                &format!("{prefix}.gate_proj"),
                inner,
                hidden,
                false,
                why,
            )?,
            up: Linear::load(ck, &format!("{prefix}.up_proj"), inner, hidden, false, why)?,
            down: Linear::load(
                ck,
                &format!("{prefix}.down_proj"),
                hidden,
                inner,
                false,
                why,
            )?,
        })
    }

    /// `down(silu(gate(x)) * up(x))`.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let [mut g, u] = Linear::forward_together(x, [&self.gate, &self.up]);
        cpu::silu_and_mul(&mut g, &u);
        self.down.forward(&g)
    }
}

/// Rows of an embedding table for `tokens`.
pub fn embed(table: &[f32], dim: usize, tokens: impl Iterator<Item = u32>) -> Vec<f32> {
    gather_rows(table, dim, tokens.map(|t| t as usize))
}

/// Rows `rows` of `x: [n, dim]`, in that order (a table lookup, the rows
/// that need logits).
pub fn gather_rows(x: &[f32], dim: usize, rows: impl Iterator<Item = usize>) -> Vec<f32> {
    let mut out = Vec::new();
    for r in rows {
        out.extend_from_slice(&x[r * dim..(r + 1) * dim]);
    }
    out
}

/// `[rows, 2 * dim]`: each row of `a: [rows, dim]` followed by the same row of `b`.
pub fn concat_rows(a: &[f32], b: &[f32], dim: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    for (ra, rb) in a.chunks(dim).zip(b.chunks(dim)) {
        out.extend_from_slice(ra);
        out.extend_from_slice(rb);
    }
    out
}
