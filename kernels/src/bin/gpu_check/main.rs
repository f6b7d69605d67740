//! `specula-gpu-check [OUT_DIR] [--checks-only] [--attention-timing]`: every
//! CUDA kernel against its CPU reference on fresh random inputs, the device
//! ceilings, and per-kernel timings of the Llama-3.1-8B shape (not with
//! `--checks-only`; the long-context attention timings also with
//! `--attention-timing`); CSV into OUT_DIR, a table on stdout. Exit 1 on any
//! failure. `--wgmma-bits` alone: whether warpgroup mma gives the small-row
//! linear's bits (`wgmma_bits.rs`; exit 1 if its outputs are wrong, whatever
//! the bits say). `--wgmma-timing` alone: the warpgroup-mma linear in every
//! layout against the engine's other forms at 16-384 rows (`wg_timing.rs`;
//! exit 1 if a layout's bits differ from theirs). `--mla-timing` alone: the
//! latent attention by itself at long contexts in each form and split rule
//! (`mla_timing.rs`). `--compile-only OUT_DIR
//! [--arch=sm_90a]`, no GPU needed: the kernels compiled into the cubin that
//! `SPECULA_KERNEL_CACHE=OUT_DIR` loads (`kernel_cache.rs`).

use mla::mla_timing_report;
use specula_kernels::cuda::attention_timing::time_attention;
use specula_kernels::cuda::check::{measure_ceilings, run_checks};
use specula_kernels::cuda::split_sweep::time_linear_splits;
use specula_kernels::cuda::timing::{time_kernels, ModelShape};
use specula_kernels::cuda::Gpu;
use std::process::ExitCode;
use wgmma::{wgmma_report, wgmma_timing_report};

mod mla;
mod wgmma;

