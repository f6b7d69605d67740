//! Checks of the linear layers against the CPU reference: cuBLAS, the
//! batch-invariant small-row linear in FMA and on tensor cores (whose batch
//! invariance is checked exactly: a row computed alone equals the same row
//! inside a larger batch), and its fused SiLU form.

use super::{
    differing, download, normwise_error, random, round, row_recorder, tolerance, upload, CheckRow,
};
use crate::cpu;
use crate::cuda::{
    linear, silu_mul_rows, GateUpLayout, Gpu, GpuElement, GpuError, LinearLayer, MmaLaunch,
};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use rand_chacha::ChaCha8Rng;

/// cuBLAS linear: bf16 GEMM with f32 accumulation, or f32 GEMM.
pub(super) fn check_cublas<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError>
where
    CudaBlas: Gemm<T>,
{
    let mut row = row_recorder::<T>(rows_out);
    let (m, k, n) = (5, 4096, 1024);
    let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0))?;
    let mut want = vec![0f32; m * n];
    cpu::linear(&x_h, m, k, cpu::Matrix::F32(&w_h), n, None, &mut want);
    let mut y = gpu.stream.alloc_zeros::<T>(m * n)?;
    linear(gpu, &mut y, &x, &w, m, k, n)?;
    let got = download(gpu, &y)?;
    row(
        "linear_cublas",
        format!("{m} x {k} . ({n} x {k})^T"),
        normwise_error(&got, &want),
        tolerance::<T>(),
    );
    Ok(())
}

/// Small-row linear, vector path (k % 8 == 0) and scalar path, with a bias.
pub(super) fn check_linear_rows<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    for (m, k, n) in [(13usize, 4096usize, 1000usize), (3, 100, 77)] {
        let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
        let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
        let (b, b_h) = upload::<T>(gpu, &random(rng, n, 0.5))?;
        let layer = LinearLayer::new(gpu, &w, Some(&b), k, n);
        let mut y = s.alloc_zeros::<T>(m * n)?;
        layer.rows(&mut y, &x, m)?;
        let mut want = vec![0f32; m * n];
        cpu::linear(&x_h, m, k, cpu::Matrix::F32(&w_h), n, Some(&b_h), &mut want);
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
            layer.rows(&mut yr, &xr, 1)?;
            alone.extend(download(gpu, &yr)?);
        }
        row(
            "linear_rows_invariant",
            format!("{m} rows alone vs together, k {k}"),
            differing(&alone, &got) as f64,
            0.0,
        );
    }
    Ok(())
}

