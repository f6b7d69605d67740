//! Multi-head latent attention (DeepSeek V2/V3, Kimi) on the CPU.
//!
//! Computed as transformers does, in the decompressed form: queries from
//! `q_proj` (or `q_b_proj(q_a_layernorm(q_a_proj x))`), a compressed
//! key/value latent `kv_a_proj_with_mqa x` split into `kv_lora_rank` latent
//! and one shared `qk_rope_head_dim` RoPE key, the latent normalised and
//! expanded by `kv_b_proj` into per-head no-position keys and values. RoPE
//! touches only the decoupled part (de-interleaved first when the weights
//! store it pair-interleaved, as transformers' `apply_rotary_pos_emb_interleave`
//! does; cos and sin scaled by YaRN's attention factor). The KV cache holds
//! each head's full key and value, both zero-padded to
//! [`MlaConfig::cache_head_dim`], so the ordinary attention kernel runs it.

use super::batch::ForwardBatch;
use super::blocks::{attend_rows, Linear, Norm};
use crate::checkpoint::Checkpoint;
use crate::config::{MlaConfig, LATENT_NORM_EPS};
use crate::error::Result;
use crate::kv_cache::KvCache;
use specula_kernels::cpu::AttentionShape;

/// How queries are projected.
pub(crate) enum QueryProj {
    /// `q_proj` (`q_lora_rank` null).
    Plain(Linear),
    /// `q_a_proj`, `q_a_layernorm`, `q_b_proj`.
    Lora(Linear, Norm, Linear),
}

/// The latent attention of one decoder layer.
pub struct MlaAttention {
    pub(crate) q: QueryProj,
    pub(crate) kv_a: Linear,
    pub(crate) kv_norm: Norm,
    pub(crate) kv_b: Linear,
    pub(crate) o: Linear,
    pub(crate) heads: usize,
    pub(crate) c: MlaConfig,
}

impl MlaAttention {
    /// Loads `{prefix}.{q_proj | q_a_proj, q_a_layernorm, q_b_proj}`,
    /// `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj` and `o_proj`.
    pub fn load(
        ck: &Checkpoint,
        prefix: &str,
        hidden: usize,
        heads: usize,
        c: &MlaConfig,
    ) -> Result<MlaAttention> {
        let why = "hidden_size, num_attention_heads, q_lora_rank, kv_lora_rank, \
                   qk_nope_head_dim, qk_rope_head_dim, v_head_dim";
        let n = |s: &str| format!("{prefix}.{s}");
        let bias = c.attention_bias;
        let q_width = heads * c.qk_head_dim();
        let q = match c.q_lora_rank {
            None => QueryProj::Plain(Linear::load(ck, &n("q_proj"), q_width, hidden, false, why)?),
            Some(r) => QueryProj::Lora(
                Linear::load(ck, &n("q_a_proj"), r, hidden, bias, why)?,
                Norm::load(ck, &n("q_a_layernorm"), r, LATENT_NORM_EPS, why)?,
                Linear::load(ck, &n("q_b_proj"), q_width, r, false, why)?,
            ),
        };
        let kv_a_width = c.kv_lora_rank + c.qk_rope_head_dim;
        let kv_b_width = heads * (c.qk_nope_head_dim + c.v_head_dim);
        Ok(MlaAttention {
            q,
            kv_a: Linear::load(ck, &n("kv_a_proj_with_mqa"), kv_a_width, hidden, bias, why)?,
            kv_norm: Norm::load(
                ck,
                &n("kv_a_layernorm"),
                c.kv_lora_rank,
                LATENT_NORM_EPS,
                why,
            )?,
            kv_b: Linear::load(ck, &n("kv_b_proj"), kv_b_width, c.kv_lora_rank, false, why)?,
            o: Linear::load(ck, &n("o_proj"), hidden, heads * c.v_head_dim, bias, why)?,
            heads,
            c: c.clone(),
        })
    }