fn main() -> ExitCode {
    // The checks exercise the flash prefill and tree attention kernels (the
    // engine's default: attention::attention_mode) whatever the caller's
    // SPECULA_ATTENTION says.
    std::env::set_var("SPECULA_ATTENTION", "flash");
    // Likewise the tiled linear from its smallest tile (linear::linear_tiles).
    if std::env::var_os("SPECULA_LINEAR_TILES").is_none() {
        std::env::set_var("SPECULA_LINEAR_TILES", "1");
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    const FLAGS: [&str; 6] = [
        "--checks-only",
        "--attention-timing",
        "--wgmma-bits",
        "--wgmma-timing",
        "--mla-timing",
        "--compile-only",
    ];
    let usage = format!(
        "usage: specula-gpu-check [OUT_DIR] [{}] [--arch=sm_90a] [--only=PROJ:ROWS,...]",
        FLAGS.join("] [")
    );
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{usage}\n\nEvery CUDA kernel against its CPU reference on fresh random inputs, the\ndevice ceilings and per-kernel timings (not with --checks-only; the long-context\nattention timings also with --attention-timing); CSV into OUT_DIR. Alone:\n--wgmma-bits (whether warpgroup mma gives the small-row linear's bits) or\n--wgmma-timing (the wgmma linear in every layout against the engine's other\nforms, cold weights; --only=o:64,down:32 times those projections at those rows\nonly) or --mla-timing (the latent attention alone at long contexts, each form\nand split rule). --compile-only OUT_DIR [--arch=sm_90a]: no GPU needed,\nthe kernels compiled by NVRTC into the cubin that SPECULA_KERNEL_CACHE=OUT_DIR\nloads instead of compiling (a minute saved on a fresh machine). Exit 1 on any\nfailure, 2 on bad arguments or no GPU.");
        return ExitCode::SUCCESS;
    }
    let bad: Vec<&String> = args
        .iter()
        .filter(|a| {
            a.starts_with('-')
                && !FLAGS.contains(&a.as_str())
                && !a.starts_with("--arch=")
                && !a.starts_with("--only=")
        })
        .collect();
    let folders = args.iter().filter(|a| !a.starts_with('-')).count();
    if !bad.is_empty() || folders > 1 {
        let what = if bad.is_empty() {
            "more than one OUT_DIR".to_string()
        } else {
            format!("unknown option {}", bad[0])
        };
        eprintln!("error: {what}\n{usage}");
        return ExitCode::from(2);
    }
    let only = match parse_only(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}\n{usage}");
            return ExitCode::from(2);
        }
    };
    let checks_only = args.iter().any(|a| a == "--checks-only");
    let attention_timing = !checks_only || args.iter().any(|a| a == "--attention-timing");
    let out = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(std::path::PathBuf::from);
    if args.iter().any(|a| a == "--compile-only") {
        let target = args
            .iter()
            .find_map(|a| a.strip_prefix("--arch="))
            .unwrap_or("sm_90a");
        return match out {
            Some(dir) => compile_only(&dir, target),
            None => {
                eprintln!("error: --compile-only needs OUT_DIR\n{usage}");
                ExitCode::from(2)
            }
        };
    }
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    println!("device: {} ({}), {}", gpu.name, gpu.arch, gpu.kernels);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    if args.iter().any(|a| a == "--wgmma-bits") {
        return wgmma_report(&gpu, seed, out.as_deref());
    }
    if args.iter().any(|a| a == "--wgmma-timing") {
        return wgmma_timing_report(&gpu, out.as_deref(), &only);
    }
    if args.iter().any(|a| a == "--mla-timing") {
        return mla_timing_report(&gpu, out.as_deref());
    }
    let rows = match run_checks(&gpu, seed) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let mut csv = String::from("kernel,dtype,shape,error,tolerance,pass,seed\n");
    println!(
        "{:<20} {:<5} {:>10} {:>9} {:<5} shape",
        "kernel", "dtype", "error", "tolerance", "pass"
    );
    for r in &rows {
        println!(
            "{:<20} {:<5} {:>10.2e} {:>9.0e} {:<5} {}",
            r.kernel,
            r.dtype,
            r.error,
            r.tolerance,
            r.pass(),
            r.shape
        );
        csv.push_str(&format!(
            "{},{},\"{}\",{:e},{:e},{},{}\n",
            r.kernel,
            r.dtype,
            r.shape,
            r.error,
            r.tolerance,
            r.pass(),
            seed
        ));
    }
    let ceilings = match measure_ceilings(&gpu) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "ceilings: device-to-device copy {:.0} GB/s (read + write), bf16 GEMM 8192^3 {:.0} TFLOP/s, a dependent launch with no work {:.2} us",
        ceilings.copy_gb_s, ceilings.gemm_tflops, ceilings.launch_us
    );
    let mut times = String::from("kernel,rows,time_us,bytes,gb_s,tflops,fraction_of_ceiling\n");
    let timed_rows: &[usize] = if checks_only { &[] } else { &[1, 8, 64] };
    if !checks_only {
        println!("per-kernel timings, Llama-3.1-8B shape, bf16 (median of 50, CUDA events):");
        println!(
            "{:<28} {:>5} {:>10} {:>10} {:>9} {:>8}",
            "kernel", "rows", "time us", "GB/s", "TFLOP/s", "ceiling"
        );
    }
    for &rows in timed_rows {
        let timings = match time_kernels(&gpu, ModelShape::LLAMA_3_1_8B, rows, 1024) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
        for k in &timings {
            let frac = k.fraction_of_ceiling(&ceilings);
            println!(
                "{:<28} {:>5} {:>10.1} {:>10.0} {:>9.1} {:>7.0}%",
                k.kernel,
                k.rows,
                k.time_us,
                k.gb_s(),
                k.tflops(),
                frac * 100.0
            );
            times.push_str(&format!(
                "\"{}\",{},{:.2},{:.0},{:.1},{:.2},{:.3}\n",
                k.kernel,
                k.rows,
                k.time_us,
                k.bytes,
                k.gb_s(),
                k.tflops(),
                frac
            ));
        }
    }
    let split = match (!checks_only)
        .then(|| split_table(&gpu, ceilings.copy_gb_s))
        .transpose()
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let attention = match attention_timing.then(|| attention_table(&gpu)).transpose() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let ceil = format!(
        "measure,value,unit\ncopy_bandwidth,{:.1},GB/s\nbf16_gemm_8192,{:.1},TFLOP/s\ndependent_launch,{:.3},us\n",
        ceilings.copy_gb_s, ceilings.gemm_tflops, ceilings.launch_us
    );
    let mut files = vec![("kernel_checks.csv", csv.as_str()), ("ceilings.csv", &ceil)];
    if let Some(split) = &split {
        files.push(("kernel_times.csv", &times));
        files.push(("linear_split.csv", split));
    }
    if let Some(attention) = &attention {
        files.push(("attention_times.csv", attention));
    }
    for (name, text) in files {
        if let Err(code) = save(out.as_deref(), name, text) {
            return code;
        }
    }
    if rows.iter().all(|r| r.pass()) {
        println!("all {} kernel checks passed", rows.len());
        ExitCode::SUCCESS
    } else {
        println!(
            "{} kernel checks FAILED",
            rows.iter().filter(|r| !r.pass()).count()
        );
        ExitCode::from(1)
    }
}

