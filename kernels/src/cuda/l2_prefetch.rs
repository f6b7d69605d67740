//! Weights asked into L2 ahead of their use (`l2_prefetch.cu`): the engine
//! launches it on the side stream ([`Gpu::fork`]) as an attention starts,
//! for the projection after the attention, so that the projection reads
//! from L2 what it would otherwise wait on DRAM for, while the attention
//! itself reads little (a short context). The requests write nothing: every
//! result is the same bits with or without them.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, need, RawArg};
use cudarc::driver::{CudaSlice, DevicePtr};

/// Whether and how weights are asked into L2 ahead of their use, from
/// `SPECULA_L2_PREFETCH`: `0` never, `last` with the evict-last priority,
/// `chain` one linear ahead, anything else or unset at normal priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2Prefetch {
    /// Never.
    Off,
    /// The projections after the attention, during the attention, at
    /// normal priority (the default).
    Normal,
    /// As [`L2Prefetch::Normal`] with the evict-last priority: the lines
    /// streamed meanwhile (the key-value cache) are evicted first.
    EvictLast,
    /// Every linear of a dense layer has the next linear's weights asked
    /// for while it runs, evict-last, at most half the L2 each (an
    /// experiment for batches whose linears leave DRAM idle: 16-64 rows).
    Chain,
}

/// A byte range of device memory to ask L2 for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2Range {
    /// Device address.
    pub ptr: u64,
    /// Bytes from `ptr`.
    pub bytes: usize,
}

impl L2Range {
    /// The whole of `w`.
    pub fn of<T: GpuElement>(gpu: &Gpu, w: &CudaSlice<T>) -> L2Range {
        L2Range {
            ptr: w.device_ptr(&gpu.stream).0,
            bytes: w.len() * T::BYTES,
        }
    }
}

impl L2Prefetch {
    /// The choice of this process (read once).
    pub fn from_env() -> L2Prefetch {
        static MODE: std::sync::OnceLock<L2Prefetch> = std::sync::OnceLock::new();
        *MODE.get_or_init(|| match std::env::var("SPECULA_L2_PREFETCH").as_deref() {
            Ok("0") => L2Prefetch::Off,
            Ok("last") => L2Prefetch::EvictLast,
            Ok("chain") => L2Prefetch::Chain,
            _ => L2Prefetch::Normal,
        })
    }
}

/// The most ranges one launch asks for.
pub const L2_PREFETCH_RANGES: usize = 4;

/// Lines of 128 bytes each thread asks for, about (the grid's size).
const LINES_PER_THREAD: usize = 8;

/// The bytes asked for of each of `lens` (in order) when all of them
/// together may take at most `cap` bytes: whole ranges while they fit, the
/// first part of the one that reaches the cap, nothing of those after (the
/// rest of the L2 holds what the kernels in between read).
fn prefetch_bytes(lens: &[usize], cap: usize) -> Vec<usize> {
    let mut left = cap;
    lens.iter()
        .map(|&n| {
            let take = n.min(left);
            left -= take;
            take
        })
        .collect()
}

/// Asks L2 for `weights` (at most [`L2_PREFETCH_RANGES`]), their bytes
/// together capped at two thirds of the device's L2 ([`prefetch_bytes`]),
/// on the GPU's launch stream; nothing when `mode` is [`L2Prefetch::Off`].
pub fn l2_prefetch<T: GpuElement>(
    gpu: &Gpu,
    weights: &[&CudaSlice<T>],
    mode: L2Prefetch,
) -> Result<(), GpuError> {
    if mode == L2Prefetch::Off {
        return Ok(());
    }
    let ranges: Vec<L2Range> = weights.iter().map(|w| L2Range::of(gpu, w)).collect();
    let last = mode != L2Prefetch::Normal;
    l2_prefetch_ranges(gpu, &ranges, gpu.l2_bytes / 3 * 2, last)
}

/// Asks L2 for `ranges` (at most [`L2_PREFETCH_RANGES`]), their bytes
/// together capped at `cap` ([`prefetch_bytes`]), with the evict-last
/// priority when `last`, on the GPU's launch stream.
pub fn l2_prefetch_ranges(
    gpu: &Gpu,
    ranges: &[L2Range],
    cap: usize,
    last: bool,
) -> Result<(), GpuError> {
    need(ranges.len() <= L2_PREFETCH_RANGES, || {
        format!(
            "l2_prefetch: {} ranges (at most {L2_PREFETCH_RANGES})",
            ranges.len()
        )
    })?;
    let lens: Vec<usize> = ranges.iter().map(|r| r.bytes).collect();
    let bytes = prefetch_bytes(&lens, cap);
    let lines = bytes.iter().map(|b| b.div_ceil(128)).max().unwrap_or(0);
    if lines == 0 {
        return Ok(());
    }
    let mut args = Vec::with_capacity(2 * L2_PREFETCH_RANGES + 1);
    for (r, &n) in ranges.iter().zip(&bytes) {
        args.extend([
            RawArg::Ptr(if n > 0 { r.ptr } else { 0 }),
            RawArg::U64(n as u64),
        ]);
    }
    for _ in ranges.len()..L2_PREFETCH_RANGES {
        args.extend([RawArg::Ptr(0), RawArg::U64(0)]);
    }
    args.push(RawArg::I32(i32::from(last)));
    let threads = 256;
    let blocks = lines
        .div_ceil(threads * LINES_PER_THREAD)
        .clamp(1, 2 * gpu.sms.max(1));
    // SAFETY: four (pointer, bytes) pairs (null: none) and an int, as
    // l2_prefetch takes them; each range lies inside its allocation.
    unsafe {
        launch(
            gpu,
            "l2_prefetch",
            cfg((blocks as u32, 1), threads as u32, 0),
            &args,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::prefetch_bytes;

    #[test]
    fn ranges_are_asked_for_in_order_until_the_cap() {
        assert_eq!(prefetch_bytes(&[10, 20, 30], 100), vec![10, 20, 30]);
        // The second reaches the cap: its first part, nothing after.
        assert_eq!(prefetch_bytes(&[10, 20, 30], 25), vec![10, 15, 0]);
        assert_eq!(prefetch_bytes(&[40], 25), vec![25]);
        assert_eq!(prefetch_bytes(&[], 25), Vec::<usize>::new());
    }
}
