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
/// anything else or unset at normal priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2Prefetch {
    /// Never.
    Off,
    /// At normal priority (the default).
    Normal,
    /// With the evict-last priority: the lines streamed meanwhile (the
    /// key-value cache) are evicted first.
    EvictLast,
}

impl L2Prefetch {
    /// The choice of this process (read once).
    pub fn from_env() -> L2Prefetch {
        static MODE: std::sync::OnceLock<L2Prefetch> = std::sync::OnceLock::new();
        *MODE.get_or_init(|| match std::env::var("SPECULA_L2_PREFETCH").as_deref() {
            Ok("0") => L2Prefetch::Off,
            Ok("last") => L2Prefetch::EvictLast,
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
    need(weights.len() <= L2_PREFETCH_RANGES, || {
        format!(
            "l2_prefetch: {} ranges (at most {L2_PREFETCH_RANGES})",
            weights.len()
        )
    })?;
    if mode == L2Prefetch::Off {
        return Ok(());
    }
    let lens: Vec<usize> = weights.iter().map(|w| w.len() * T::BYTES).collect();
    let bytes = prefetch_bytes(&lens, gpu.l2_bytes / 3 * 2);
    let lines = bytes.iter().map(|b| b.div_ceil(128)).max().unwrap_or(0);
    if lines == 0 {
        return Ok(());
    }
    let mut args = Vec::with_capacity(2 * L2_PREFETCH_RANGES + 1);
    for (w, &n) in weights.iter().zip(&bytes) {
        let p = if n > 0 {
            w.device_ptr(&gpu.stream).0
        } else {
            0
        };
        args.extend([RawArg::Ptr(p), RawArg::U64(n as u64)]);
    }
    for _ in weights.len()..L2_PREFETCH_RANGES {
        args.extend([RawArg::Ptr(0), RawArg::U64(0)]);
    }
    args.push(RawArg::I32(i32::from(mode == L2Prefetch::EvictLast)));
    let threads = 256;
    let blocks = lines
        .div_ceil(threads * LINES_PER_THREAD)
        .clamp(1, 2 * gpu.sms.max(1));
    // SAFETY: four (pointer, bytes) pairs (null: none) and an int, as
    // l2_prefetch takes them; each range lies inside its weight.
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
