//! Launches of the row copies (`copy.cu`): the embedding gather, column
//! copies, and the KV compaction after verification.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, name, need, RawArg, THREADS};
use cudarc::driver::CudaSlice;

/// `out[r] = table[ids[r]]` for `ids.len()` rows of `hidden`.
pub fn embedding_gather<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    table: &CudaSlice<T>,
    ids: &CudaSlice<u32>,
    hidden: usize,
) -> Result<(), GpuError> {
    let rows = ids.len();
    need(out.len() >= rows * hidden, || {
        "embedding_gather: out is too small".into()
    })?;
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, table),
        RawArg::slice(gpu, ids),
        RawArg::I32(hidden as i32),
    ];
    let kernel = name::<T>("embedding_gather");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg((rows as u32, 1), THREADS, 0), &args) }
}

/// `dst[r, offset..offset + w] = src[r, ..w]` for `rows` rows; `dst` rows are `dst_w` wide.
pub fn copy_cols<T: GpuElement>(
    gpu: &Gpu,
    dst: &mut CudaSlice<T>,
    src: &CudaSlice<T>,
    rows: usize,
    w: usize,
    dst_w: usize,
    offset: usize,
) -> Result<(), GpuError> {
    need(
        src.len() >= rows * w && dst.len() >= rows * dst_w && offset + w <= dst_w,
        || "copy_cols: sizes disagree".into(),
    )?;
    let args = [
        RawArg::slice(gpu, dst),
        RawArg::slice(gpu, src),
        RawArg::I32(w as i32),
        RawArg::I32(dst_w as i32),
        RawArg::I32(offset as i32),
    ];
    let kernel = name::<T>("copy_cols");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg((rows as u32, 1), THREADS, 0), &args) }
}

/// Compacts accepted KV rows of every layer: for sequence `s`, rows
/// `src[i] -> dst[i]` for `i` in `off[s]..off[s + 1]`, in order. Pools hold
/// `layers` layers of `layer_stride` elements, rows of `width`; without
/// `v_pool`, keys only (a latent-attention cache).
#[allow(clippy::too_many_arguments)]
pub fn kv_commit<T: GpuElement>(
    gpu: &Gpu,
    k_pool: &mut CudaSlice<T>,
    v_pool: Option<&mut CudaSlice<T>>,
    src: &CudaSlice<i32>,
    dst: &CudaSlice<i32>,
    off: &CudaSlice<i32>,
    layers: usize,
    width: usize,
    layer_stride: usize,
) -> Result<(), GpuError> {
    let n_seq = off.len() - 1;
    need(
        k_pool.len() >= layers * layer_stride
            && v_pool.as_ref().is_none_or(|v| v.len() == k_pool.len())
            && src.len() == dst.len(),
        || "kv_commit: sizes disagree".into(),
    )?;
    let args = [
        RawArg::slice(gpu, k_pool),
        RawArg::opt(gpu, v_pool.map(|v| &*v)),
        RawArg::slice(gpu, src),
        RawArg::slice(gpu, dst),
        RawArg::slice(gpu, off),
        RawArg::I32(width as i32),
        RawArg::I64(layer_stride as i64),
    ];
    let grid = cfg((n_seq as u32, layers as u32), THREADS, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &name::<T>("kv_commit"), grid, &args) }
}