    /// Rotates the RoPE part `x` (`qk_rope_head_dim` wide) of one head to
    /// `position`; `pairs` is scratch of the same width.
    fn rope(&self, x: &mut [f32], position: usize, pairs: &mut [f32]) {
        let half = x.len() / 2;
        if self.c.rope_interleave {
            pairs.copy_from_slice(x);
            for i in 0..half {
                x[i] = pairs[2 * i];
                x[i + half] = pairs[2 * i + 1];
            }
        }
        let factor = self.c.rope_attention_factor;
        for (i, f) in self.c.inv_freq.iter().enumerate() {
            let (sin, cos) = (position as f32 * f).sin_cos();
            let (cos, sin) = (cos * factor, sin * factor);
            let (a, b) = (x[i], x[i + half]);
            x[i] = a * cos - b * sin;
            x[i + half] = b * cos + a * sin;
        }
    }

    /// Attention output `[rows, hidden]` for the normalised input `x: [rows, hidden]`;
    /// appends each row's keys and values to its cache's `layer` first.
    pub fn forward(
        &self,
        x: &[f32],
        batch: &ForwardBatch,
        caches: &mut [KvCache],
        layer: usize,
    ) -> Vec<f32> {
        let c = &self.c;
        let (nh, qk, nope, rope, vd) = (
            self.heads,
            c.qk_head_dim(),
            c.qk_nope_head_dim,
            c.qk_rope_head_dim,
            c.v_head_dim,
        );
        let d = c.cache_head_dim();
        let rows = batch.len();
        let (q, ckv) = match &self.q {
            QueryProj::Plain(q) => {
                let [q, ckv] = Linear::forward_together(x, [q, &self.kv_a]);
                (q, ckv)
            }
            QueryProj::Lora(a, norm, b) => {
                let [qa, ckv] = Linear::forward_together(x, [a, &self.kv_a]);
                (b.forward(&norm.apply(&qa)), ckv)
            }
        };
        let kv_a_width = c.kv_lora_rank + rope;
        let mut latent = Vec::with_capacity(rows * c.kv_lora_rank);
        for r in 0..rows {
            latent.extend_from_slice(&ckv[r * kv_a_width..r * kv_a_width + c.kv_lora_rank]);
        }
        self.kv_norm.apply_inplace(&mut latent);
        let kv = self.kv_b.forward(&latent);
        let kv_width = nope + vd;
        let mut qs = vec![0f32; rows * nh * d];
        let mut pairs = vec![0f32; rope];
        for (r, row) in batch.rows.iter().enumerate() {
            let mut k_rot = ckv[r * kv_a_width + c.kv_lora_rank..(r + 1) * kv_a_width].to_vec();
            self.rope(&mut k_rot, row.position, &mut pairs);
            let (mut k, mut v) = (vec![0f32; nh * d], vec![0f32; nh * d]);
            for h in 0..nh {
                let src = &q[(r * nh + h) * qk..(r * nh + h + 1) * qk];
                let dst = &mut qs[(r * nh + h) * d..(r * nh + h) * d + qk];
                dst.copy_from_slice(src);
                self.rope(&mut dst[nope..], row.position, &mut pairs);
                let kvh = &kv[(r * nh + h) * kv_width..(r * nh + h + 1) * kv_width];
                k[h * d..h * d + nope].copy_from_slice(&kvh[..nope]);
                k[h * d + nope..h * d + qk].copy_from_slice(&k_rot);
                v[h * d..h * d + vd].copy_from_slice(&kvh[nope..]);
            }
            caches[row.cache].push(layer, &k, &v);
        }
        let shape = AttentionShape {
            n_heads: nh,
            n_kv_heads: nh,
            head_dim: d,
        };
        let att = attend_rows(&qs, batch, caches, layer, shape, c.softmax_scale);
        let mut heads_out = Vec::with_capacity(rows * nh * vd);
        for head in att.chunks_exact(d) {
            heads_out.extend_from_slice(&head[..vd]);
        }
        self.o.forward(&heads_out)
    }
}
