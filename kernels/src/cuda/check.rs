//! The GPU kernels against their CPU references on fresh random inputs, and
//! their timings against the device's measured ceilings.
//!
//! Error measure: the norm-wise relative error `max|gpu - cpu| / max|cpu|`.
//! The bf16 references run on the same bf16-rounded inputs in f32.

use super::device::{Gpu, GpuElement, GpuError, GpuTimer};
use super::ops::*;
use crate::cpu;
use cudarc::driver::CudaSlice;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One kernel's agreement with its CPU reference.
#[derive(Debug, Clone)]
pub struct CheckRow {
    /// Kernel name.
    pub kernel: &'static str,
    /// Element type.
    pub dtype: &'static str,
    /// Problem size, in words.
    pub shape: String,
    /// Norm-wise relative error (0 for exact kernels that matched).
    pub error: f64,
    /// The bound it must stay under (0: must match exactly).
    pub tolerance: f64,
}

/// A recorder of `T`'s check rows into `out`: (kernel, shape, error, tolerance).
pub(crate) fn row_recorder<T: GpuElement>(
    out: &mut Vec<CheckRow>,
) -> impl FnMut(&'static str, String, f64, f64) + '_ {
    move |kernel, shape, error, tolerance| {
        out.push(CheckRow {
            kernel,
            dtype: T::SUFFIX,
            shape,
            error,
            tolerance,
        })
    }
}

impl CheckRow {
    /// Whether it passed.
    pub fn pass(&self) -> bool {
        if self.tolerance == 0.0 {
            self.error == 0.0
        } else {
            self.error < self.tolerance
        }
    }
}

pub(crate) fn random(rng: &mut ChaCha8Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

/// Uploads `v` as `T`; returns the device copy and the values it really holds.
pub(crate) fn upload<T: GpuElement>(
    gpu: &Gpu,
    v: &[f32],
) -> Result<(CudaSlice<T>, Vec<f32>), GpuError> {
    let t: Vec<T> = v.iter().map(|&x| T::from_f32(x)).collect();
    let back = t.iter().map(|x| x.to_f32()).collect();
    Ok((gpu.stream.clone_htod(&t)?, back))
}

pub(crate) fn download<T: GpuElement>(gpu: &Gpu, s: &CudaSlice<T>) -> Result<Vec<f32>, GpuError> {
    Ok(gpu
        .stream
        .clone_dtoh(s)?
        .into_iter()
        .map(|x| x.to_f32())
        .collect())
}

/// `max|a - b| / max|b|`.
pub fn normwise_error(a: &[f32], b: &[f32]) -> f64 {
    let diff = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0.0, f64::max);
    let scale = b.iter().map(|y| (*y as f64).abs()).fold(0.0, f64::max);
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    diff / scale.max(f64::MIN_POSITIVE)
}

pub(crate) fn tolerance<T: GpuElement>() -> f64 {
    if T::BYTES == 2 {
        1e-2
    } else {
        1e-5
    }
}

pub(crate) fn round<T: GpuElement>(v: f32) -> f32 {
    T::from_f32(v).to_f32()
}

/// Every float kernel for element type `T`.
fn check_float_kernels<T: GpuElement>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    rows_out: &mut Vec<CheckRow>,
) -> Result<(), GpuError>
where
    cudarc::cublas::CudaBlas: cudarc::cublas::Gemm<T>,
{
    let mut row = row_recorder::<T>(rows_out);
    let s = &gpu.stream;
    // Embedding gather.
    let (v, h) = (1000, 512);
    let (table, table_h) = upload::<T>(gpu, &random(rng, v * h, 1.0))?;
    let ids: Vec<u32> = (0..37).map(|_| rng.random_range(0..v as u32)).collect();
    let mut out = s.alloc_zeros::<T>(ids.len() * h)?;
    embedding_gather(gpu, &mut out, &table, &s.clone_htod(&ids)?, h)?;
    let want: Vec<f32> = ids
        .iter()
        .flat_map(|&i| table_h[i as usize * h..(i as usize + 1) * h].to_vec())
        .collect();
    row(
        "embedding_gather",
        "37 rows of 512 from 1000".into(),
        normwise_error(&download(gpu, &out)?, &want),
        0.0,
    );

    // RMSNorm with the residual add fused, then without it.
    let (rows, h) = (9, 4096);
    let (mut resid, resid_h) = upload::<T>(gpu, &random(rng, rows * h, 2.0))?;
    let (delta, delta_h) = upload::<T>(gpu, &random(rng, rows * h, 2.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, h, 1.5))?;
    let mut out = s.alloc_zeros::<T>(rows * h)?;
    rms_norm_residual(gpu, &mut out, &mut resid, Some(&delta), &w, 1e-5, h)?;
    let mut sum: Vec<f32> = resid_h
        .iter()
        .zip(&delta_h)
        .map(|(a, b)| round::<T>(a + b))
        .collect();
    let (got_sum, got) = (download(gpu, &resid)?, download(gpu, &out)?);
    row(
        "residual_add",
        format!("{rows} x {h}"),
        normwise_error(&got_sum, &sum),
        tolerance::<T>(),
    );
    cpu::rms_norm(&mut sum, h, &w_h, 1e-5);
    row(
        "rms_norm_residual",
        format!("{rows} x {h}"),
        normwise_error(&got, &sum),
        tolerance::<T>(),
    );

    // RoPE with llama3 scaling at positions up to 8000.
    let (rows, heads, hd) = (9, 8, 128);
    let scaling = cpu::Llama3RopeScaling {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_position_embeddings: 8192,
    };
    let rope = cpu::Rope::new(hd, 500000.0, Some(scaling));
    let (mut x, mut x_h) = upload::<T>(gpu, &random(rng, rows * heads * hd, 1.0))?;
    let pos: Vec<i32> = (0..rows).map(|_| rng.random_range(0..8000)).collect();
    rope_launch(gpu, &mut x, &pos, rope.inv_freq(), heads, hd)?;
    for (r, p) in pos.iter().enumerate() {
        rope.apply(&mut x_h[r * heads * hd..(r + 1) * heads * hd], *p as usize);
    }
    row(
        "rope_llama3",
        format!("{rows} rows x {heads} heads x {hd}"),
        normwise_error(&download(gpu, &x)?, &x_h),
        tolerance::<T>(),
    );

    // SiLU and multiply.
    let n = 14336 * 3;
    let (g, mut g_h) = upload::<T>(gpu, &random(rng, n, 4.0))?;
    let (u, u_h) = upload::<T>(gpu, &random(rng, n, 2.0))?;
    let mut out = s.alloc_zeros::<T>(n)?;
    silu_mul(gpu, &mut out, &g, &u)?;
    cpu::silu_and_mul(&mut g_h, &u_h);
    row(
        "silu_mul",
        format!("{n}"),
        normwise_error(&download(gpu, &out)?, &g_h),
        tolerance::<T>(),
    );

    // Argmax and top-k over a Llama-3 vocabulary.
    let (rows, v) = (7, 128_256);
    let (x, x_h) = upload::<T>(gpu, &random(rng, rows * v, 10.0))?;
    let mut am = s.alloc_zeros::<i32>(rows)?;
    argmax_rows(gpu, &mut am, &x, v)?;
    let got = s.clone_dtoh(&am)?;
    let wrong = (0..rows)
        .filter(|&r| cpu::argmax(&x_h[r * v..(r + 1) * v]) != Some(got[r] as usize))
        .count();
    row("argmax", format!("{rows} x {v}"), wrong as f64, 0.0);
    let k = 8;
    let (mut ti, mut tv) = (
        s.alloc_zeros::<i32>(rows * k)?,
        s.alloc_zeros::<f32>(rows * k)?,
    );
    top_k_rows(gpu, &mut ti, &mut tv, &x, v, k)?;
    let got = s.clone_dtoh(&ti)?;
    let wrong = (0..rows)
        .filter(|&r| {
            cpu::top_k(&x_h[r * v..(r + 1) * v], k)
                .iter()
                .map(|p| p.0 as i32)
                .collect::<Vec<_>>()
                != got[r * k..(r + 1) * k]
        })
        .count();
    row("top_k", format!("{rows} x {v}, k = {k}"), wrong as f64, 0.0);

    // KV commit over 3 layers, 2 sequences.
    let (layers, width, entries) = (3, 1024, 40);
    let stride = entries * width;
    let (mut kp, mut kp_h) = upload::<T>(gpu, &random(rng, layers * stride, 1.0))?;
    let (mut vp, mut vp_h) = upload::<T>(gpu, &random(rng, layers * stride, 1.0))?;
    // Sequence 0 owns rows 0..20 (committed 10), sequence 1 rows 20..40 (committed 25).
    let keeps = [(10usize, vec![10usize, 12, 13, 17]), (25, vec![25, 27, 31])];
    let (mut src, mut dst, mut off) = (Vec::new(), Vec::new(), vec![0i32]);
    for (c, keep) in &keeps {
        for (i, &k) in keep.iter().enumerate() {
            src.push(k as i32);
            dst.push((c + i) as i32);
        }
        off.push(src.len() as i32);
    }
    kv_commit(
        gpu,
        &mut kp,
        &mut vp,
        &s.clone_htod(&src)?,
        &s.clone_htod(&dst)?,
        &s.clone_htod(&off)?,
        layers,
        width,
        stride,
    )?;
    for l in 0..layers {
        for (c, keep) in &keeps {
            cpu::compact_rows(&mut kp_h[l * stride..(l + 1) * stride], width, *c, keep);
            cpu::compact_rows(&mut vp_h[l * stride..(l + 1) * stride], width, *c, keep);
        }
    }
    let err = normwise_error(&download(gpu, &kp)?, &kp_h)
        .max(normwise_error(&download(gpu, &vp)?, &vp_h));
    row(
        "kv_commit",
        format!("{layers} layers, 2 sequences, rows of {width}"),
        err,
        0.0,
    );

    // cuBLAS linear: bf16 GEMM with f32 accumulation, or f32 GEMM.
    let (m, k, n) = (5, 4096, 1024);
    let (x, x_h) = upload::<T>(gpu, &random(rng, m * k, 1.0))?;
    let (w, w_h) = upload::<T>(gpu, &random(rng, n * k, 1.0))?;
    let mut want = vec![0f32; m * n];
    cpu::linear(&x_h, m, k, &w_h, n, None, &mut want);
    let mut y = gpu.stream.alloc_zeros::<T>(m * n)?;
    linear(gpu, &mut y, &x, &w, m, k, n)?;
    let got = download(gpu, &y)?;
    row(
        "linear_cublas",
        format!("{m} x {k} . ({n} x {k})^T"),
        normwise_error(&got, &want),
        tolerance::<T>(),
    );
    Ok(())
}

