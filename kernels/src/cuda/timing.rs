//! Per-kernel timings on a model shape, with bytes moved and FLOPs, so each
//! kernel reads against the device's measured ceilings.

use super::check::{time_ms, Ceilings};
use super::{
    argmax_rows, argmax_split, attention, embedding_gather, linear, rms_norm_residual, rope,
    silu_mul, top_k_rows, ArgmaxScratch, AttentionScratch, Gpu, GpuError, KeyLists, KvPools,
    LinearLayer, INVARIANT_MAX_ROWS,
};
use crate::cpu::{AttentionShape, Rope};
use cudarc::driver::CudaSlice;
use half::bf16;

/// The sizes of a Llama-style target, enough to size every kernel.
#[derive(Debug, Clone, Copy)]
pub struct ModelShape {
    /// Residual width.
    pub hidden: usize,
    /// MLP inner width.
    pub intermediate: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Head width.
    pub head_dim: usize,
    /// Vocabulary.
    pub vocab: usize,
}

impl ModelShape {
    /// Llama-3.1-8B.
    pub const LLAMA_3_1_8B: ModelShape = ModelShape {
        hidden: 4096,
        intermediate: 14336,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
        vocab: 128_256,
    };
}

/// One kernel's timing.
#[derive(Debug, Clone)]
pub struct KernelTiming {
    /// Kernel (and, for GEMMs, which projection).
    pub kernel: String,
    /// Rows (tokens) in the launch.
    pub rows: usize,
    /// Median time over repeats, microseconds.
    pub time_us: f64,
    /// Bytes read + written (compulsory traffic).
    pub bytes: f64,
    /// Floating-point operations.
    pub flops: f64,
}

impl KernelTiming {
    /// Achieved bandwidth, GB/s.
    pub fn gb_s(&self) -> f64 {
        self.bytes / (self.time_us * 1e-6) / 1e9
    }

    /// Achieved TFLOP/s.
    pub fn tflops(&self) -> f64 {
        self.flops / (self.time_us * 1e-6) / 1e12
    }

    /// The larger of the bandwidth and compute fractions of the ceilings.
    pub fn fraction_of_ceiling(&self, c: &Ceilings) -> f64 {
        (self.gb_s() / c.copy_gb_s).max(self.tflops() / c.gemm_tflops)
    }
}

/// `n` bf16 zeros on the device.
fn zeros(gpu: &Gpu, n: usize) -> Result<CudaSlice<bf16>, GpuError> {
    Ok(gpu.stream.alloc_zeros::<bf16>(n)?)
}

/// `n` bf16 values of 0.01 on the device.
fn ones(gpu: &Gpu, n: usize) -> Result<CudaSlice<bf16>, GpuError> {
    Ok(gpu.stream.clone_htod(&vec![bf16::from_f32(0.01); n])?)
}

