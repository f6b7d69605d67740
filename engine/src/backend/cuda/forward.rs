//! The work buffers of a forward and the decoder block both models run
//! (over the batch of `batch.rs`): fused q|k|v, RoPE + KV append, split-K
//! attention over the key lists, o projection, residual + norm, fused
//! gate|up MLP, and the head.

use super::batch::BatchOnDevice;
use super::graph::Step;
use super::kv_pool::KvPool;
use super::profile::OpClock;
use super::weights::{DeviceBlock, DeviceGqa, DeviceLinear, DeviceMlp, DeviceNorm};
use crate::error::Result;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::AttentionShape;
use specula_kernels::cuda::{
    attention, embedding_gather, invariant_linear_rows, qkv_rope_append, rms_norm_residual,
    silu_mul_rows, uses_mma, AttentionScratch, GateUpLayout, Gpu, GpuElement, HeadNorm, KvPools,
    RopeAppend,
};

/// Widths the shared work buffers of a forward need (the widest layer's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScratchSizes {
    /// Fused projection outputs per row (q|k|v, or latent attention's q|kv_a).
    pub(crate) qkv: usize,
    /// Grouped-query attention's query heads and their outputs per row.
    pub(crate) q: usize,
    /// The residual width.
    pub(crate) hidden: usize,
    /// Gated units of the widest dense MLP (or shared experts).
    pub(crate) inner: usize,
    /// The grouped-query attention's heads (for its split scratch).
    pub(crate) shape: AttentionShape,
}

impl ScratchSizes {
    /// The sizes of `block` with residual width `hidden`.
    pub(crate) fn of_block<T>(block: &DeviceBlock<T>, hidden: usize) -> ScratchSizes {
        let l = block.attn.layout;
        ScratchSizes {
            qkv: block.attn.qkv.out_dim,
            q: l.heads * l.head_dim,
            hidden,
            inner: block.mlp.inner,
            shape: AttentionShape {
                n_heads: l.heads,
                n_kv_heads: l.kv_heads,
                head_dim: l.head_dim,
            },
        }
    }
}

/// Work buffers of one forward, sized for its rows.
pub(crate) struct Scratch<T> {
    pub(crate) qkv: CudaSlice<T>,
    pub(crate) q: CudaSlice<T>,
    pub(crate) att: CudaSlice<T>,
    pub(crate) o: CudaSlice<T>,
    pub(crate) gu: CudaSlice<T>,
    pub(crate) act: CudaSlice<T>,
    pub(crate) mlp: CudaSlice<T>,
    pub(crate) normed: CudaSlice<T>,
    pub(crate) attn: AttentionScratch,
}

impl<T: GpuElement> Scratch<T> {
    /// Buffers for `b`'s rows of layers of `sizes`.
    pub(crate) fn new(gpu: &Gpu, b: &BatchOnDevice, sizes: ScratchSizes) -> Result<Scratch<T>> {
        let rows = b.rows;
        let s = &gpu.stream;
        let ScratchSizes {
            qkv,
            q,
            hidden,
            inner,
            shape,
        } = sizes;
        // Every buffer is written before it is read: no zeroing.
        unsafe {
            Ok(Scratch {
                qkv: s.alloc(rows * qkv)?,
                q: s.alloc(rows * q)?,
                att: s.alloc(rows * q)?,
                o: s.alloc(rows * hidden)?,
                gu: s.alloc(rows * 2 * inner)?,
                act: s.alloc(rows * inner)?,
                mlp: s.alloc(rows * hidden)?,
                normed: s.alloc(rows * hidden)?,
                attn: AttentionScratch::new(gpu, &b.keys, shape)?,
            })
        }
    }
}

/// Runs attention and MLP of one block on `input` (`[rows, block input]`):
/// `x += attention`, then `scratch.mlp = mlp(post_norm(x))` (not yet added
/// to `x`: the next norm fuses that add).
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_forward<T: GpuElement>(
    gpu: &Gpu,
    block: &DeviceBlock<T>,
    x: &mut CudaSlice<T>,
    input: &CudaSlice<T>,
    b: &BatchOnDevice,
    pool: &mut KvPool<T>,
    layer: usize,
    inv_freq: &CudaSlice<f32>,
    sc: &mut Scratch<T>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    gqa_attention(gpu, &block.attn, input, b, pool, layer, inv_freq, sc, clock)?;
    post_attention_norm(gpu, &block.post_norm, x, sc, clock)?;
    dense_mlp(gpu, &block.mlp, b.rows, sc, clock)
}

/// Grouped-query attention of `input` into `sc.o` (`[rows, hidden]`):
/// fused q|k|v, RoPE + KV append into the layer's pool, split-K attention
/// over the key lists, o projection.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gqa_attention<T: GpuElement>(
    gpu: &Gpu,
    attn: &DeviceGqa<T>,
    input: &CudaSlice<T>,
    b: &BatchOnDevice,
    pool: &mut KvPool<T>,
    layer: usize,
    inv_freq: &CudaSlice<f32>,
    sc: &mut Scratch<T>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    let rows = b.rows;
    let l = attn.layout;
    let offset = pool.layer_offset(layer);
    let projection = attn.qkv.on(gpu);
    if attn.head_norm.is_none() && projection.fuses_rope(rows, l) {
        // The projection with RoPE and the append as its epilogue: one launch.
        let out = RopeAppend {
            q_out: &mut sc.q,
            k_pool: &mut pool.k,
            v_pool: &mut pool.v,
            positions: &b.positions,
            inv_freq,
            entry: &b.entries,
            pool_offset: offset,
            layout: l,
        };
        projection.qkv_rope(input, rows, out)?;
        clock.mark(gpu, "linear qkv + rope + append");
    } else {
        // The projection, then RoPE and the append as a second launch (per-head
        // norms, rows past QKV_ROPE_MAX_ROWS, or the switch off).
        attn.qkv.forward(gpu, &mut sc.qkv, input, rows)?;
        clock.mark(gpu, "linear qkv");
        qkv_rope_append(
            gpu,
            &mut sc.q,
            &mut pool.k,
            &mut pool.v,
            &sc.qkv,
            &b.positions,
            inv_freq,
            &b.entries,
            offset,
            l,
            attn.head_norm.as_ref().map(|(q, k)| HeadNorm {
                q: &q.w,
                k: &k.w,
                eps: q.eps,
            }),
        )?;
        clock.mark(gpu, "qkv_rope_append");
    }
    attend_and_project(gpu, attn, b, pool, offset, sc, clock)
}

