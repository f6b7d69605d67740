//! Times the batch-invariant linear for a model's projections in each form
//! (FMA, tensor cores at every k split) beside cuBLAS, so the split rule
//! ([`super::linear::mma_k_parts`]) is read off measurements rather than guessed.

use super::check::time_ms;
use super::timing::ModelShape;
use super::{fill_uniform, linear, Gpu, GpuError, LinearLayer, MmaLaunch};
use crate::mma_layout::{mma_k_parts, MMA_PIPELINED_MAX_ROWS};
use crate::tile_layout::{MmaForm, TileLaunch, TILE_SHAPES};
use cudarc::driver::CudaSlice;
use half::bf16;

/// One projection at one row count and one way of computing it.
#[derive(Debug, Clone)]
pub struct SplitTiming {
    /// Projection name (`qkv`, `o`, ..., `draft fc`).
    pub projection: &'static str,
    /// Output columns.
    pub n: usize,
    /// Reduction width.
    pub k: usize,
    /// Rows (tokens).
    pub rows: usize,
    /// `cublas`, `fma`, `mma/P/C/G` (tensor cores: k in P slices, C
    /// chunks in flight, G tiles per block) or `tiles/P/BNxBM` (the tiled
    /// kernel, blocks of BN columns x BM tokens).
    pub method: String,
    /// Whether [`LinearLayer::rows`] runs this form for the shape.
    pub chosen: bool,
    /// Median time over repeats, microseconds.
    pub time_us: f64,
    /// Compulsory bytes (weights, inputs, outputs).
    pub bytes: f64,
}

/// The projections of one decoder step of `shape` and of an EAGLE-3 draft
/// for it (fc over three captured states, a decoder layer whose attention
/// reads `2 hidden`, and a 32000-token LM head).
pub fn projections(shape: ModelShape) -> Vec<(&'static str, usize, usize)> {
    let h = shape.hidden;
    let qkv = (shape.heads + 2 * shape.kv_heads) * shape.head_dim;
    vec![
        ("qkv", qkv, h),
        ("o", h, shape.heads * shape.head_dim),
        ("gate_up", 2 * shape.intermediate, h),
        ("down", h, shape.intermediate),
        ("lm_head", shape.vocab, h),
        ("draft fc", h, 3 * h),
        ("draft qkv", qkv, 2 * h),
        ("draft lm_head", 32_000, h),
    ]
}

/// Median bf16 times of every projection of `shape` at each of `rows`, in
/// every form of the small-row linear and cuBLAS.
pub fn time_linear_splits(
    gpu: &Gpu,
    shape: ModelShape,
    rows: &[usize],
) -> Result<Vec<SplitTiming>, GpuError> {
    let reps = 30;
    let mut out = Vec::new();
    for (projection, n, k) in projections(shape) {
        let w = random(gpu, n * k, 1)?;
        let layer = LinearLayer::new(gpu, &w, None, k, n);
        for &m in rows {
            let x = random(gpu, m * k, 2)?;
            let mut y: CudaSlice<bf16> = gpu.stream.alloc_zeros(m * n)?;
            let bytes = 2.0 * (n * k + m * k + m * n) as f64;
            let chosen = MmaForm::for_shape(m, k, n);
            let mut methods = vec![("cublas".to_string(), None)];
            if m <= 64 {
                methods.push(("fma".to_string(), None));
            }
            if m > MMA_PIPELINED_MAX_ROWS {
                let parts = mma_k_parts(k, n);
                for (bn, bm) in TILE_SHAPES {
                    let l = TileLaunch { parts, bn, bm };
                    methods.push((format!("tiles/{parts}/{bn}x{bm}"), Some(MmaForm::Tiles(l))));
                }
            }
            for parts in [1usize, 2, 4, 8] {
                if m > 64 {
                    break;
                }
                for (chunks, groups) in [(8, 1), (4, 8 / parts)] {
                    let l = MmaLaunch {
                        parts,
                        chunks,
                        groups,
                        pipelined: false,
                    };
                    methods.push((
                        format!("mma/{parts}/{chunks}/{groups}"),
                        Some(MmaForm::Small(l)),
                    ));
                }
                if m <= MMA_PIPELINED_MAX_ROWS {
                    let l = MmaLaunch::pipelined(parts);
                    methods.push((format!("mma/{parts}/pipelined"), Some(MmaForm::Small(l))));
                }
            }
            for (method, launch) in methods {
                let t = match launch {
                    None if method == "cublas" => {
                        time_ms(gpu, reps, || linear(gpu, &mut y, &x, &w, m, k, n))?
                    }
                    None => time_ms(gpu, reps, || layer.fma(&y, &x, m, false))?,
                    Some(MmaForm::Small(l)) => {
                        if !k.is_multiple_of(32 * l.parts) {
                            continue;
                        }
                        time_ms(gpu, reps, || layer.mma(&mut y, &x, m, l, false))?
                    }
                    Some(MmaForm::Tiles(l)) => {
                        time_ms(gpu, reps, || layer.tiles(&mut y, &x, m, l, false))?
                    }
                };
                out.push(SplitTiming {
                    projection,
                    n,
                    k,
                    rows: m,
                    chosen: launch == Some(chosen),
                    method,
                    time_us: t * 1e3,
                    bytes,
                });
            }
        }
    }
    Ok(out)
}

/// `len` bf16 values `-0.02 + 0.04 u`, `u` uniform in [-1, 1), made on the device from `seed`.
fn random(gpu: &Gpu, len: usize, seed: u64) -> Result<CudaSlice<bf16>, GpuError> {
    let mut s = gpu.stream.alloc_zeros::<bf16>(len)?;
    fill_uniform(gpu, &mut s, seed, 0.04, -0.02)?;
    Ok(s)
}
