//! The launch of the stored-weight placement (`convert.cu`): checkpoint
//! elements (f32, bf16, f16) converted to the model's element type and
//! written into a slot of a fused layout, on the device.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, grid_for, launch, name, need, RawArg, THREADS};
use cudarc::driver::{CudaSlice, DevicePtr};

/// A float type a checkpoint stores weights in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredFloat {
    /// IEEE single.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE half.
    F16,
}

impl StoredFloat {
    /// Bytes per element.
    pub fn bytes(self) -> usize {
        match self {
            StoredFloat::F32 => 4,
            StoredFloat::Bf16 | StoredFloat::F16 => 2,
        }
    }

    /// Whether elements of this type are `T`'s bits as they are.
    pub fn is<T: GpuElement>(self) -> bool {
        matches!(
            (self, T::SUFFIX),
            (StoredFloat::F32, "f32") | (StoredFloat::Bf16, "bf16")
        )
    }

    fn code(self) -> i32 {
        match self {
            StoredFloat::F32 => 0,
            StoredFloat::Bf16 => 1,
            StoredFloat::F16 => 2,
        }
    }
}

/// Where stored rows go in the destination: row `r` of the source lands at
/// element `offset + r * stride` (a fused layout's slot: q|k|v stacked,
/// gate|up interleaved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowPlacement {
    /// Rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Destination elements from one row's start to the next.
    pub stride: usize,
    /// Destination element of the first row's start.
    pub offset: usize,
}

/// Converts `p.rows x p.cols` elements of `dtype` at the start of `src`
/// (bytes) to `T` and writes them where `p` says in `dst`.
pub fn place_rows<T: GpuElement>(
    gpu: &Gpu,
    dst: &mut CudaSlice<T>,
    src: &CudaSlice<u8>,
    dtype: StoredFloat,
    p: RowPlacement,
) -> Result<(), GpuError> {
    let n = p.rows * p.cols;
    if n == 0 {
        return Ok(());
    }
    need(
        src.len() >= n * dtype.bytes()
            && (p.rows == 1 || p.stride >= p.cols)
            && p.cols <= i32::MAX as usize
            && dst.len() >= p.offset + (p.rows - 1) * p.stride + p.cols,
        || "place_rows: sizes disagree".into(),
    )?;
    let (src_ptr, _sync) = src.device_ptr(&gpu.stream);
    let args = [
        RawArg::slice(gpu, dst),
        RawArg::Ptr(src_ptr),
        RawArg::I32(dtype.code()),
        RawArg::I64(p.rows as i64),
        RawArg::I32(p.cols as i32),
        RawArg::I64(p.stride as i64),
        RawArg::I64(p.offset as i64),
    ];
    let grid = cfg((grid_for(n).min(8192), 1), THREADS, 0);
    // SAFETY: the kernel's parameters in order; it reads n elements of src
    // and writes inside dst, both checked above.
    unsafe { launch(gpu, &name::<T>("place_rows"), grid, &args) }
}
