//! Checks of the selections over rows of logits (exact: the same indices as
//! the reference): argmax and top-k over a Llama-3 vocabulary, the split
//! argmax with planted ties, and the log-softmax top-k.

use super::{normwise_error, random, row_recorder, upload, CheckRow};
use crate::cpu;
use crate::cuda::{
    argmax_chunk, argmax_rows, argmax_split, top_k_logprobs, top_k_rows, top_k_split,
    ArgmaxScratch, Gpu, GpuElement, GpuError, TopKScratch,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Argmax and top-k over a Llama-3 vocabulary (one input for both).
pub(super) fn check_argmax_top_k<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (rows, v) = (7, 128_256);
    let (x, x_h) = upload::<T>(gpu, &random(rng, rows * v, 10.0))?;
    let mut am = s.alloc_zeros::<i32>(rows)?;
    argmax_rows(gpu, &mut am, &x, v)?;
    let got = s.clone_dtoh(&am)?;
    let wrong = (0..rows)
        .filter(|&r| cpu::argmax(&x_h[r * v..(r + 1) * v]) != Some(got[r] as usize))
        .count();
    row("argmax", format!("{rows} x {v}"), wrong as f64, 0.0);
    let k = 8;
    let (mut ti, mut tv) = (
        s.alloc_zeros::<i32>(rows * k)?,
        s.alloc_zeros::<f32>(rows * k)?,
    );
    top_k_rows(gpu, &mut ti, &mut tv, &x, v, k)?;
    let got = s.clone_dtoh(&ti)?;
    let wrong = (0..rows)
        .filter(|&r| {
            cpu::top_k(&x_h[r * v..(r + 1) * v], k)
                .iter()
                .map(|p| p.0 as i32)
                .collect::<Vec<_>>()
                != got[r * k..(r + 1) * k]
        })
        .count();
    row("top_k", format!("{rows} x {v}, k = {k}"), wrong as f64, 0.0);
    Ok(())
}

/// Split argmax with planted ties across chunks (the lower index must win).
pub(super) fn check_argmax_split<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
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
        format!(
            "{rows} rows of {n} in chunks of {}, planted ties",
            argmax_chunk()
        ),
        wrong as f64,
        0.0,
    );
    Ok(())
}

/// Log-softmax top-k (the draft search's input) against log_softmax + top_k,
/// in the form `SPECULA_TOPK` picks (split by default): a 32000 and a
/// 129280 vocabulary, a row shorter than a chunk with k 32, and a tail chunk
/// shorter than k (1030 = 1024 + 6, k 8); each row alone against its batch,
/// bit for bit.
pub(super) fn check_top_k_logprobs<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let form = if top_k_split() {
        "split"
    } else {
        "one block a row"
    };
    for (rows, n, k) in [(3, 32_000, 4), (2, 129_280, 8), (5, 1000, 32), (4, 1030, 8)] {
        let (x, x_h) = upload::<T>(gpu, &random(rng, rows * n, 6.0))?;
        let mut scratch = TopKScratch::new(gpu, rows, n, k)?;
        let mut idx = s.alloc_zeros::<i32>(rows * k)?;
        let mut lp = s.alloc_zeros::<f32>(rows * k)?;
        top_k_logprobs(gpu, &mut idx, &mut lp, &x, (rows, n, k), &mut scratch)?;
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
        let shape = format!("{rows} rows of {n}, k {k} ({form})");
        row("top_k_logprobs (ids)", shape.clone(), wrong as f64, 0.0);
        row(
            "top_k_logprobs",
            shape.clone(),
            normwise_error(&got_l, &want_l),
            1e-5,
        );
        // Each row alone, at the start of a buffer of its own.
        let mut differ = 0;
        for r in 0..rows {
            let (one, _) = upload::<T>(gpu, &x_h[r * n..(r + 1) * n])?;
            let (mut i1, mut l1) = (s.alloc_zeros::<i32>(k)?, s.alloc_zeros::<f32>(k)?);
            top_k_logprobs(gpu, &mut i1, &mut l1, &one, (1, n, k), &mut scratch)?;
            let (i1, l1) = (s.clone_dtoh(&i1)?, s.clone_dtoh(&l1)?);
            differ += (0..k)
                .filter(|&j| {
                    i1[j] != got_i[r * k + j] || l1[j].to_bits() != got_l[r * k + j].to_bits()
                })
                .count();
        }
        row(
            "top_k_logprobs_batch_invariant",
            format!("{shape}: each row alone vs the batch, differing picks"),
            differ as f64,
            0.0,
        );
    }
    Ok(())
}
