//! Times a linear on warpgroup mma (`wgmma_linear.cu`: one warpgroup per 64
//! output columns and all tokens, stages of 64 k through shared memory, k
//! in slices summed by a second pass) against the form the engine runs for
//! the same projection and rows ([`LinearLayer::rows`]), on the Llama-3.1-8B
//! shapes at 32-128 rows, where the engine's linears stream at 27-56% of
//! copy (results/h200/tiles-lab-2026-12-03). Not batch-invariant as it
//! stands (its bits are not the engine's): a speed question first, with
//! its output held against the engine's. `specula-gpu-check --wgmma-timing`.

use super::check::{download, normwise_error, time_ms, tolerance};
use super::launch::cfg;
use super::split_sweep::projections;
use super::timing::ModelShape;
use super::wgmma_bits::module;
use super::{fill_uniform, Gpu, GpuError, LinearLayer};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, PushKernelArg};
use half::bf16;

/// k per shared-memory stage and stages in flight (`WL_BK`, `WL_STAGES`).
const STAGE_K: usize = 64;
const STAGES: usize = 4;

/// One (projection, rows, k slices) timing.
#[derive(Debug, Clone)]
pub struct WgmmaLinearTiming {
    /// `qkv`, `o`, `gate_up` or `down`.
    pub projection: &'static str,
    /// Output columns.
    pub n: usize,
    /// Reduction width.
    pub k: usize,
    /// Rows (tokens).
    pub rows: usize,
    /// Slices of k (blocks per column tile).
    pub parts: usize,
    /// Median time of the wgmma linear and its slice sum, microseconds.
    pub wgmma_us: f64,
    /// Median time of the engine's form for the shape, microseconds.
    pub engine_us: f64,
    /// Compulsory bytes (weights, inputs, outputs).
    pub bytes: f64,
    /// Largest |wgmma - engine| over the largest |engine| output.
    pub max_rel_diff: f64,
}

impl WgmmaLinearTiming {
    /// Whether the output is the engine's up to bf16 rounding (the kernel
    /// checks' bound): both round the same f32 sums, in other orders.
    pub fn output_ok(&self) -> bool {
        self.max_rel_diff <= tolerance::<bf16>()
    }
}

/// The four projections of a decoder layer of `shape` at each of `rows`
/// (at most 128), each with k in 1, 2 and 4 slices.
pub fn time_wgmma_linear(
    gpu: &Gpu,
    shape: ModelShape,
    rows: &[usize],
) -> Result<Vec<WgmmaLinearTiming>, GpuError> {
    let m_mod = module(gpu)?;
    let reduce = m_mod.load_function("wgmma_reduce")?;
    let reps = 30;
    let mut out = Vec::new();
    for (projection, n, k) in projections(shape).into_iter().take(4) {
        let mut w: CudaSlice<bf16> = gpu.stream.alloc_zeros(n * k)?;
        fill_uniform(gpu, &mut w, 1, 0.04, -0.02)?;
        let layer = LinearLayer::new(gpu, &w, None, k, n);
        for &m in rows.iter().filter(|&&m| (1..=128).contains(&m)) {
            let mut x: CudaSlice<bf16> = gpu.stream.alloc_zeros(m * k)?;
            fill_uniform(gpu, &mut x, 2, 0.04, -0.02)?;
            let mut y_engine: CudaSlice<bf16> = gpu.stream.alloc_zeros(m * n)?;
            let engine_ms = time_ms(gpu, reps, || layer.rows(&mut y_engine, &x, m))?;
            let want = download(gpu, &y_engine)?;
            let tokens = if m <= 64 { 64 } else { 128 };
            let f = m_mod.load_function(&format!("wgmma_linear_{tokens}"))?;
            let smem = STAGES * (64 + tokens) * STAGE_K * 2;
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem as i32,
            )?;
            for parts in [1usize, 2, 4] {
                if !k.is_multiple_of(parts * STAGE_K) {
                    continue;
                }
                let mut part: CudaSlice<f32> = gpu.stream.alloc_zeros(parts * m * n)?;
                let mut y: CudaSlice<bf16> = gpu.stream.alloc_zeros(m * n)?;
                let (mi, ki, ni, pi) = (m as i32, k as i32, n as i32, parts as i32);
                let main = cfg((n.div_ceil(64) as u32, parts as u32), 128, smem as u32);
                let sum = cfg(((m * n).div_ceil(256) as u32, 1), 256, 0);
                let ms = time_ms(gpu, reps, || {
                    let mut a = gpu.stream.launch_builder(&f);
                    a.arg(&mut part)
                        .arg(&x)
                        .arg(&w)
                        .arg(&mi)
                        .arg(&ki)
                        .arg(&ni)
                        .arg(&pi);
                    // Safety: (float* part, const bf16* x, const bf16* w, int m,
                    // int k, int n, int parts); part holds parts x m x n, x m x k,
                    // w n x k; k is a multiple of parts x 64.
                    unsafe { a.launch(main) }?;
                    let mut b = gpu.stream.launch_builder(&reduce);
                    b.arg(&mut y).arg(&part).arg(&mi).arg(&ni).arg(&pi);
                    // Safety: (bf16* y, const float* part, int m, int n, int
                    // parts); y holds m x n.
                    unsafe { b.launch(sum) }?;
                    Ok(())
                })?;
                let max_rel_diff = normwise_error(&download(gpu, &y)?, &want);
                out.push(WgmmaLinearTiming {
                    projection,
                    n,
                    k,
                    rows: m,
                    parts,
                    wgmma_us: ms * 1e3,
                    engine_us: engine_ms * 1e3,
                    bytes: 2.0 * (n * k + m * k + m * n) as f64,
                    max_rel_diff,
                });
            }
        }
    }
    Ok(out)
}
