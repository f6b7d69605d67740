//! Can a linear for many rows run on warpgroup mma (`wgmma`, sm_90a) and
//! stay batch-invariant beside the engine's `mma.sync` kernels (issue 18,
//! item 3)? Two questions on fresh random inputs (`wgmma_bits.cu`, compiled
//! on its own for sm_90a): does a chain of `wgmma.m64nNk16` steps give the
//! bits of the same chain of `mma.m16n8k16` steps, and are a token's bits
//! the same for N = 8, 16 and 64 tokens in the instruction? Every output
//! is also held against a double-precision sum, so that a wrong operand
//! layout shows as an error, not as a bit difference.
//! `specula-gpu-check --wgmma-bits` runs it.

use super::device::{Gpu, GpuError};
use super::launch::cfg;
use cudarc::driver::{CudaModule, PushKernelArg};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// Token counts per instruction the check compares (8: the engine's tile).
const TOKENS: [usize; 3] = [8, 16, 64];

/// Weight rows of one warpgroup's instruction.
const ROWS: usize = 64;

/// Relative error (against the sum of the terms' magnitudes) past which an
/// output counts as wrong: a wrong operand layout sums the wrong products
/// (errors of order 1); tensor cores that round a step's sum more coarsely
/// than f32 stay far below it.
pub const LAYOUT_TOLERANCE: f64 = 1e-2;

/// One (k, N, accumulator) case.
#[derive(Debug, Clone)]
pub struct WgmmaCase {
    /// Reduction length.
    pub k: usize,
    /// Tokens in the instruction.
    pub n: usize,
    /// Whether the accumulators started from random values (else zero).
    pub random_c: bool,
    /// Largest relative error of a wgmma output against the double sum.
    pub max_rel_err: f64,
    /// Outputs whose wgmma bits differ from the mma.sync chain's.
    pub differ_from_mma: usize,
    /// For N > 8: outputs of tokens 0-7 whose bits differ from N = 8's.
    pub differ_from_n8: Option<usize>,
    /// Outputs compared.
    pub outputs: usize,
}

/// The source: the prelude (bf16 and its loads) and this check's kernels.
const SOURCE: &str = concat!(include_str!("prelude.cu"), include_str!("wgmma_bits.cu"));

/// Compiles the wgmma kernels for sm_90a (wgmma is in no other target).
pub(crate) fn module(gpu: &Gpu) -> Result<Arc<CudaModule>, GpuError> {
    if gpu.arch != "sm_90" {
        return Err(GpuError::Shape(format!(
            "wgmma needs sm_90a (an H100 or H200); this device is {}",
            gpu.arch
        )));
    }
    let opts = cudarc::nvrtc::CompileOptions {
        arch: Some("sm_90a"),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(SOURCE, opts)
        .map_err(|e| GpuError::Compile(format!("{e:?}")))?;
    Ok(gpu.ctx.load_module(ptx)?)
}

/// A random bf16 (as bits): 7 random mantissa bits, exponent in [-6, 6],
/// either sign, so that products and sums round at many magnitudes.
fn random_bf16(rng: &mut ChaCha8Rng) -> u16 {
    let m = 1.0 + rng.random_range(0..128) as f32 / 128.0;
    let v = m * 2f32.powi(rng.random_range(-6..=6));
    let v = if rng.random::<bool>() { -v } else { v };
    (v.to_bits() >> 16) as u16
}

fn bf16_value(bits: u16) -> f64 {
    f32::from_bits((bits as u32) << 16) as f64
}

/// D [64, n] of kernel `name` on a [64, k], b [n.., k] and c [64, n].
fn run(
    gpu: &Gpu,
    m: &Arc<CudaModule>,
    name: &str,
    (a, b): (
        &cudarc::driver::CudaSlice<u16>,
        &cudarc::driver::CudaSlice<u16>,
    ),
    c: &[f32],
    k: usize,
) -> Result<Vec<f32>, GpuError> {
    let f = m.load_function(name)?;
    let c_dev = gpu.stream.clone_htod(c)?;
    let mut d = gpu.stream.alloc_zeros::<f32>(c.len())?;
    let k = k as i32;
    let mut launch = gpu.stream.launch_builder(&f);
    launch.arg(&mut d).arg(a).arg(b).arg(&c_dev).arg(&k);
    // Safety: the kernel takes (float*, const bf16*, const bf16*, float*,
    // int); it reads 64 rows of a and n rows of b of k values each (both
    // allocated with 64 rows), and c / writes d of 64 x n floats.
    unsafe { launch.launch(cfg((1, 1), 128, 0)) }?;
    Ok(gpu.stream.clone_dtoh(&d)?)
}

/// Runs the check for k in 16..4096, four trials each (zero and random
/// accumulators), seeded by `seed`.
pub fn wgmma_bits(gpu: &Gpu, seed: u64) -> Result<Vec<WgmmaCase>, GpuError> {
    let m = module(gpu)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for k in [16, 32, 256, 4096] {
        for trial in 0..4 {
            let random_c = trial % 2 == 1;
            let ha: Vec<u16> = (0..ROWS * k).map(|_| random_bf16(&mut rng)).collect();
            let hb: Vec<u16> = (0..ROWS * k).map(|_| random_bf16(&mut rng)).collect();
            let c64: Vec<f32> = (0..ROWS * ROWS)
                .map(|_| match random_c {
                    true => bf16_value(random_bf16(&mut rng)) as f32 * 16.0,
                    false => 0.0,
                })
                .collect();
            let (a, b) = (gpu.stream.clone_htod(&ha)?, gpu.stream.clone_htod(&hb)?);
            let mut first: Option<Vec<f32>> = None;
            for n in TOKENS {
                let c: Vec<f32> = (0..ROWS)
                    .flat_map(|r| c64[r * ROWS..r * ROWS + n].iter().copied())
                    .collect();
                let w = run(gpu, &m, &format!("wgmma_bits_wgmma_{n}"), (&a, &b), &c, k)?;
                let s = run(gpu, &m, &format!("wgmma_bits_mma_{n}"), (&a, &b), &c, k)?;
                let mut case = WgmmaCase {
                    k,
                    n,
                    random_c,
                    max_rel_err: 0.0,
                    differ_from_mma: 0,
                    differ_from_n8: first.as_ref().map(|_| 0),
                    outputs: ROWS * n,
                };
                for r in 0..ROWS {
                    for j in 0..n {
                        let o = r * n + j;
                        let (mut sum, mut mag) = (c[o] as f64, (c[o] as f64).abs());
                        for q in 0..k {
                            let p = bf16_value(ha[r * k + q]) * bf16_value(hb[j * k + q]);
                            sum += p;
                            mag += p.abs();
                        }
                        let err = (w[o] as f64 - sum).abs() / if mag > 0.0 { mag } else { 1.0 };
                        // NaN (an unwritten output) counts as the worst.
                        if err.is_nan() || err > case.max_rel_err {
                            case.max_rel_err = if err.is_nan() { f64::INFINITY } else { err };
                        }
                        case.differ_from_mma += usize::from(w[o].to_bits() != s[o].to_bits());
                        if let (Some(f), Some(d)) = (&first, case.differ_from_n8.as_mut()) {
                            if j < 8 {
                                *d += usize::from(w[o].to_bits() != f[r * 8 + j].to_bits());
                            }
                        }
                    }
                }
                if first.is_none() {
                    first = Some(w);
                }
                out.push(case);
            }
        }
    }
    Ok(out)
}