/// The tensor-core form (bf16 only): every k split, with a bias, and batch
/// invariance over several token tiles and past one 64-token block.
pub(super) fn check_linear_mma<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    if T::SUFFIX != "bf16" {
        return Ok(());
    }
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let (m, k, n) = (70usize, 2048usize, 520usize);
    let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
    let (b, b_h) = upload::<T>(gpu, &random(rng, n, 0.5))?;
    let mut want = vec![0f32; m * n];
    cpu::linear(&x_h, m, k, cpu::Matrix::F32(&w_h), n, Some(&b_h), &mut want);
    // The first `rows` rows of `x` through `layout`, with the bias.
    let layer = LinearLayer::new(gpu, &w, Some(&b), k, n);
    let run = |x: &CudaSlice<T>, rows: usize, layout: MmaLaunch| -> Result<Vec<f32>, GpuError> {
        let mut y = s.alloc_zeros::<T>(rows * n)?;
        layer.mma(&mut y, x, rows, layout, false)?;
        download(gpu, &y)
    };
    for parts in [1usize, 2, 4, 8] {
        let together = run(&x, m, layout(parts, 4))?;
        row(
            "linear_mma",
            format!("{m} x {k} . ({n} x {k})^T + bias, k in {parts} parts"),
            normwise_error(&together, &want),
            tolerance::<T>(),
        );
        // Rows in several token tiles and both 64-token blocks, each alone.
        let mut differ = 0;
        for at in [0usize, 9, 37, 63, 69] {
            let xr = s.clone_htod(&s.clone_dtoh(&x)?[at * k..(at + 1) * k])?;
            let alone = run(&xr, 1, MmaLaunch::pipelined(parts))?;
            differ += differing(&alone, &together[at * n..(at + 1) * n]);
        }
        // The first 5 rows as one token tile of the pipelined kernel, 12
        // and 16 as two, 24 and 32 as four, 40 and 64 as eight; each also
        // with two column tiles a block (n = 520: the last block's second
        // tile past the weight's end).
        for rows in [5, 12, 16, 24, 32, 40, 64] {
            let tiles = MmaLaunch::pipelined_for(rows, parts).expect("at most 64 rows");
            for groups in [1, 2] {
                let got = run(&x, rows, tiles.with_groups(groups))?;
                differ += differing(&got, &together[..rows * n]);
            }
        }
        row(
            "linear_mma_invariant",
            format!(
                "rows 0, 9, 37, 63, 69 of {m} alone, rows 0-4 as one tile, 0-11, 0-15 as two, 0-23, 0-31 as four and 0-39, 0-63 as eight (pipelined kernel, one and two column tiles a block) vs together, {parts} parts"
            ),
            differ as f64,
            0.0,
        );
    }
    // A slice that ends mid-stage (37 chunks: nine four-chunk stages and one
    // chunk, or four eight-chunk stages and five): the pipelined kernel's
    // tail against the looped kernel, one and two token tiles.
    let k = 1184;
    let (x, x_h) = upload::<T>(gpu, &random(rng, 64 * k, 1.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
    let mut want = vec![0f32; 32 * n];
    cpu::linear(
        &x_h[..32 * k],
        32,
        k,
        cpu::Matrix::F32(&w_h),
        n,
        None,
        &mut want,
    );
    let layer = LinearLayer::new(gpu, &w, None, k, n);
    let run = |rows: usize, layout: MmaLaunch| -> Result<Vec<f32>, GpuError> {
        let mut y = s.alloc_zeros::<T>(rows * n)?;
        layer.mma(&mut y, &x, rows, layout, false)?;
        download(gpu, &y)
    };
    let looped = run(64, layout(1, 8))?;
    let pipelined = |rows| MmaLaunch::pipelined_for(rows, 1).expect("at most 32 rows");
    let four = run(32, pipelined(32))?;
    let mut differ = differing(&four, &looped[..32 * n]);
    for rows in [7, 16, 27, 48, 64] {
        differ += differing(&run(rows, pipelined(rows))?, &looped[..rows * n]);
        let grouped = pipelined(rows).with_groups(2);
        differ += differing(&run(rows, grouped)?, &looped[..rows * n]);
    }
    row(
        "linear_mma",
        format!("32 x {k} . ({n} x {k})^T, four token tiles of the pipelined kernel"),
        normwise_error(&four, &want),
        tolerance::<T>(),
    );
    row(
        "linear_mma_invariant",
        format!("k {k} (a slice ending mid-stage): 64 and 48 rows as eight tiles, 32 and 27 as four, 16 as two and 7 as one (pipelined kernel) vs the looped kernel"),
        differ as f64,
        0.0,
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

/// Interleaved gate|up projection with SiLU fused, for 1 (two columns per
/// warp) and 5 rows (four per warp), and the same after a plain projection.
/// The CPU reference of a fused gate|up projection with SiLU: `x[m, k]`
/// times interleaved gate|up rows `w[2 inner, k]`, gate and up rounded to
/// `T` as if stored, then `silu(gate) * up` (`[m, inner]`).
pub(super) fn swiglu_reference<T: GpuElement>(
    x: &[f32],
    w: &[f32],
    m: usize,
    k: usize,
    inner: usize,
) -> Vec<f32> {
    let mut gu = vec![0f32; m * 2 * inner];
    cpu::linear(x, m, k, cpu::Matrix::F32(w), 2 * inner, None, &mut gu);
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
    want
}

pub(super) fn check_linear_rows_silu<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    for m in [1usize, 5] {
        let (k, inner) = (512, 300);
        let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
        let (w, w_h) = upload::<T>(gpu, &random(rng, 2 * inner * k, 2.0 / (k as f32).sqrt()))?;
        let gate_up = LinearLayer::new(gpu, &w, None, k, 2 * inner);
        let mut act = s.alloc_zeros::<T>(m * inner)?;
        gate_up.swiglu(&mut act, &x, m)?;
        let want = swiglu_reference::<T>(&x_h, &w_h, m, k, inner);
        row(
            "linear_rows_silu",
            format!("{m} x {k} . ({} x {k})^T, gate|up interleaved", 2 * inner),
            normwise_error(&download(gpu, &act)?, &want),
            tolerance::<T>(),
        );
        let mut y = s.alloc_zeros::<T>(m * 2 * inner)?;
        gate_up.rows(&mut y, &x, m)?;
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
    Ok(())
}
