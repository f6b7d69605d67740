//! The latent attention in the absorbed form (cache-entry preparation,
//! absorbed per-head products, attention over the compressed cache) against
//! the CPU engine's decompressed form (keys and values expanded by
//! `kv_b_proj`, ordinary attention), and its batch invariance bit for bit.

use super::mla_forms::{batch_rule, check_forms, AbsorbedCase};
use super::{download, normwise_error, random, row_recorder, upload, CheckRow};
use crate::cpu;
use crate::cuda::{mla_prep, Gpu, GpuElement, GpuError, MlaPrepInputs, MlaRope, MlaShape};
use cudarc::driver::CudaSlice;
use rand_chacha::ChaCha8Rng;

/// A small latent shape whose widths are multiples of nothing (no vector
/// path applies), for the checks beside the real widths.
pub(super) const MLA_ODD_SHAPE: MlaShape = MlaShape {
    heads: 3,
    lora: 13,
    rope: 6,
    nope: 5,
    v_dim: 7,
};

/// RoPE inverse frequencies (base 10000) over `rd` rotated dims.
pub(super) fn rope_inv_freq(rd: usize) -> Vec<f32> {
    (0..rd / 2)
        .map(|i| 1.0 / 10000f32.powf(2.0 * i as f32 / rd as f32))
        .collect()
}

/// One query row of the check: the sequence, the position its query comes
/// from, and its key list (visible prefix, further entries).
pub(super) struct QueryRow {
    pub(super) seq: usize,
    pub(super) pos: usize,
    pub(super) prefix: usize,
    pub(super) extra: Vec<usize>,
}

/// The CPU engine's decoupled RoPE (de-interleave, rotate_half, cos and sin times `factor`).
fn rope_ref(x: &[f32], pos: usize, inv: &[f32], factor: f32) -> Vec<f32> {
    let half = x.len() / 2;
    let mut y = vec![0f32; x.len()];
    for i in 0..half {
        let (a, b) = (x[2 * i], x[2 * i + 1]);
        let (s, c) = (pos as f32 * inv[i]).sin_cos();
        let (c, s) = (c * factor, s * factor);
        y[i] = a * c - b * s;
        y[i + half] = b * c + a * s;
    }
    y
}

/// Device inputs and host copies of one check's layer.
pub(super) struct Layer<T> {
    pub(super) w_ukt: CudaSlice<T>,
    pub(super) w_uv: CudaSlice<T>,
    kv_norm: CudaSlice<T>,
    inv_freq: CudaSlice<f32>,
    /// Host: kv_b as `[heads * (nope + v), lora]`, the norm weight, inverse frequencies.
    kv_b: Vec<f32>,
    norm: Vec<f32>,
    inv: Vec<f32>,
}

/// Checks the latent-attention kernels for element type `T`.
pub(super) fn check_mla<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let shapes = [
        MlaShape {
            heads: 10,
            lora: 128,
            rope: 32,
            nope: 64,
            v_dim: 48,
        },
        // 32 heads: the tensor-core form in bf16 (two groups of 16).
        MlaShape {
            heads: 32,
            lora: 128,
            rope: 32,
            nope: 64,
            v_dim: 48,
        },
        MLA_ODD_SHAPE,
    ];
    for shape in shapes {
        check_shape::<T>(gpu, rng, rows_out, shape)?;
    }
    Ok(())
}