/// Attention of the rotated queries over the pools' key lists into `sc.att`,
/// then the o projection into `sc.o`.
fn attend_and_project<T: GpuElement>(
    gpu: &Gpu,
    attn: &DeviceGqa<T>,
    b: &BatchOnDevice,
    pool: &KvPool<T>,
    offset: usize,
    sc: &mut Scratch<T>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    let l = attn.layout;
    let shape = AttentionShape {
        n_heads: l.heads,
        n_kv_heads: l.kv_heads,
        head_dim: l.head_dim,
    };
    let pools = KvPools {
        k: &pool.k,
        v: &pool.v,
        offset,
    };
    let scale = 1.0 / (l.head_dim as f32).sqrt();
    attention(
        gpu,
        &mut sc.att,
        &sc.q,
        pools,
        &b.keys,
        &mut sc.attn,
        shape,
        scale,
    )?;
    clock.mark(gpu, "attention");
    attn.o.forward(gpu, &mut sc.o, &sc.att, b.rows)?;
    clock.mark(gpu, "linear o");
    Ok(())
}

/// `x += sc.o` (the attention output), then `sc.normed = post_norm(x)`.
pub(crate) fn post_attention_norm<T: GpuElement>(
    gpu: &Gpu,
    post_norm: &DeviceNorm<T>,
    x: &mut CudaSlice<T>,
    sc: &mut Scratch<T>,
    clock: &mut OpClock,
) -> Result<()> {
    let hidden = post_norm.w.len();
    rms_norm_residual(
        gpu,
        &mut sc.normed,
        x,
        Some(&sc.o),
        &post_norm.w,
        post_norm.eps,
        hidden,
    )?;
    clock.mark(gpu, "rms_norm_residual");
    Ok(())
}

/// The gated MLP of `sc.normed` into `out` (`sc.mlp` for a layer's MLP).
pub(crate) fn dense_mlp<T: GpuElement>(
    gpu: &Gpu,
    mlp: &DeviceMlp<T>,
    rows: usize,
    sc: &mut Scratch<T>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    mlp_into(gpu, mlp, rows, sc, None, clock)
}

/// The gated MLP of `sc.normed` into `out`, or `sc.mlp` when `out` is none.
pub(crate) fn mlp_into<T: GpuElement>(
    gpu: &Gpu,
    mlp: &DeviceMlp<T>,
    rows: usize,
    sc: &mut Scratch<T>,
    out: Option<&mut CudaSlice<T>>,
    clock: &mut OpClock,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    // gate|up rows are interleaved: SiLU-and-multiply runs in the projection's
    // epilogue on the batch-invariant path (except the FMA form at one row,
    // where one column per warp reads faster) and after it on the cuBLAS
    // path. Both give the same bits.
    let gu = &mlp.gate_up;
    if rows <= invariant_linear_rows() && (rows >= 2 || uses_mma::<T>(gpu, gu.in_dim)) {
        gu.on(gpu).swiglu(&mut sc.act, &sc.normed, rows)?;
        clock.mark(gpu, "linear gate_up + silu");
    } else {
        gu.forward(gpu, &mut sc.gu, &sc.normed, rows)?;
        silu_mul_rows(
            gpu,
            &mut sc.act,
            &sc.gu,
            rows,
            mlp.inner,
            GateUpLayout::Interleaved,
        )?;
        clock.mark(gpu, "linear gate_up + silu");
    }
    let out = match out {
        Some(o) => o,
        None => &mut sc.mlp,
    };
    mlp.down.forward(gpu, out, &sc.act, rows)?;
    clock.mark(gpu, "linear down");
    Ok(())
}

/// A model's head over `st`: `x += mlp` (the last block's output), the
/// final RMSNorm of every row into `norm_out`, the batch's logit rows
/// gathered into `last`, and the LM head over them into `logits`.
pub(crate) fn head_forward<T: GpuElement, B>(
    gpu: &Gpu,
    norm: &DeviceNorm<T>,
    lm_head: &DeviceLinear<T>,
    st: &mut Step<T, B>,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    let h = norm.w.len();
    let normed = &mut st.norm_out;
    rms_norm_residual(
        gpu,
        normed,
        &mut st.x,
        Some(&st.sc.mlp),
        &norm.w,
        norm.eps,
        h,
    )?;
    logits_forward(gpu, lm_head, st)
}

/// The batch's logit rows of `st.norm_out` (the final norm's output)
/// gathered into `st.last`, and the LM head over them into `st.logits`.
pub(crate) fn logits_forward<T: GpuElement, B>(
    gpu: &Gpu,
    lm_head: &DeviceLinear<T>,
    st: &mut Step<T, B>,
) -> Result<()>
where
    CudaBlas: Gemm<T>,
{
    let h = lm_head.in_dim;
    embedding_gather(gpu, &mut st.last, &st.norm_out, &st.batch.logit_rows, h)?;
    lm_head.forward(gpu, &mut st.logits, &st.last, st.batch.n_logits.max(1))
}