fn rope_launch<T: GpuElement>(
    gpu: &Gpu,
    x: &mut CudaSlice<T>,
    pos: &[i32],
    inv_freq: &[f32],
    heads: usize,
    hd: usize,
) -> Result<(), GpuError> {
    rope(
        gpu,
        x,
        &gpu.stream.clone_htod(pos)?,
        &gpu.stream.clone_htod(inv_freq)?,
        heads,
        hd,
    )
}

/// Greedy tree verification on many random trees at once.
fn check_verify(gpu: &Gpu, rng: &mut ChaCha8Rng, out: &mut Vec<CheckRow>) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let (mut tokens, mut parents, mut choice, mut off) =
        (Vec::new(), Vec::new(), Vec::new(), vec![0i32]);
    let mut want = Vec::new();
    for _ in 0..64 {
        let n = rng.random_range(0..16usize);
        let p: Vec<i32> = (0..n).map(|i| rng.random_range(-1..i as i32)).collect();
        let t: Vec<u32> = (0..n).map(|_| rng.random_range(0..3)).collect();
        let c: Vec<u32> = (0..=n).map(|_| rng.random_range(0..3)).collect();
        want.push(cpu::greedy_tree_accept(&p, &t, &c));
        tokens.extend(t.iter().map(|&x| x as i32));
        parents.extend(p);
        choice.extend(c.iter().map(|&x| x as i32));
        off.push(tokens.len() as i32);
    }
    if tokens.is_empty() {
        tokens.push(0);
        parents.push(-1);
    }
    let v = verify_greedy_tree(
        gpu,
        &s.clone_htod(&choice)?,
        &s.clone_htod(&tokens)?,
        &s.clone_htod(&parents)?,
        &s.clone_htod(&off)?,
    )?;
    let (acc, len, bonus) = (
        s.clone_dtoh(&v.accepted)?,
        s.clone_dtoh(&v.accept_len)?,
        s.clone_dtoh(&v.bonus)?,
    );
    let deep = want.iter().filter(|w| w.0.len() >= 2).count();
    let wrong = want
        .iter()
        .enumerate()
        .filter(|(i, (path, b))| {
            let o = off[*i] as usize;
            let got: Vec<usize> = acc[o..o + len[*i] as usize]
                .iter()
                .map(|&x| x as usize)
                .collect();
            got != *path || bonus[*i] as u32 != *b
        })
        .count();
    out.push(CheckRow {
        kernel: "verify_greedy_tree",
        dtype: "i32",
        shape: format!("64 random trees, {deep} accepted 2+ deep"),
        error: wrong as f64,
        tolerance: 0.0,
    });
    Ok(())
}

