//! Launches of the rotary position embeddings (`rope.cu`): on their own, and
//! fused with the q/k/v split of the fused projection and the KV append.

use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{cfg, launch, name, need, RawArg, THREADS};
use cudarc::driver::CudaSlice;

/// Rotates `x: [rows, heads, head_dim]` to `positions[r]` with the given inverse frequencies.
pub fn rope<T: GpuElement>(
    gpu: &Gpu,
    x: &mut CudaSlice<T>,
    positions: &CudaSlice<i32>,
    inv_freq: &CudaSlice<f32>,
    heads: usize,
    head_dim: usize,
) -> Result<(), GpuError> {
    let rows = positions.len();
    need(
        x.len() == rows * heads * head_dim && inv_freq.len() == head_dim / 2,
        || "rope: sizes disagree".into(),
    )?;
    let args = [
        RawArg::slice(gpu, x),
        RawArg::slice(gpu, positions),
        RawArg::slice(gpu, inv_freq),
        RawArg::I32(heads as i32),
        RawArg::I32(head_dim as i32),
    ];
    let kernel = name::<T>("rope");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg((rows as u32, 1), THREADS, 0), &args) }
}

/// Head layout of a fused q|k|v projection.
#[derive(Debug, Clone, Copy)]
pub struct QkvLayout {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
}

/// Per-head RMSNorm weights applied to q and k before RoPE (Qwen3).
#[derive(Clone, Copy)]
pub struct HeadNorm<'a, T> {
    /// `[head_dim]` weight of every q head.
    pub q: &'a CudaSlice<T>,
    /// `[head_dim]` weight of every k head.
    pub k: &'a CudaSlice<T>,
    /// Epsilon under the square root.
    pub eps: f32,
}

/// From `qkv: [rows, (heads + 2 kv_heads) head_dim]`: `q_out = rope(q)`, and
/// pool entry `entry[r]` (of the layer starting `pool_offset` elements into
/// the pools) gets `rope(k)` and `v`; with `head_norm`, each q and k head is
/// RMS-normalised first.
#[allow(clippy::too_many_arguments)]
pub fn qkv_rope_append<T: GpuElement>(
    gpu: &Gpu,
    q_out: &mut CudaSlice<T>,
    k_pool: &mut CudaSlice<T>,
    v_pool: &mut CudaSlice<T>,
    qkv: &CudaSlice<T>,
    positions: &CudaSlice<i32>,
    inv_freq: &CudaSlice<f32>,
    entry: &CudaSlice<i32>,
    pool_offset: usize,
    l: QkvLayout,
    head_norm: Option<HeadNorm<'_, T>>,
) -> Result<(), GpuError> {
    let rows = positions.len();
    let width = (l.heads + 2 * l.kv_heads) * l.head_dim;
    need(
        qkv.len() >= rows * width
            && q_out.len() >= rows * l.heads * l.head_dim
            && entry.len() == rows
            && inv_freq.len() == l.head_dim / 2
            && k_pool.len() == v_pool.len()
            && head_norm.is_none_or(|n| n.q.len() == l.head_dim && n.k.len() == l.head_dim),
        || "qkv_rope_append: sizes disagree".into(),
    )?;
    let args = [
        RawArg::slice(gpu, q_out),
        RawArg::slice(gpu, k_pool),
        RawArg::slice(gpu, v_pool),
        RawArg::slice(gpu, qkv),
        RawArg::slice(gpu, positions),
        RawArg::slice(gpu, inv_freq),
        RawArg::slice(gpu, entry),
        RawArg::I64(pool_offset as i64),
        RawArg::I32(l.heads as i32),
        RawArg::I32(l.kv_heads as i32),
        RawArg::I32(l.head_dim as i32),
        RawArg::opt(gpu, head_norm.map(|n| n.q)),
        RawArg::opt(gpu, head_norm.map(|n| n.k)),
        RawArg::F32(head_norm.map_or(0.0, |n| n.eps)),
    ];
    let blocks = (rows as u32, (l.heads + l.kv_heads + 1) as u32);
    let kernel = name::<T>("qkv_rope_append");
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &kernel, cfg(blocks, 64, 0), &args) }
}
