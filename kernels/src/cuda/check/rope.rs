//! Checks of the rotary embeddings: RoPE with llama3 scaling on its own, and
//! fused with the q/k/v split and the KV append (with and without Qwen3's
//! per-head norms).

use super::{download, normwise_error, random, row_recorder, tolerance, upload, CheckRow};
use crate::cpu;
use crate::cuda::{qkv_rope_append, rope, Gpu, GpuElement, GpuError, HeadNorm, QkvLayout};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// RoPE with llama3 scaling at positions up to 8000.
pub(super) fn check_rope<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (rows, heads, hd) = (9, 8, 128);
    let scaling = cpu::Llama3RopeScaling {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_position_embeddings: 8192,
    };
    let reference = cpu::Rope::new(hd, 500000.0, Some(scaling));
    let (mut x, mut x_h) = upload::<T>(gpu, &random(rng, rows * heads * hd, 1.0))?;
    let pos: Vec<i32> = (0..rows).map(|_| rng.random_range(0..8000)).collect();
    let (pos_d, inv_d) = (s.clone_htod(&pos)?, s.clone_htod(reference.inv_freq())?);
    rope(gpu, &mut x, &pos_d, &inv_d, heads, hd)?;
    for (r, p) in pos.iter().enumerate() {
        reference.apply(&mut x_h[r * heads * hd..(r + 1) * heads * hd], *p as usize);
    }
    row(
        "rope_llama3",
        format!("{rows} rows x {heads} heads x {hd}"),
        normwise_error(&download(gpu, &x)?, &x_h),
        tolerance::<T>(),
    );
    Ok(())
}

/// Fused q|k|v: RoPE on q and k (after a per-head RMSNorm, as Qwen3 has,
/// or not), k and v appended to a pool entry of layer 1.
pub(super) fn check_qkv_rope_append<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (rows, heads, kvh, hd, entries) = (5, 8, 2, 64, 40);
    let reference = cpu::Rope::new(hd, 10000.0, None);
    let width = (heads + 2 * kvh) * hd;
    let kvw = kvh * hd;
    let layer = entries * kvw;
    let layout = QkvLayout {
        heads,
        kv_heads: kvh,
        head_dim: hd,
    };
    for normed in [false, true] {
        let (qkv, qkv_h) = upload::<T>(gpu, &random(rng, rows * width, 1.0))?;
        let (qn, qn_h) = upload::<T>(gpu, &random(rng, hd, 1.0))?;
        let (kn, kn_h) = upload::<T>(gpu, &random(rng, hd, 1.0))?;
        let pos: Vec<i32> = (0..rows).map(|_| rng.random_range(0..5000)).collect();
        let entry: Vec<i32> = (0..rows as i32).map(|r| 3 * r + 1).collect();
        let mut kp = s.alloc_zeros::<T>(2 * layer)?;
        let mut vp = s.alloc_zeros::<T>(2 * layer)?;
        let mut q = s.alloc_zeros::<T>(rows * heads * hd)?;
        let norm = normed.then_some(HeadNorm {
            q: &qn,
            k: &kn,
            eps: 1e-6,
        });
        qkv_rope_append(
            gpu,
            &mut q,
            &mut kp,
            &mut vp,
            &qkv,
            &s.clone_htod(&pos)?,
            &s.clone_htod(reference.inv_freq())?,
            &s.clone_htod(&entry)?,
            layer,
            layout,
            norm,
        )?;
        let (mut want_q, mut want_k, mut want_v) =
            (Vec::new(), vec![0f32; 2 * layer], vec![0f32; 2 * layer]);
        for r in 0..rows {
            let src = &qkv_h[r * width..(r + 1) * width];
            let mut qr = src[..heads * hd].to_vec();
            let mut kr = src[heads * hd..(heads + kvh) * hd].to_vec();
            if normed {
                cpu::rms_norm(&mut qr, hd, &qn_h, 1e-6);
                cpu::rms_norm(&mut kr, hd, &kn_h, 1e-6);
            }
            reference.apply(&mut qr, pos[r] as usize);
            reference.apply(&mut kr, pos[r] as usize);
            want_q.extend(qr);
            let at = layer + entry[r] as usize * kvw;
            want_k[at..at + kvw].copy_from_slice(&kr);
            want_v[at..at + kvw].copy_from_slice(&src[(heads + kvh) * hd..]);
        }
        let mut got = download(gpu, &q)?;
        got.extend(download(gpu, &kp)?);
        got.extend(download(gpu, &vp)?);
        want_q.extend(want_k);
        want_q.extend(want_v);
        row(
            "qkv_rope_append",
            format!(
                "{rows} rows, {heads}/{kvh} heads of {hd}, layer 1 of 2{}",
                if normed { ", q/k head norms" } else { "" }
            ),
            normwise_error(&got, &want_q),
            tolerance::<T>(),
        );
    }
    Ok(())
}
