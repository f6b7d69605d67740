//! Decode rows' RoPE, cache append and attention in one launch: the tree
//! kernel with `TREE_ROPE` (`tree_attention.cu`) reads the fused q|k|v
//! projection's rows, rotates each query vector as it loads it, and the
//! block whose split holds a row's own entry rotates the row's key and
//! writes it and the value to the pool first. It replaces
//! [`qkv_rope_append`](super::qkv_rope_append) + [`attention`](super::attention)
//! where every row is a decode row (its key list: its sequence's prefix,
//! then its own new entry; no other row of the launch reads that entry),
//! with the same bits (`rope_pair` in `rope.cu`: every rotation rounds as
//! written). Measured on the 8B shape: the RoPE launch sat on the decode
//! step's path at 3.4 us a layer (results/h200/twice-2026-12-05).

use super::attention::{attention_mode, AttentionMode, AttentionScratch, KeyLists, KvPools};
use super::device::{Gpu, GpuElement, GpuError};
use super::flash_attention::{tree_attention, uses_tree_kernel, TreeRope};
use super::launch::need;
use super::rope::QkvLayout;
use crate::cpu::AttentionShape;
use cudarc::driver::CudaSlice;

/// The inputs [`qkv_rope_append`](super::qkv_rope_append) would have read:
/// the fused projection's rows `[rows, (heads + 2 kv_heads) head_dim]`,
/// each row's position, the inverse frequencies, each row's pool entry.
pub struct DecodeRope<'a, T> {
    /// The fused projection's rows.
    pub qkv: &'a CudaSlice<T>,
    /// Position of each row.
    pub positions: &'a CudaSlice<i32>,
    /// `[head_dim / 2]` inverse frequencies.
    pub inv_freq: &'a CudaSlice<f32>,
    /// Pool entry each row's key and value go to.
    pub entries: &'a CudaSlice<i32>,
}

/// Whether decode rows of `shape` in `T` can take their RoPE and cache
/// append inside the attention ([`decode_attention_with_rope`]): the tree
/// kernel runs them (bf16, head dim 32/64/128, the default attention mode)
/// and `SPECULA_ROPE_IN_ATTENTION` is not `0` (read once: `0` keeps the two
/// launches, for measuring; the same bits). Models with per-head q/k norms
/// (Qwen3) keep the two launches: the caller's part.
pub fn rope_in_attention<T: GpuElement>(shape: AttentionShape) -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let on = *ON.get_or_init(
        || match std::env::var("SPECULA_ROPE_IN_ATTENTION").as_deref() {
            Err(_) | Ok("") | Ok("1") => true,
            Ok("0") => false,
            Ok(other) => {
                eprintln!(
                    "warning: SPECULA_ROPE_IN_ATTENTION={other} is none of 0, 1: the default (1)"
                );
                true
            }
        },
    );
    on && uses_tree_kernel::<T>(shape) && attention_mode() == AttentionMode::Flash
}

/// Attention of decode rows (every row of `keys` a tree row whose last key
/// is its own entry `rope.entries[r]`, one row per sequence) straight from
/// the fused projection: writes each row's rotated key and its value into
/// the layer's pool (`offset` elements into `k_pool` and `v_pool`) and the
/// attention output into `out: [rows, heads, head_dim]`, bit for bit what
/// `qkv_rope_append` then `attention` give. Only where
/// [`rope_in_attention`] holds, on a scratch with no forced kernel.
#[allow(clippy::too_many_arguments)]
pub fn decode_attention_with_rope<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    rope: DecodeRope<'_, T>,
    k_pool: &mut CudaSlice<T>,
    v_pool: &mut CudaSlice<T>,
    offset: usize,
    keys: &KeyLists,
    scratch: &AttentionScratch,
    layout: QkvLayout,
    scale: f32,
) -> Result<(), GpuError> {
    let shape = AttentionShape {
        n_heads: layout.heads,
        n_kv_heads: layout.kv_heads,
        head_dim: layout.head_dim,
    };
    let rows = keys.base.len();
    let width = (layout.heads + 2 * layout.kv_heads) * layout.head_dim;
    need(rope_in_attention::<T>(shape), || {
        "decode attention with RoPE: not for this shape or element type".into()
    })?;
    need(
        !keys.has_causal
            && rope.qkv.len() >= rows * width
            && rope.positions.len() == rows
            && rope.entries.len() == rows
            && rope.inv_freq.len() == layout.head_dim / 2
            && out.len() >= rows * layout.heads * layout.head_dim
            && k_pool.len() == v_pool.len()
            && offset < k_pool.len(),
        || "decode attention with RoPE: sizes disagree (or causal rows)".into(),
    )?;
    let Some(launch) = scratch.tree_launch() else {
        return Err(GpuError::Shape(
            "decode attention with RoPE: the scratch has a forced split-K kernel".into(),
        ));
    };
    need(
        launch.splits * super::ATTENTION_CHUNK >= keys.max_tree_keys,
        || "decode attention with RoPE: scratch made for other key lists".into(),
    )?;
    if !keys.has_tree {
        return Ok(());
    }
    let pools = KvPools {
        k: k_pool,
        v: v_pool,
        offset,
    };
    let tree_rope = TreeRope {
        qkv: rope.qkv,
        positions: rope.positions,
        inv_freq: rope.inv_freq,
        entries: rope.entries,
    };
    // The kernel never reads `q` with TREE_ROPE; the projection's rows
    // stand in for it.
    tree_attention(
        gpu,
        out,
        rope.qkv,
        &pools,
        keys,
        launch.parts,
        launch.splits,
        launch.split_tiles,
        launch.form,
        shape,
        scale,
        Some(&tree_rope),
    )
}
