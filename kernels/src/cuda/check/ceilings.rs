//! The device's measured ceilings (copy bandwidth, a bf16 GEMM, a
//! dependent launch) and the
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
    /// Microseconds a launch adds to a chain of dependent launches that do
    /// no work (64 `launch_link`s, each waiting on the one
    /// before as the engine's kernels do): the least a kernel on a step's
    /// dependent path costs, whatever it reads.
    pub launch_us: f64,
}

/// Launches in the chain that times [`Ceilings::launch_us`]: few enough
/// for the host to enqueue them all within the timer's hold.
const LAUNCH_CHAIN: usize = 64;

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

/// Measures the copy bandwidth (1 GiB device-to-device), a bf16 GEMM and
/// a dependent launch with no work in it.
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
    let gemm_tflops = 2.0 * (d as f64).powi(3) / (ms * 1e-3) / 1e12;
    let mut v = s.alloc_zeros::<u32>(1)?;
    let chain_ms = time_ms(gpu, 10, || {
        (0..LAUNCH_CHAIN).try_for_each(|_| crate::cuda::launch_link(gpu, &mut v))
    })?;
    Ok(Ceilings {
        copy_gb_s,
        gemm_tflops,
        launch_us: 1e3 * chain_ms / LAUNCH_CHAIN as f64,
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

/// The launch chain's order: `launch_link`s launched back to back, each a
/// programmatic dependent of the one before where the GPU uses them, must
/// add up to their count. Two links that overlapped past their waits would
/// both read the same value and lose an increment. The error is the
/// fraction of increments lost. The chain starts behind a hold of the
/// stream (the timer's), so that its first links are enqueued before any of
/// them runs.
pub(super) fn check_launch_chain(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows: &mut Vec<super::CheckRow>,
) -> Result<(), GpuError> {
    let links = 4 * LAUNCH_CHAIN + rng.random_range(0..LAUNCH_CHAIN);
    let start = rng.random_range(0..1_000_000u32);
    let mut v = gpu.stream.clone_htod(&[start])?;
    crate::cuda::hold_stream(gpu, GpuTimer::HOLD_NS)?;
    for _ in 0..links {
        crate::cuda::launch_link(gpu, &mut v)?;
    }
    let got = gpu.stream.clone_dtoh(&v)?[0];
    let added = got.wrapping_sub(start) as f64;
    rows.push(super::CheckRow {
        kernel: "launch_link",
        dtype: "-",
        shape: format!(
            "{links} dependent launches from {start}: read {got} ({})",
            if gpu.pdl {
                "programmatic dependents"
            } else {
                "stream order"
            }
        ),
        error: (links as f64 - added).abs() / links as f64,
        tolerance: 0.0,
    });
    Ok(())
}