/// Times every bf16 kernel of one decoder step of `shape` at `rows` tokens
/// with a KV context of `context` entries per row.
pub fn time_kernels(
    gpu: &Gpu,
    shape: ModelShape,
    rows: usize,
    context: usize,
) -> Result<Vec<KernelTiming>, GpuError> {
    let ModelShape {
        hidden: h,
        intermediate: i,
        heads,
        kv_heads,
        head_dim: hd,
        vocab,
    } = shape;
    let reps = 50;
    let b = 2.0; // bytes per bf16
    let mut out = Vec::new();
    let mut push = |kernel: &str, time_ms: f64, bytes: f64, flops: f64| {
        out.push(KernelTiming {
            kernel: kernel.into(),
            rows,
            time_us: time_ms * 1e3,
            bytes,
            flops,
        })
    };
    let s = &gpu.stream;
    let table = ones(gpu, vocab * h)?;
    let ids = s.clone_htod(
        &(0..rows as u32)
            .map(|r| r * 97 % vocab as u32)
            .collect::<Vec<_>>(),
    )?;
    let mut x = zeros(gpu, rows * h)?;
    let t = time_ms(gpu, reps, || embedding_gather(gpu, &mut x, &table, &ids, h))?;
    push("embedding_gather", t, 2.0 * b * (rows * h) as f64, 0.0);

    let mut resid = ones(gpu, rows * h)?;
    let delta = ones(gpu, rows * h)?;
    let w = ones(gpu, h)?;
    let t = time_ms(gpu, reps, || {
        rms_norm_residual(gpu, &mut x, &mut resid, Some(&delta), &w, 1e-5, h)
    })?;
    push("rms_norm_residual", t, b * (4 * rows * h + h) as f64, 0.0);

    let qkv_width = (heads + 2 * kv_heads) * hd;
    let mut q = zeros(gpu, rows * heads * hd)?;
    let pos = s.clone_htod(&vec![context as i32; rows])?;
    let inv = s.clone_htod(Rope::new(hd, 500000.0, None).inv_freq())?;
    let t = time_ms(gpu, reps, || rope(gpu, &mut q, &pos, &inv, heads, hd))?;
    push("rope (q)", t, 2.0 * b * (rows * heads * hd) as f64, 0.0);

    let gate = ones(gpu, rows * i)?;
    let up = ones(gpu, rows * i)?;
    let mut act = zeros(gpu, rows * i)?;
    let t = time_ms(gpu, reps, || silu_mul(gpu, &mut act, &gate, &up))?;
    push("silu_mul", t, 3.0 * b * (rows * i) as f64, 0.0);

    let ashape = AttentionShape {
        n_heads: heads,
        n_kv_heads: kv_heads,
        head_dim: hd,
    };
    let kp = ones(gpu, rows * context * ashape.kv_width())?;
    let vp = ones(gpu, rows * context * ashape.kv_width())?;
    let lists: Vec<(usize, usize, Vec<usize>)> =
        (0..rows).map(|r| (r * context, context, vec![])).collect();
    let keys = KeyLists::upload(gpu, &lists)?;
    let mut att = zeros(gpu, rows * heads * hd)?;
    let mut scratch = AttentionScratch::new(gpu, &keys, ashape)?;
    let t = time_ms(gpu, reps, || {
        attention(
            gpu,
            &mut att,
            &q,
            KvPools {
                k: &kp,
                v: &vp,
                offset: 0,
            },
            &keys,
            &mut scratch,
            ashape,
            0.088,
        )
    })?;
    let kv_bytes = 2.0 * b * (rows * context * ashape.kv_width()) as f64;
    push(
        &format!("attention (context {context})"),
        t,
        kv_bytes + 2.0 * b * (rows * heads * hd) as f64,
        4.0 * (rows * heads * context * hd) as f64,
    );

    for (name, n, k) in [
        ("linear qkv", qkv_width, h),
        ("linear o", h, heads * hd),
        ("linear gate+up", 2 * i, h),
        ("linear down", h, i),
        ("linear lm_head", vocab, h),
    ] {
        let wmat = ones(gpu, n * k)?;
        let xin = ones(gpu, rows * k)?;
        let mut y = zeros(gpu, rows * n)?;
        let t = time_ms(gpu, reps, || linear(gpu, &mut y, &xin, &wmat, rows, k, n))?;
        let bytes = b * (n * k + rows * k + rows * n) as f64;
        push(name, t, bytes, 2.0 * (rows * n * k) as f64);
        if rows <= INVARIANT_MAX_ROWS {
            let layer = LinearLayer::new(gpu, &wmat, None, k, n);
            let t = time_ms(gpu, reps, || layer.rows(&mut y, &xin, rows))?;
            push(
                &format!("{name} (linear_rows)"),
                t,
                bytes,
                2.0 * (rows * n * k) as f64,
            );
        }
    }

    let logits = ones(gpu, rows * vocab)?;
    let mut am = s.alloc_zeros::<i32>(rows)?;
    let t = time_ms(gpu, reps, || argmax_rows(gpu, &mut am, &logits, vocab))?;
    push("argmax", t, b * (rows * vocab) as f64, 0.0);
    let mut scratch = ArgmaxScratch::new(gpu, rows, vocab)?;
    let t = time_ms(gpu, reps, || {
        argmax_split(gpu, &mut am, &logits, rows, vocab, &mut scratch)
    })?;
    push("argmax (split)", t, b * (rows * vocab) as f64, 0.0);
    let (mut ti, mut tv) = (
        s.alloc_zeros::<i32>(rows * 8)?,
        s.alloc_zeros::<f32>(rows * 8)?,
    );
    let t = time_ms(gpu, reps, || {
        top_k_rows(gpu, &mut ti, &mut tv, &logits, vocab, 8)
    })?;
    push("top_k (k = 8)", t, 8.0 * b * (rows * vocab) as f64, 0.0);
    Ok(out)
}