fn check_shape<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
    sh: MlaShape,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (nh, lora, rd, nope, vd) = (sh.heads, sh.lora, sh.rope, sh.nope, sh.v_dim);
    let (d, qk) = (sh.entry(), nope + rd);
    let eps = 1e-6f32;
    let factor = 1.3f32;
    let scale = 0.7 / (qk as f32).sqrt();
    // kv_b rows per head: nope key rows, then v value rows, each lora wide.
    let (_, kv_b) = upload::<T>(
        gpu,
        &random(rng, nh * (nope + vd) * lora, 1.0 / (lora as f32).sqrt()),
    )?;
    let mut ukt = vec![0f32; nh * lora * nope];
    let mut uv = vec![0f32; nh * vd * lora];
    for h in 0..nh {
        for j in 0..nope {
            for c in 0..lora {
                ukt[(h * lora + c) * nope + j] = kv_b[(h * (nope + vd) + j) * lora + c];
            }
        }
        for j in 0..vd {
            uv[(h * vd + j) * lora..(h * vd + j + 1) * lora].copy_from_slice(
                &kv_b[(h * (nope + vd) + nope + j) * lora..(h * (nope + vd) + nope + j + 1) * lora],
            );
        }
    }
    let inv = rope_inv_freq(rd);
    let (kv_norm, norm) = upload::<T>(
        gpu,
        &random(rng, lora, 1.0)
            .iter()
            .map(|v| 1.0 + 0.5 * v)
            .collect::<Vec<_>>(),
    )?;
    let layer = Layer {
        w_ukt: upload::<T>(gpu, &ukt)?.0,
        w_uv: upload::<T>(gpu, &uv)?.0,
        kv_norm,
        inv_freq: s.clone_htod(&inv)?,
        kv_b,
        norm,
        inv,
    };
    // Four sequences prefilled into one pool (rows in order, base = running
    // sum); the last is longer than 32 chunks of keys in either element
    // type, so that its rows walk several chunks per split.
    let lens = [70usize, 40, 9, 1100];
    let bases: Vec<usize> = lens
        .iter()
        .scan(0, |a, l| {
            let b = *a;
            *a += l;
            Some(b)
        })
        .collect();
    let total: usize = lens.iter().sum();
    let (q, q_h) = upload::<T>(gpu, &random(rng, total * nh * qk, 1.0))?;
    let (ckv, ckv_h) = upload::<T>(gpu, &random(rng, total * d, 1.0))?;
    let positions: Vec<i32> = lens.iter().flat_map(|&l| 0..l as i32).collect();
    let entries: Vec<i32> = (0..total as i32).collect();
    let mut pool = s.alloc_zeros::<T>(total * d)?;
    let mut qcat_all = s.alloc_zeros::<T>(total * nh * d)?;
    let rope = MlaRope {
        inv_freq: &layer.inv_freq,
        interleave: true,
        factor,
    };
    let inputs = MlaPrepInputs {
        q: &q,
        q_stride: nh * qk,
        ckv: &ckv,
        ckv_offset: 0,
        ckv_stride: d,
        kv_norm: (&layer.kv_norm, eps),
        positions: &s.clone_htod(&positions)?,
        entries: &s.clone_htod(&entries)?,
    };
    mla_prep(gpu, &mut qcat_all, &mut pool, 0, &inputs, rope, sh)?;
    // The cache entries against the CPU engine's normalised latent and rotated key.
    let mut want_pool = vec![0f32; total * d];
    for e in 0..total {
        let c = &ckv_h[e * d..(e + 1) * d];
        let ss: f32 = c[..lora].iter().map(|v| v * v).sum();
        let inv_rms = 1.0 / (ss / lora as f32 + eps).sqrt();
        for i in 0..lora {
            want_pool[e * d + i] = c[i] * inv_rms * layer.norm[i];
        }
        let kr = rope_ref(&c[lora..], positions[e] as usize, &layer.inv, factor);
        want_pool[e * d + lora..(e + 1) * d].copy_from_slice(&kr);
    }
    let pool_h = download(gpu, &pool)?;
    let tol = if T::BYTES == 2 { 1e-2 } else { 2e-5 };
    row(
        "mla_prep",
        format!(
            "{total} cache entries of {lora} + {rd} (RMSNorm latent, interleaved YaRN RoPE key)"
        ),
        normwise_error(&pool_h, &want_pool),
        tol,
    );
    let queries = vec![
        QueryRow {
            seq: 0,
            pos: 69,
            prefix: 70,
            extra: vec![],
        },
        QueryRow {
            seq: 1,
            pos: 38,
            prefix: 35,
            extra: vec![35, 37, 38],
        },
        QueryRow {
            seq: 2,
            pos: 5,
            prefix: 6,
            extra: vec![],
        },
        QueryRow {
            seq: 2,
            pos: 8,
            prefix: 0,
            extra: vec![0, 4, 8],
        },
        QueryRow {
            seq: 1,
            pos: 39,
            prefix: 40,
            extra: vec![],
        },
        QueryRow {
            seq: 3,
            pos: 1099,
            prefix: 1100,
            extra: vec![],
        },
        QueryRow {
            seq: 3,
            pos: 1099,
            prefix: 1090,
            extra: vec![1093, 1096, 1099],
        },
    ];
    // CPU reference: decompressed keys and values of every entry, ordinary attention.
    let hd = qk.max(vd);
    let mut kc = vec![0f32; total * nh * hd];
    let mut vc = vec![0f32; total * nh * hd];
    for e in 0..total {
        let lat = &pool_h[e * d..e * d + lora];
        for h in 0..nh {
            for j in 0..nope + vd {
                let w = &layer.kv_b[(h * (nope + vd) + j) * lora..(h * (nope + vd) + j + 1) * lora];
                let v: f32 = w.iter().zip(lat).map(|(a, b)| a * b).sum();
                if j < nope {
                    kc[(e * nh + h) * hd + j] = v;
                } else {
                    vc[(e * nh + h) * hd + j - nope] = v;
                }
            }
            kc[(e * nh + h) * hd + nope..(e * nh + h) * hd + qk]
                .copy_from_slice(&pool_h[e * d + lora..(e + 1) * d]);
        }
    }
    let shape = cpu::AttentionShape {
        n_heads: nh,
        n_kv_heads: nh,
        head_dim: hd,
    };
    let mut want = Vec::new();
    for qr in &queries {
        let src = bases[qr.seq] + qr.pos;
        let mut qv = vec![0f32; nh * hd];
        for h in 0..nh {
            let qh = &q_h[(src * nh + h) * qk..(src * nh + h + 1) * qk];
            qv[h * hd..h * hd + nope].copy_from_slice(&qh[..nope]);
            let r = rope_ref(&qh[nope..], qr.pos, &layer.inv, factor);
            qv[h * hd + nope..h * hd + qk].copy_from_slice(&r);
        }
        let w = nh * hd;
        let base = bases[qr.seq];
        let mut out = vec![0f32; w];
        cpu::attention(
            &qv,
            &kc[base * w..],
            &vc[base * w..],
            cpu::KeyList {
                prefix: qr.prefix,
                extra: &qr.extra,
            },
            shape,
            scale,
            &mut out,
        );
        for h in 0..nh {
            want.extend_from_slice(&out[h * hd..h * hd + vd]);
        }
    }
    drop(row);
    let case = AbsorbedCase {
        layer: &layer,
        qcat_all: &qcat_all,
        q: &q,
        pool: &pool,
        queries: &queries,
        bases: &bases,
        sh,
        scale,
        rule: batch_rule(gpu, &queries, &bases)?,
    };
    check_forms(gpu, rng, rows_out, &case, &want)
}
