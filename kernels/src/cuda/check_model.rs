//! Checks of the model-forward kernels against their CPU references, on
//! fresh random inputs (the batch-invariance of `linear_rows` is checked
//! exactly: a row computed alone equals the same row inside a larger batch).

use super::check::{
    download, normwise_error, random, round, row_recorder, tolerance, upload, CheckRow,
};
use super::device::{Gpu, GpuElement, GpuError};
use super::linear::*;
use super::model_ops::*;
use crate::cpu;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The model-forward kernels for element type `T`.
pub(crate) fn check_model_kernels<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(out);
    let s = &gpu.stream;
    // Small-row linear, vector path (k % 8 == 0) and scalar path, with a bias.
    for (m, k, n) in [(13usize, 4096usize, 1000usize), (3, 100, 77)] {
        let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
        let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
        let (b, b_h) = upload::<T>(gpu, &random(rng, n, 0.5))?;
        let mut y = s.alloc_zeros::<T>(m * n)?;
        linear_rows(gpu, &mut y, &x, &w, Some(&b), m, k, n)?;
        let mut want = vec![0f32; m * n];
        cpu::linear(&x_h, m, k, &w_h, n, Some(&b_h), &mut want);
        let got = download(gpu, &y)?;
        row(
            "linear_rows",
            format!("{m} x {k} . ({n} x {k})^T + bias"),
            normwise_error(&got, &want),
            tolerance::<T>(),
        );
        // Batch invariance: each row alone gives the same bits.
        let mut alone = Vec::with_capacity(m * n);
        for r in 0..m {
            let xr = s.clone_htod(&s.clone_dtoh(&x)?[r * k..(r + 1) * k])?;
            let mut yr = s.alloc_zeros::<T>(n)?;
            linear_rows(gpu, &mut yr, &xr, &w, Some(&b), 1, k, n)?;
            alone.extend(download(gpu, &yr)?);
        }
        let differing = alone.iter().zip(&got).filter(|(a, b)| a != b).count();
        row(
            "linear_rows_invariant",
            format!("{m} rows alone vs together, k {k}"),
            differing as f64,
            0.0,
        );
    }

    // The tensor-core form (bf16): every k split, with a bias, and batch
    // invariance over several token tiles and past one 64-token block.
    if T::SUFFIX == "bf16" {
        let (m, k, n) = (70usize, 2048usize, 520usize);
        let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
        let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
        let (b, b_h) = upload::<T>(gpu, &random(rng, n, 0.5))?;
        let mut want = vec![0f32; m * n];
        cpu::linear(&x_h, m, k, &w_h, n, Some(&b_h), &mut want);
        for parts in [1usize, 2, 4, 8] {
            let mut y = s.alloc_zeros::<T>(m * n)?;
            linear_mma(
                gpu,
                &mut y,
                &x,
                &w,
                Some(&b),
                (m, k, n),
                layout(parts, 4),
                false,
            )?;
            let together = download(gpu, &y)?;
            row(
                "linear_mma",
                format!("{m} x {k} . ({n} x {k})^T + bias, k in {parts} parts"),
                normwise_error(&together, &want),
                tolerance::<T>(),
            );
            // Rows in several token tiles and both 64-token blocks, each alone.
            let mut differing = 0;
            for at in [0usize, 9, 37, 63, 69] {
                let xr = s.clone_htod(&s.clone_dtoh(&x)?[at * k..(at + 1) * k])?;
                let mut yr = s.alloc_zeros::<T>(n)?;
                linear_mma(
                    gpu,
                    &mut yr,
                    &xr,
                    &w,
                    Some(&b),
                    (1, k, n),
                    MmaLaunch::pipelined(parts),
                    false,
                )?;
                let alone = download(gpu, &yr)?;
                let batched = &together[at * n..(at + 1) * n];
                differing += alone.iter().zip(batched).filter(|(a, b)| a != b).count();
            }
            // The first five rows as one token tile of the pipelined kernel.
            let mut y5 = s.alloc_zeros::<T>(5 * n)?;
            linear_mma(
                gpu,
                &mut y5,
                &x,
                &w,
                Some(&b),
                (5, k, n),
                MmaLaunch::pipelined(parts),
                false,
            )?;
            let five = download(gpu, &y5)?;
            differing += five
                .iter()
                .zip(&together[..5 * n])
                .filter(|(a, b)| a != b)
                .count();
            row(
                "linear_mma_invariant",
                format!(
                    "rows 0, 9, 37, 63, 69 of {m} alone and rows 0-4 as one tile (pipelined kernel) vs together, {parts} parts"
                ),
                differing as f64,
                0.0,
            );
        }
    }

    // Fused q|k|v: RoPE on q and k (after a per-head RMSNorm, as Qwen3 has,
    // or not), k and v appended to a pool entry of layer 1.
    let (rows, heads, kvh, hd, entries) = (5, 8, 2, 64, 40);
    let rope = cpu::Rope::new(hd, 10000.0, None);
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
            &s.clone_htod(rope.inv_freq())?,
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
            rope.apply(&mut qr, pos[r] as usize);
            rope.apply(&mut kr, pos[r] as usize);
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

    // Fused gate|up SiLU.
    let (rows, inner) = (3, 1000);
    let (gu, gu_h) = upload::<T>(gpu, &random(rng, rows * 2 * inner, 4.0))?;
    let mut o = s.alloc_zeros::<T>(rows * inner)?;
    silu_mul_rows(gpu, &mut o, &gu, rows, inner, GateUpLayout::Halves)?;
    let mut want = Vec::new();
    for r in 0..rows {
        let mut g = gu_h[r * 2 * inner..r * 2 * inner + inner].to_vec();
        cpu::silu_and_mul(&mut g, &gu_h[r * 2 * inner + inner..(r + 1) * 2 * inner]);
        want.extend(g);
    }
    row(
        "silu_mul_fused",
        format!("{rows} x 2 x {inner}"),
        normwise_error(&download(gpu, &o)?, &want),
        tolerance::<T>(),
    );

    // Interleaved gate|up projection with SiLU fused, for 1 (two columns per
    // warp) and 5 rows (four per warp), and the same after a plain projection.
    for m in [1usize, 5] {
        let (k, inner) = (512, 300);
        let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
        let (w, w_h) = upload::<T>(gpu, &random(rng, 2 * inner * k, 2.0 / (k as f32).sqrt()))?;
        let mut act = s.alloc_zeros::<T>(m * inner)?;
        linear_rows_silu(gpu, &mut act, &x, &w, m, k, 2 * inner)?;
        let mut gu = vec![0f32; m * 2 * inner];
        cpu::linear(&x_h, m, k, &w_h, 2 * inner, None, &mut gu);
        let mut want = Vec::new();
        for r in 0..m {
            let row = &gu[r * 2 * inner..(r + 1) * 2 * inner];
            let mut g: Vec<f32> = row.iter().step_by(2).map(|&v| round::<T>(v)).collect();
            let u: Vec<f32> = row
                .iter()
                .skip(1)
                .step_by(2)
                .map(|&v| round::<T>(v))
                .collect();
            cpu::silu_and_mul(&mut g, &u);
            want.extend(g);
        }
        row(
            "linear_rows_silu",
            format!("{m} x {k} . ({} x {k})^T, gate|up interleaved", 2 * inner),
            normwise_error(&download(gpu, &act)?, &want),
            tolerance::<T>(),
        );
        let mut y = s.alloc_zeros::<T>(m * 2 * inner)?;
        linear_rows(gpu, &mut y, &x, &w, None, m, k, 2 * inner)?;
        let mut act2 = s.alloc_zeros::<T>(m * inner)?;
        silu_mul_rows(gpu, &mut act2, &y, m, inner, GateUpLayout::Interleaved)?;
        let (a1, a2) = (download(gpu, &act)?, download(gpu, &act2)?);
        row(
            "silu_mul_interleaved",
            format!("{m} rows: fused vs projection then SiLU"),
            normwise_error(&a2, &a1),
            tolerance::<T>(),
        );
    }

    // Column copy (aux capture).
    let (rows, w) = (4, 300);
    let (src, src_h) = upload::<T>(gpu, &random(rng, rows * w, 1.0))?;
    let mut dst = s.alloc_zeros::<T>(rows * 3 * w)?;
    copy_cols(gpu, &mut dst, &src, rows, w, 3 * w, w)?;
    let mut want = vec![0f32; rows * 3 * w];
    for r in 0..rows {
        want[r * 3 * w + w..r * 3 * w + 2 * w].copy_from_slice(&src_h[r * w..(r + 1) * w]);
    }
    row(
        "copy_cols",
        format!("{rows} rows of {w} into {}", 3 * w),
        normwise_error(&download(gpu, &dst)?, &want),
        0.0,
    );

    // Split argmax with planted ties across chunks (the lower index must win).
    let (rows, n) = (5, 128_256);
    let mut x_h = random(rng, rows * n, 1.0);
    for r in 0..rows {
        let a = rng.random_range(0..n / 2);
        let b = a + rng.random_range(1..n / 2);
        x_h[r * n + a] = 3.0;
        x_h[r * n + b] = 3.0;
    }
    let (x, x_h) = upload::<T>(gpu, &x_h)?;
    let mut idx = s.alloc_zeros::<i32>(rows)?;
    let mut scratch = ArgmaxScratch::new(gpu, rows, n)?;
    argmax_split(gpu, &mut idx, &x, rows, n, &mut scratch)?;
    let got = s.clone_dtoh(&idx)?;
    let wrong = (0..rows)
        .filter(|&r| cpu::argmax(&x_h[r * n..(r + 1) * n]) != Some(got[r] as usize))
        .count();
    row(
        "argmax_split",
        format!("{rows} rows of {n}, planted ties"),
        wrong as f64,
        0.0,
    );

    // Log-softmax top-k (the draft search's input) against log_softmax + top_k.
    let (rows, n, k) = (3, 32_000, 4);
    let (x, x_h) = upload::<T>(gpu, &random(rng, rows * n, 6.0))?;
    let mut idx = s.alloc_zeros::<i32>(rows * k)?;
    let mut lp = s.alloc_zeros::<f32>(rows * k)?;
    top_k_logprobs(gpu, &mut idx, &mut lp, &x, rows, n, k)?;
    let (got_i, got_l) = (s.clone_dtoh(&idx)?, s.clone_dtoh(&lp)?);
    let mut want_l = Vec::new();
    let mut wrong = 0;
    for r in 0..rows {
        let want = cpu::top_k(&cpu::log_softmax(&x_h[r * n..(r + 1) * n]), k);
        wrong += want
            .iter()
            .zip(&got_i[r * k..(r + 1) * k])
            .filter(|((i, _), g)| *i != **g as usize)
            .count();
        want_l.extend(want.iter().map(|w| w.1));
    }
    row(
        "top_k_logprobs (ids)",
        format!("{rows} rows of {n}, k {k}"),
        wrong as f64,
        0.0,
    );
    row(
        "top_k_logprobs",
        format!("{rows} rows of {n}, k {k}"),
        normwise_error(&got_l, &want_l),
        1e-5,
    );

    // Device random fill: range, mean and variance of U(-1, 1) * 0.5 + 2.
    let n = 1 << 20;
    let mut x = s.alloc_zeros::<T>(n)?;
    fill_uniform(gpu, &mut x, rng.random(), 0.5, 2.0)?;
    let v = download(gpu, &x)?;
    let mean = v.iter().map(|&a| a as f64).sum::<f64>() / n as f64;
    let var = v.iter().map(|&a| (a as f64 - mean).powi(2)).sum::<f64>() / n as f64;
    let in_range = v.iter().all(|&a| (1.49..=2.51).contains(&a));
    // Standard error of the mean is 0.29 / 1024 = 2.8e-4; variance 1/12 = 0.0833.
    let err = if in_range {
        ((mean - 2.0).abs() / 2.0).max((var - 0.25 / 3.0).abs() / (0.25 / 3.0) / 10.0)
    } else {
        f64::INFINITY
    };
    row(
        "fill_uniform",
        format!("{n} values, mean {mean:.4}, variance {var:.4}"),
        err,
        2e-3,
    );
    Ok(())
}

/// A tensor-core layout with `parts` slices and `chunks` loads in flight
/// (the batch check runs rows alone with a different `chunks` than the
/// batch: only `parts` may change the bits).
fn layout(parts: usize, chunks: usize) -> MmaLaunch {
    MmaLaunch {
        parts,
        chunks,
        groups: if chunks == 4 { 8 / parts } else { 1 },
        pipelined: false,
    }
}