/// The batch-invariant linear at every k split beside cuBLAS, for each
/// projection of the 8B target and its draft: a table on stdout, CSV back.
fn split_table(gpu: &Gpu, copy_gb_s: f64) -> Result<String, specula_kernels::cuda::GpuError> {
    let rows = [1usize, 4, 8, 16, 32, 48, 64, 128, 256, 512];
    let timings = time_linear_splits(gpu, ModelShape::LLAMA_3_1_8B, &rows)?;
    let mut csv =
        String::from("projection,n,k,rows,method,chosen,time_us,bytes,gb_s,fraction_of_copy\n");
    println!("batch-invariant linear by form (mma/P: tensor cores, k in P slices; tiles/P/BNxBM), bf16, median of 30, us (* = used):");
    let mut line = String::new();
    let mut key = ("", 0);
    for t in &timings {
        if (t.projection, t.rows) != key {
            if !line.is_empty() {
                println!("{line}");
            }
            key = (t.projection, t.rows);
            line = format!("{:<14} rows {:>2}:", t.projection, t.rows);
        }
        let gb_s = t.bytes / (t.time_us * 1e-6) / 1e9;
        let mark = if t.chosen { "*" } else { " " };
        line.push_str(&format!("  {} {:>7.1}{mark}", t.method, t.time_us));
        csv.push_str(&format!(
            "{},{},{},{},{},{},{:.2},{:.0},{:.1},{:.3}\n",
            t.projection,
            t.n,
            t.k,
            t.rows,
            t.method,
            t.chosen,
            t.time_us,
            t.bytes,
            gb_s,
            gb_s / copy_gb_s
        ));
    }
    println!("{line}");
    Ok(csv)
}

/// Decode and 6-token verify attention of the 8B shape at contexts of a
/// bench's short prompt (160 keys) to 32k, 1, 8 and 64 sequences (64 up
/// to 4096 keys), in the tree and split-K kernels: a table on stdout, CSV
/// back.
fn attention_table(gpu: &Gpu) -> Result<String, specula_kernels::cuda::GpuError> {
    let timings = time_attention(
        gpu,
        ModelShape::LLAMA_3_1_8B,
        &[1, 8, 64],
        &[160, 1024, 4096, 8192, 32768],
    )?;
    println!("attention alone, Llama-3.1-8B shape (32/8 heads x 128), bf16, median of 30:");
    println!(
        "{:<8} {:<8} {:>4} {:>7} {:>10} {:>8}",
        "kernel", "case", "seqs", "context", "time us", "KV GB/s"
    );
    let mut csv = String::from("kernel,case,sequences,context,time_us,kv_bytes,kv_gb_s\n");
    for t in &timings {
        println!(
            "{:<8} {:<8} {:>4} {:>7} {:>10.1} {:>8.0}",
            t.kernel,
            t.case,
            t.sequences,
            t.context,
            t.time_us,
            t.gb_s()
        );
        csv.push_str(&format!(
            "{},{},{},{},{:.2},{:.0},{:.1}\n",
            t.kernel,
            t.case,
            t.sequences,
            t.context,
            t.time_us,
            t.kv_bytes,
            t.gb_s()
        ));
    }
    Ok(csv)
}

/// `--compile-only`: the engine's kernels compiled for `target` into the
/// cubin `SPECULA_KERNEL_CACHE=dir` loads; exit 1 when NVRTC fails, 2 when
/// the folder cannot be written.
fn compile_only(dir: &std::path::Path, target: &str) -> ExitCode {
    use specula_kernels::cuda::kernel_cache::{
        cache_path, compile_cubin, compile_options, store_cubin,
    };
    let options = compile_options();
    let t0 = std::time::Instant::now();
    let cubin = match compile_cubin(target, &options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let path = cache_path(dir, specula_kernels::cuda::SOURCE, target, &options);
    if let Err(e) = store_cubin(&path, &cubin) {
        eprintln!("error: {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!(
        "{}: {} bytes for {target} in {:.1} s",
        path.display(),
        cubin.len(),
        t0.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

/// Writes `text` to `dir/name` when an output folder was given; exit 2 with
/// the folder named when it cannot be written.
pub(crate) fn save(dir: Option<&std::path::Path>, name: &str, text: &str) -> Result<(), ExitCode> {
    let Some(dir) = dir else { return Ok(()) };
    std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(dir.join(name), text))
        .map_err(|e| {
            eprintln!("error: {}: {e}", dir.display());
            ExitCode::from(2)
        })
}

/// `--only=PROJ:ROWS[,PROJ:ROWS...]` (for `--wgmma-timing`): the
/// (projection, rows) cases to time; none given, every case.
fn parse_only(args: &[String]) -> Result<Vec<(String, usize)>, String> {
    let Some(list) = args.iter().find_map(|a| a.strip_prefix("--only=")) else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(|case| {
            let (p, r) = case
                .split_once(':')
                .ok_or_else(|| format!("--only: `{case}` is not PROJECTION:ROWS"))?;
            let rows = r
                .parse()
                .map_err(|_| format!("--only: rows `{r}` of `{case}` is not a number"))?;
            Ok((p.to_string(), rows))
        })
        .collect()
}
