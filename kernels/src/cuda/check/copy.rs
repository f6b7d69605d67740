//! Checks of the row copies: the embedding gather, the KV compaction,
//! column copies and the staged inputs' scatter (exact: each must match its
//! reference bit for bit).

use super::{download, normwise_error, random, row_recorder, upload, CheckRow};
use crate::cpu;
use crate::cuda::{
    copy_cols, embedding_gather, kv_commit, Gpu, GpuElement, GpuError, StagedWords, WordField,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The embedding gather: 37 random rows of a 1000-row table.
pub(super) fn check_embedding_gather<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (v, h) = (1000, 512);
    let (table, table_h) = upload::<T>(gpu, &random(rng, v * h, 1.0))?;
    let ids: Vec<u32> = (0..37).map(|_| rng.random_range(0..v as u32)).collect();
    let mut out = s.alloc_zeros::<T>(ids.len() * h)?;
    embedding_gather(gpu, &mut out, &table, &s.clone_htod(&ids)?, h)?;
    let want: Vec<f32> = ids
        .iter()
        .flat_map(|&i| table_h[i as usize * h..(i as usize + 1) * h].to_vec())
        .collect();
    row(
        "embedding_gather",
        "37 rows of 512 from 1000".into(),
        normwise_error(&download(gpu, &out)?, &want),
        0.0,
    );
    Ok(())
}

/// KV commit over 3 layers, 2 sequences.
pub(super) fn check_kv_commit<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (layers, width, entries) = (3, 1024, 40);
    let stride = entries * width;
    let (mut kp, mut kp_h) = upload::<T>(gpu, &random(rng, layers * stride, 1.0))?;
    let (mut vp, mut vp_h) = upload::<T>(gpu, &random(rng, layers * stride, 1.0))?;
    // Sequence 0 owns rows 0..20 (committed 10), sequence 1 rows 20..40 (committed 25).
    let keeps = [(10usize, vec![10usize, 12, 13, 17]), (25, vec![25, 27, 31])];
    let (mut src, mut dst, mut off) = (Vec::new(), Vec::new(), vec![0i32]);
    for (c, keep) in &keeps {
        for (i, &k) in keep.iter().enumerate() {
            src.push(k as i32);
            dst.push((c + i) as i32);
        }
        off.push(src.len() as i32);
    }
    kv_commit(
        gpu,
        &mut kp,
        Some(&mut vp),
        &s.clone_htod(&src)?,
        &s.clone_htod(&dst)?,
        &s.clone_htod(&off)?,
        layers,
        width,
        stride,
    )?;
    for l in 0..layers {
        for (c, keep) in &keeps {
            cpu::compact_rows(&mut kp_h[l * stride..(l + 1) * stride], width, *c, keep);
            cpu::compact_rows(&mut vp_h[l * stride..(l + 1) * stride], width, *c, keep);
        }
    }
    let err = normwise_error(&download(gpu, &kp)?, &kp_h)
        .max(normwise_error(&download(gpu, &vp)?, &vp_h));
    row(
        "kv_commit",
        format!("{layers} layers, 2 sequences, rows of {width}"),
        err,
        0.0,
    );
    Ok(())
}

/// Column copy (aux capture): rows of 300 into the middle of rows of 900.
pub(super) fn check_copy_cols<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
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
    Ok(())
}

/// The staged inputs' scatter: seven fields of random lengths (one of them
/// a single word) over buffers holding random words, each filled with
/// random words, some short of their length (the rest must become zeros),
/// then filled again and scattered again (a second step's inputs). The
/// error counts the words that differ.
pub(super) fn check_scatter_words(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let lens: Vec<usize> = (0..7)
        .map(|f| if f == 3 { 1 } else { rng.random_range(2..3000) })
        .collect();
    let mut bufs = Vec::with_capacity(lens.len());
    for &n in &lens {
        let junk: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        bufs.push(s.clone_htod(&junk)?);
    }
    let fields = bufs
        .iter()
        .map(|b| WordField::of(gpu, b))
        .collect::<Result<Vec<_>, _>>()?;
    // SAFETY: `bufs` outlives `staged` (both dropped at the end, `staged` first).
    let mut staged = unsafe { StagedWords::new(gpu, &fields)? };
    let mut wrong = 0usize;
    for _step in 0..2 {
        let mut want = Vec::with_capacity(lens.len());
        for (f, &n) in lens.iter().enumerate() {
            let used = if rng.random_bool(0.5) {
                n
            } else {
                rng.random_range(0..=n)
            };
            let vals: Vec<u32> = (0..used).map(|_| rng.random()).collect();
            staged.fill(f, vals.iter().copied())?;
            let mut w = vals;
            w.resize(n, 0);
            want.push(w);
        }
        staged.upload(gpu)?;
        staged.scatter(gpu)?;
        for (b, w) in bufs.iter().zip(&want) {
            let got = s.clone_dtoh(b)?;
            wrong += got.iter().zip(w).filter(|(g, w)| g != w).count();
        }
    }
    drop(staged);
    rows_out.push(CheckRow {
        kernel: "scatter_words",
        dtype: "-",
        shape: format!("fields of {lens:?} words, two fills"),
        error: wrong as f64,
        tolerance: 0.0,
    });
    Ok(())
}
