//! The fused q|k|v projection with RoPE and the KV append as its epilogue
//! (`linear_rope.cu`): one launch for what [`LinearLayer::rows`] and
//! [`super::qkv_rope_append`] do in two, with their bits, for up to
//! [`QKV_ROPE_MAX_ROWS`] rows of heads without per-head norms on the
//! pipelined small-row kernel.

use super::device::{GpuElement, GpuError};
use super::launch::{cfg, launch, need, RawArg};
use super::linear::{LinearForm, LinearLayer};
use super::rope::QkvLayout;
use crate::mma_layout::{pipelined_tiles, MmaLaunch};
use crate::switch::Switch;
use cudarc::driver::CudaSlice;

/// Rows up to which the q|k|v projection takes the RoPE epilogue (one or two
/// token tiles): on an H100 the 8B decode step took 5646-5654 against
/// 5733-5755 us at batch 1, 5860-5869 against 5974-5984 at 8 and 6277-6285
/// against 6367-6369 at 16 with it, but 7101-7105 against 6928-6942 at 32
/// (four tiles; results/h200/resident-2026-12-05/call1).
pub const QKV_ROPE_MAX_ROWS: usize = 16;

/// Whether q|k|v projections take the RoPE epilogue where they can
/// (`SPECULA_QKV_ROPE=0` never: the projection, then `qkv_rope_append`;
/// the same bits; read once).
pub fn qkv_rope_fused() -> bool {
    static ON: Switch<bool> = Switch::on_off("SPECULA_QKV_ROPE", true);
    ON.get()
}

/// Where [`LinearLayer::qkv_rope`] writes and what it reads beside the
/// tokens: `q_out: [rows, heads, head_dim]`, the pools' entries `entry[r]`
/// of the layer starting `pool_offset` elements in, each row's position.
pub struct RopeAppend<'a, T> {
    /// Rotated queries.
    pub q_out: &'a mut CudaSlice<T>,
    /// Key pool (all layers).
    pub k_pool: &'a mut CudaSlice<T>,
    /// Value pool (all layers).
    pub v_pool: &'a mut CudaSlice<T>,
    /// Each row's position.
    pub positions: &'a CudaSlice<i32>,
    /// `[head_dim / 2]` inverse frequencies.
    pub inv_freq: &'a CudaSlice<f32>,
    /// Each row's pool entry.
    pub entry: &'a CudaSlice<i32>,
    /// The layer's first element in the pools.
    pub pool_offset: usize,
    /// Head layout of the projection.
    pub layout: QkvLayout,
}

impl<T: GpuElement> LinearLayer<'_, T> {
    /// Whether [`LinearLayer::qkv_rope`] runs `m` rows of this q|k|v
    /// projection of heads `l`: the form [`LinearLayer::rows`] takes is the
    /// pipelined small-row kernel, the heads split into 16-column tiles of
    /// rotation pairs, and the switch is on.
    pub fn fuses_rope(&self, m: usize, l: QkvLayout) -> bool {
        self.rope_layout(m, l).is_some()
    }

    /// The pipelined layout [`LinearLayer::qkv_rope`] runs `m` rows in, or
    /// `None` where it does not ([`LinearLayer::fuses_rope`]).
    fn rope_layout(&self, m: usize, l: QkvLayout) -> Option<MmaLaunch> {
        let fits = (1..=QKV_ROPE_MAX_ROWS).contains(&m)
            && l.head_dim.is_multiple_of(16)
            && self.n == (l.heads + 2 * l.kv_heads) * l.head_dim
            && qkv_rope_fused();
        match self.form(m) {
            // One column tile a block: the rotation owns its blocks' columns.
            Some(LinearForm::Mma(f)) if f.pipelined && fits => Some(f.with_groups(1)),
            _ => None,
        }
    }

    /// `qkv = x W^T (+ bias)` for `m` rows, then `q_out = rope(q)` and the
    /// pool entries get `rope(k)` and `v`, in one launch (where
    /// [`LinearLayer::fuses_rope`]): the bits of [`LinearLayer::rows`]
    /// followed by [`super::qkv_rope_append`] without head norms.
    pub fn qkv_rope(
        self,
        x: &CudaSlice<T>,
        m: usize,
        out: RopeAppend<'_, T>,
    ) -> Result<(), GpuError> {
        let l = out.layout;
        let Some(layout) = self.rope_layout(m, l) else {
            return Err(GpuError::Shape(format!(
                "qkv_rope: {m} rows of ({} x {}) with {l:?} do not run the pipelined kernel",
                self.n, self.k
            )));
        };
        let tiles = pipelined_tiles(m).unwrap_or(0);
        let kvw = l.kv_heads * l.head_dim;
        need(
            x.len() >= m * self.k
                && self.w.len() == self.n * self.k
                && self.bias.is_none_or(|b| b.len() == self.n)
                && out.positions.len() == m
                && out.entry.len() == m
                && out.q_out.len() >= m * l.heads * l.head_dim
                && out.inv_freq.len() == l.head_dim / 2
                && out.k_pool.len() == out.v_pool.len()
                && out.k_pool.len() >= out.pool_offset + kvw,
            || {
                format!(
                    "qkv_rope: unsupported shape (m {m}, k {}, n {}, {l:?})",
                    self.k, self.n
                )
            },
        )?;
        let parts = layout.parts;
        let args = [
            RawArg::slice(self.gpu, out.q_out),
            RawArg::slice(self.gpu, out.k_pool),
            RawArg::slice(self.gpu, out.v_pool),
            RawArg::slice(self.gpu, x),
            RawArg::slice(self.gpu, self.w),
            RawArg::opt(self.gpu, self.bias),
            RawArg::slice(self.gpu, out.positions),
            RawArg::slice(self.gpu, out.inv_freq),
            RawArg::slice(self.gpu, out.entry),
            RawArg::I64(out.pool_offset as i64),
            RawArg::I32(m as i32),
            RawArg::I32(self.k as i32),
            RawArg::I32(parts as i32),
            RawArg::I32(l.heads as i32),
            RawArg::I32(l.kv_heads as i32),
            RawArg::I32(l.head_dim as i32),
        ];
        let smem = if parts > 1 {
            parts * tiles * 4 * 32 * 4
        } else {
            0
        };
        let kernel = format!("linear_qkv_rope_tile{tiles}_bf16");
        let cfg = cfg(((self.n / 16) as u32, 1), (32 * parts) as u32, smem as u32);
        // SAFETY: the kernel's parameters in its order; sizes checked above.
        unsafe { launch(self.gpu, &kernel, cfg, &args) }
    }
}
