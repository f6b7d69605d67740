//! Checks of the tiled tensor-core linear (`linear_tiles.cu`, bf16) against
//! the CPU reference, and its batch invariance bit for bit: every row of a
//! batch of up to 512 equals the same row computed alone by the small-row
//! kernel, and the first `m` rows of the batch computed as a batch of `m`,
//! for every tile shape and k split, with the SiLU epilogue too. The same
//! for every layout of the warpgroup-mma linear (`linear_wg.cu`) on a GPU
//! that has it.

use super::linear::swiglu_reference;
use super::CheckRow;
use super::{differing, download, normwise_error, random, row_recorder, tolerance, upload};
use crate::cpu;
use crate::cuda::{
    Gpu, GpuElement, GpuError, LinearLayer, MmaLaunch, TileLaunch, WgLaunch, TILE_SHAPES,
};
use rand_chacha::ChaCha8Rng;

/// Batch sizes whose rows are compared with the 512-row batch's.
const BATCHES: [usize; 16] = [
    1, 2, 7, 9, 16, 17, 33, 64, 65, 127, 128, 129, 255, 256, 400, 511,
];

/// Every tile shape at every k split (with a bias; n not a multiple of the
/// tile; one k whose slices end mid-stage), against the CPU reference and
/// bit for bit against rows alone and smaller batches; the auto form over
/// the same batches; the SiLU epilogue.
pub(super) fn check_linear_tiles<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    if T::SUFFIX != "bf16" {
        return Ok(());
    }
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    let m = 512usize;
    // k 1056 and 2112 in 2 parts: slices of 33 chunks, ending mid-stage.
    let cases: [(usize, usize, &[usize]); 3] = [
        (2048, 520, &[1, 2, 4, 8]),
        (1056, 200, &[1]),
        (2112, 136, &[2]),
    ];
    for (k, n, all_parts) in cases {
        let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
        let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0 / (k as f32).sqrt()))?;
        let (b, b_h) = upload::<T>(gpu, &random(rng, n, 0.5))?;
        let mut want = vec![0f32; m * n];
        cpu::linear(&x_h, m, k, cpu::Matrix::F32(&w_h), n, Some(&b_h), &mut want);
        let layer = LinearLayer::new(gpu, &w, Some(&b), k, n);
        let tiles = |rows: usize, l: TileLaunch| -> Result<Vec<f32>, GpuError> {
            let mut y = s.alloc_zeros::<T>(rows * n)?;
            layer.tiles(&mut y, &x, rows, l, false)?;
            download(gpu, &y)
        };
        let wg = |rows: usize, l: WgLaunch| -> Result<Vec<f32>, GpuError> {
            let mut y = s.alloc_zeros::<T>(rows * n)?;
            layer.wg(&mut y, &x, rows, l, false)?;
            download(gpu, &y)
        };
        // Each row alone through the small-row kernel (one launch per row).
        let alone = |parts: usize| -> Result<Vec<f32>, GpuError> {
            let xs = s.clone_dtoh(&x)?;
            let mut out = Vec::with_capacity(m * n);
            for r in 0..m {
                let xr = s.clone_htod(&xs[r * k..(r + 1) * k])?;
                let mut y = s.alloc_zeros::<T>(n)?;
                layer.mma(&mut y, &xr, 1, MmaLaunch::pipelined(parts), false)?;
                out.extend(download(gpu, &y)?);
            }
            Ok(out)
        };
        for &parts in all_parts {
            let single = alone(parts)?;
            let mut forms = vec![(
                ("linear_tiles", "linear_tiles_invariant"),
                "every tile shape",
                sweep(&tile_layouts(parts), m, n, &want, &single, tiles)?,
            )];
            if gpu.wgmma {
                let swept = sweep(
                    &WgLaunch::variants(parts).collect::<Vec<_>>(),
                    m,
                    n,
                    &want,
                    &single,
                    wg,
                )?;
                forms.push((
                    ("linear_wg", "linear_wg_invariant"),
                    "every wgmma layout",
                    swept,
                ));
            }
            for ((kernel, invariant), layouts, (worst, differ)) in forms {
                row(
                    kernel,
                    format!("{m} x {k} . ({n} x {k})^T + bias, k in {parts} parts, {layouts}"),
                    worst,
                    tolerance::<T>(),
                );
                row(
                    invariant,
                    format!(
                        "k {k} n {n}, {parts} parts, {layouts}: 512 rows vs each row alone (small kernel) and vs batches of 1..511"
                    ),
                    differ as f64,
                    0.0,
                );
            }
        }
        // The auto form (the layout the engine uses) over every batch size.
        let mut full = s.alloc_zeros::<T>(m * n)?;
        layer.rows(&mut full, &x, m)?;
        let full = download(gpu, &full)?;
        let mut differ = differing(&alone(crate::cuda::mma_k_parts(k, n))?, &full);
        for &rows in &BATCHES {
            let mut y = s.alloc_zeros::<T>(rows * n)?;
            layer.rows(&mut y, &x, rows)?;
            differ += differing(&download(gpu, &y)?, &full[..rows * n]);
        }
        row(
            "linear_rows_invariant",
            format!("k {k} n {n}: rows() of 512 rows vs each row alone and vs batches of 1..511"),
            differ as f64,
            0.0,
        );
    }
    check_tiles_silu::<T>(gpu, rng, &mut row)
}

