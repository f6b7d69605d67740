//! Check of the L2 prefetch (`l2_prefetch.cu`): asked for on the side
//! stream beside a linear, joined before the next, as the engine does, it
//! changes nothing: the weights read back as uploaded and the linear gives
//! the bits it gives without it.

use super::{differing, download, random, row_recorder, upload, CheckRow};
use crate::cuda::{l2_prefetch, Gpu, GpuElement, GpuError, L2Prefetch, LinearLayer};
use rand_chacha::ChaCha8Rng;

/// A 768 x 1024 weight and a second range of an odd length, both prefetched
/// at each priority beside a 6-row linear.
pub(super) fn check_l2_prefetch<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError> {
    let mut row = row_recorder::<T>(rows_out);
    let (m, k, n) = (6, 1024, 768);
    let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 0.05))?;
    let (odd, odd_h) = upload::<T>(gpu, &random(rng, 3005, 1.0))?;
    let (x, _) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
    let mut plain = gpu.stream.alloc_zeros::<T>(m * n)?;
    LinearLayer::new(gpu, &w, None, k, n).rows(&mut plain, &x, m)?;
    let want = download(gpu, &plain)?;
    for (mode, what) in [
        (L2Prefetch::Normal, "normal"),
        (L2Prefetch::EvictLast, "evict-last"),
    ] {
        let mut y = gpu.stream.alloc_zeros::<T>(m * n)?;
        gpu.fork(|| l2_prefetch(gpu, &[&w, &odd], mode))??;
        LinearLayer::new(gpu, &w, None, k, n).rows(&mut y, &x, m)?;
        gpu.join()?;
        let changed =
            differing(&download(gpu, &w)?, &w_h) + differing(&download(gpu, &odd)?, &odd_h);
        row(
            "l2_prefetch",
            format!(
                "{what} priority, beside a {m} x {k} -> {n} linear: differing outputs and weights"
            ),
            (differing(&download(gpu, &y)?, &want) + changed) as f64,
            0.0,
        );
    }
    Ok(())
}