/// Every kernel against its CPU reference, in f32 and bf16.
pub fn run_checks(gpu: &Gpu, seed: u64) -> Result<Vec<CheckRow>, GpuError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows = Vec::new();
    check_float_kernels::<f32>(gpu, &mut rng, &mut rows)?;
    check_float_kernels::<half::bf16>(gpu, &mut rng, &mut rows)?;
    check_verify(gpu, &mut rng, &mut rows)?;
    super::check_attention::check_attention::<f32>(gpu, &mut rng, &mut rows)?;
    super::check_attention::check_attention::<half::bf16>(gpu, &mut rng, &mut rows)?;
    super::check_model::check_model_kernels::<f32>(gpu, &mut rng, &mut rows)?;
    super::check_model::check_model_kernels::<half::bf16>(gpu, &mut rng, &mut rows)?;
    Ok(rows)
}

/// The device's measured ceilings.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    /// Device-to-device copy bandwidth, bytes read + written per second.
    pub copy_gb_s: f64,
    /// bf16 GEMM (cuBLAS, 8192^3) in TFLOP/s.
    pub gemm_tflops: f64,
}

/// Median over `reps` of `f` timed with CUDA events, after 3 warm-ups, in ms.
pub fn time_ms(
    gpu: &Gpu,
    reps: usize,
    mut f: impl FnMut() -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    for _ in 0..3 {
        f()?;
    }
    let timer = GpuTimer::new(gpu)?;
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        timer.start(gpu)?;
        f()?;
        v.push(timer.stop_ms(gpu)? as f64);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Measures the copy bandwidth (1 GiB device-to-device) and a bf16 GEMM.
pub fn measure_ceilings(gpu: &Gpu) -> Result<Ceilings, GpuError> {
    let s = &gpu.stream;
    let n = 1usize << 28; // 2^28 f32 = 1 GiB
    let src = s.alloc_zeros::<f32>(n)?;
    let mut dst = s.alloc_zeros::<f32>(n)?;
    let ms = time_ms(gpu, 10, || Ok(s.memcpy_dtod(&src, &mut dst)?))?;
    let copy_gb_s = 2.0 * (n * 4) as f64 / (ms * 1e-3) / 1e9;
    let d = 8192;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let host: Vec<half::bf16> = (0..d * d)
        .map(|_| half::bf16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    let a = s.clone_htod(&host)?;
    let b = s.clone_htod(&host)?;
    let mut c = s.alloc_zeros::<half::bf16>(d * d)?;
    let ms = time_ms(gpu, 10, || linear(gpu, &mut c, &a, &b, d, d, d))?;
    Ok(Ceilings {
        copy_gb_s,
        gemm_tflops: 2.0 * (d as f64).powi(3) / (ms * 1e-3) / 1e12,
    })
}