/// Over every layout: the worst error of `m` rows together against the CPU
/// (`want`), and the outputs whose bits differ from each row alone
/// (`single`) or, for each of [`BATCHES`], from the first rows of the
/// `m`-row batch. `run(rows, layout)` computes the first `rows` rows.
fn sweep<L: Copy>(
    layouts: &[L],
    m: usize,
    n: usize,
    want: &[f32],
    single: &[f32],
    run: impl Fn(usize, L) -> Result<Vec<f32>, GpuError>,
) -> Result<(f64, usize), GpuError> {
    let (mut worst, mut differ) = (0f64, 0);
    for &l in layouts {
        let together = run(m, l)?;
        worst = worst.max(normwise_error(&together, want));
        differ += differing(single, &together);
        for &rows in &BATCHES {
            differ += differing(&run(rows, l)?, &together[..rows * n]);
        }
    }
    Ok((worst, differ))
}

/// Every compiled tile shape with k in `parts` slices.
fn tile_layouts(parts: usize) -> Vec<TileLaunch> {
    TILE_SHAPES
        .iter()
        .map(|&(bn, bm)| TileLaunch { parts, bn, bm })
        .collect()
}

/// The SiLU-and-mul epilogue of the tiled kernel: 300 rows of an interleaved
/// gate|up projection against the CPU, and bit for bit against the small
/// kernel's rows alone.
fn check_tiles_silu<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    row: &mut impl FnMut(&'static str, String, f64, f64),
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let (m, k, inner) = (300usize, 1024usize, 264usize);
    let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, 2 * inner * k, 2.0 / (k as f32).sqrt()))?;
    let gate_up = LinearLayer::new(gpu, &w, None, k, 2 * inner);
    let mut act = s.alloc_zeros::<T>(m * inner)?;
    gate_up.swiglu(&mut act, &x, m)?;
    let got = download(gpu, &act)?;
    let want = swiglu_reference::<T>(&x_h, &w_h, m, k, inner);
    row(
        "linear_tiles_silu",
        format!("{m} x {k} . ({} x {k})^T, gate|up interleaved", 2 * inner),
        normwise_error(&got, &want),
        tolerance::<T>(),
    );
    let xs = s.clone_dtoh(&x)?;
    let mut differ = 0;
    for r in 0..m {
        let xr = s.clone_htod(&xs[r * k..(r + 1) * k])?;
        let mut y = s.alloc_zeros::<T>(inner)?;
        gate_up.swiglu(&mut y, &xr, 1)?;
        differ += differing(&download(gpu, &y)?, &got[r * inner..(r + 1) * inner]);
    }
    row(
        "linear_tiles_silu_invariant",
        format!("{m} rows together vs each alone (small kernel), gate|up + SiLU"),
        differ as f64,
        0.0,
    );
    if gpu.wgmma {
        let (mut worst, mut differ) = (0f64, 0);
        for l in WgLaunch::variants(crate::cuda::mma_k_parts(k, 2 * inner)) {
            let mut y = s.alloc_zeros::<T>(m * inner)?;
            gate_up.wg(&mut y, &x, m, l, true)?;
            let y = download(gpu, &y)?;
            worst = worst.max(normwise_error(&y, &want));
            differ += differing(&y, &got);
        }
        row(
            "linear_wg_silu",
            format!(
                "{m} x {k} . ({} x {k})^T, gate|up interleaved, every wgmma layout",
                2 * inner
            ),
            worst,
            tolerance::<T>(),
        );
        row(
            "linear_wg_silu_invariant",
            format!("{m} rows, every wgmma layout vs the default form's rows (each equal to its row alone)"),
            differ as f64,
            0.0,
        );
    }
    Ok(())
}
