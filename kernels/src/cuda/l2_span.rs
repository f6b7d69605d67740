//! Weights a kernel asks L2 for ahead of the kernel that reads them, while
//! DRAM would otherwise idle (`prefetch_l2_shares` in `prelude.cu`): the
//! launch carries each span's address and bytes.

use super::device::{Gpu, GpuError};
use super::launch::{need, RawArg};
use cudarc::driver::{CudaSlice, DevicePtr};

/// Elements `start..start + len` of a device buffer, asked of L2 ahead of
/// the kernel that reads them.
#[derive(Clone, Copy)]
pub struct L2Span<'a, T> {
    /// The buffer.
    pub buf: &'a CudaSlice<T>,
    /// The span's first element.
    pub start: usize,
    /// Its elements.
    pub len: usize,
}

/// Spans a launch asks L2 for at most.
pub const L2_SPANS: usize = 2;

/// The launch parameters of up to [`L2_SPANS`] spans: each one's address
/// and bytes (null and 0 for a span not given). A span must lie in its
/// buffer, start and end on 16-byte units (bulk prefetches) and hold less
/// than 4 GiB.
pub(crate) fn l2_span_args<T>(gpu: &Gpu, spans: &[L2Span<'_, T>]) -> Result<Vec<RawArg>, GpuError> {
    need(spans.len() <= L2_SPANS, || {
        format!(
            "{} spans asked of L2 ahead: at most {L2_SPANS}",
            spans.len()
        )
    })?;
    let size = std::mem::size_of::<T>();
    let mut args = Vec::with_capacity(2 * L2_SPANS);
    for s in spans {
        let (begin, bytes) = (s.start * size, s.len * size);
        need(
            s.start + s.len <= s.buf.len()
                && begin.is_multiple_of(16)
                && bytes.is_multiple_of(16)
                && bytes < 1 << 32,
            || {
                format!(
                    "span {}..{} of {} elements asked of L2 ahead: not 16-byte units inside the buffer",
                    s.start,
                    s.start + s.len,
                    s.buf.len()
                )
            },
        )?;
        let (p, _sync) = s.buf.device_ptr(&gpu.stream);
        args.push(RawArg::Ptr(p + begin as u64));
        args.push(RawArg::I64(bytes as i64));
    }
    for _ in spans.len()..L2_SPANS {
        args.push(RawArg::Ptr(0));
        args.push(RawArg::I64(0));
    }
    Ok(args)
}
