//! The device's measured ceilings (copy bandwidth, a bf16 GEMM) and the
//! CUDA-event timer that every timing uses.

use crate::cuda::{linear, Gpu, GpuError, GpuTimer};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The device's measured ceilings.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    /// Device-to-device copy bandwidth, bytes read + written per second.
    pub copy_gb_s: f64,
    /// bf16 GEMM (cuBLAS, 8192^3) in TFLOP/s.
    pub gemm_tflops: f64,
}

/// Median over `reps` of `f` timed with CUDA events, after 3 warm-ups, in ms.
pub fn time_ms(
    gpu: &Gpu,
    reps: usize,
    mut f: impl FnMut() -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    for _ in 0..3 {
        f()?;
    }
    let timer = GpuTimer::new(gpu)?;
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        timer.start(gpu)?;
        f()?;
        v.push(timer.stop_ms(gpu)? as f64);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Measures the copy bandwidth (1 GiB device-to-device) and a bf16 GEMM.
pub fn measure_ceilings(gpu: &Gpu) -> Result<Ceilings, GpuError> {
    let s = &gpu.stream;
    let n = 1usize << 28; // 2^28 f32 = 1 GiB
    let src = s.alloc_zeros::<f32>(n)?;
    let mut dst = s.alloc_zeros::<f32>(n)?;
    let ms = time_ms(gpu, 10, || Ok(s.memcpy_dtod(&src, &mut dst)?))?;
    let copy_gb_s = 2.0 * (n * 4) as f64 / (ms * 1e-3) / 1e9;
    let d = 8192;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let host: Vec<half::bf16> = (0..d * d)
        .map(|_| half::bf16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    let a = s.clone_htod(&host)?;
    let b = s.clone_htod(&host)?;
    let mut c = s.alloc_zeros::<half::bf16>(d * d)?;
    let ms = time_ms(gpu, 10, || linear(gpu, &mut c, &a, &b, d, d, d))?;
    Ok(Ceilings {
        copy_gb_s,
        gemm_tflops: 2.0 * (d as f64).powi(3) / (ms * 1e-3) / 1e12,
    })
}

/// The timer's hold: a 2 ms `hold_stream` timed by [`GpuTimer`] (which
/// holds the stream for [`GpuTimer::HOLD_NS`] before its start event) must
/// read 2 ms: not less (the hold kernel returned early) and not the timer's
/// own hold as well (its start event went ahead of that hold). The error is
/// the excess over 2 ms relative to it (1 if short).
pub(super) fn check_timer_hold(
    gpu: &Gpu,
    _rng: &mut ChaCha8Rng,
    rows: &mut Vec<super::CheckRow>,
) -> Result<(), GpuError> {
    const NS: u64 = 2_000_000;
    let ms = time_ms(gpu, 5, || crate::cuda::hold_stream(gpu, NS))?;
    let want = NS as f64 * 1e-6;
    rows.push(super::CheckRow {
        kernel: "hold_stream",
        dtype: "-",
        shape: format!("{want} ms timed behind the timer's hold: read {ms:.3} ms"),
        error: if ms < want { 1.0 } else { (ms - want) / want },
        tolerance: 0.1,
    });
    Ok(())
}
