//! `--wgmma-bits` and `--wgmma-timing`: the warpgroup-mma questions, each
//! run alone (tables on stdout, CSV into the output folder).

use crate::save;
use specula_kernels::cuda::check::measure_ceilings;
use specula_kernels::cuda::timing::ModelShape;
use specula_kernels::cuda::wg_timing::time_wg_linear;
use specula_kernels::cuda::wgmma_bits::{wgmma_bits, LAYOUT_TOLERANCE};
use specula_kernels::cuda::Gpu;
use std::process::ExitCode;

/// `--wgmma-bits`: the table on stdout, wgmma_bits.csv in `out`; exit 1 when
/// an output is off by more than a wrong operand layout would leave.
pub(crate) fn wgmma_report(gpu: &Gpu, seed: u64, out: Option<&std::path::Path>) -> ExitCode {
    let cases = match wgmma_bits(gpu, seed) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let mut csv = String::from(
        "k,tokens,accumulator,max_rel_err,differ_from_mma,differ_from_n8,outputs,seed\n",
    );
    println!("wgmma.m64nNk16 against mma.m16n8k16 chains, seed {seed}:");
    for c in &cases {
        let acc = if c.random_c { "random" } else { "zero" };
        let n8 = c.differ_from_n8.map_or(String::new(), |d| d.to_string());
        println!(
            "k {:>4} N {:>2} C {:<6}: max rel err {:.2e}, != mma.sync {:>4} of {}, tokens 0-7 != N 8: {}",
            c.k, c.n, acc, c.max_rel_err, c.differ_from_mma, c.outputs, if n8.is_empty() { "-" } else { &n8 }
        );
        csv.push_str(&format!(
            "{},{},{acc},{:e},{},{n8},{},{seed}\n",
            c.k, c.n, c.max_rel_err, c.differ_from_mma, c.outputs
        ));
    }
    let worst = cases.iter().map(|c| c.max_rel_err).fold(0.0, f64::max);
    let to_mma: usize = cases.iter().map(|c| c.differ_from_mma).sum();
    let to_n8: usize = cases.iter().filter_map(|c| c.differ_from_n8).sum();
    let total: usize = cases.iter().map(|c| c.outputs).sum();
    println!(
        "operand layout: {} (worst relative error {worst:.2e})",
        if worst < LAYOUT_TOLERANCE {
            "right"
        } else {
            "WRONG"
        }
    );
    println!(
        "wgmma bits = mma.sync bits: {} ({to_mma} of {total} outputs differ)",
        if to_mma == 0 { "yes" } else { "no" }
    );
    println!(
        "wgmma bits independent of N: {} ({to_n8} token outputs differ)",
        if to_n8 == 0 { "yes" } else { "no" }
    );
    if let Err(code) = save(out, "wgmma_bits.csv", &csv) {
        return code;
    }
    if worst < LAYOUT_TOLERANCE {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--wgmma-timing`: the table on stdout, wgmma_timing.csv in `out`; exit 1
/// when a wgmma layout's bits differ from the engine's form's.
/// `only`: the `--only=` cases (projection and rows), every case if empty.
pub(crate) fn wgmma_timing_report(
    gpu: &Gpu,
    out: Option<&std::path::Path>,
    only: &[(String, usize)],
) -> ExitCode {
    let mut rows = vec![16, 32, 48, 64, 96, 128, 192, 384];
    if !only.is_empty() {
        rows = only.iter().map(|(_, r)| *r).collect();
        rows.sort_unstable();
        rows.dedup();
    }
    let keep = |p: &str, m: usize| only.is_empty() || only.iter().any(|(q, r)| q == p && *r == m);
    let run = measure_ceilings(gpu)
        .and_then(|c| time_wg_linear(gpu, ModelShape::LLAMA_3_1_8B, &rows, keep).map(|t| (c, t)));
    let (ceil, timings) = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "wgmma linear (every layout) vs the engine's form, Llama-3.1-8B shapes, bf16, cold weights: median of 21 launches alone, and per launch of 21 back to back (copy {:.0} GB/s):",
        ceil.copy_gb_s
    );
    let mut csv =
        String::from("projection,n,k,rows,form,chosen,time_us,bytes,fraction_of_copy,differ,stream_us,stream_fraction_of_copy\n");
    let frac = |us: f64, bytes: f64| bytes / (us * 1e-6) / 1e9 / ceil.copy_gb_s;
    let mut i = 0;
    while i < timings.len() {
        // One line per (projection, rows): the engine, the fastest layout, the chosen one.
        let j = (i + 1..timings.len())
            .find(|&j| timings[j].form == "engine")
            .unwrap_or(timings.len());
        let group = &timings[i..j];
        let e = &group[0];
        let best = group[1..]
            .iter()
            .min_by(|a, b| a.time_us.total_cmp(&b.time_us));
        let chosen = group.iter().find(|t| t.chosen);
        let show = |t: Option<&specula_kernels::cuda::wg_timing::WgTiming>| {
            t.map_or("-".to_string(), |t| {
                format!(
                    "{} {:.1} us ({:.0}%; {:.1} in a stream)",
                    t.form,
                    t.time_us,
                    frac(t.time_us, t.bytes) * 100.0,
                    t.stream_us
                )
            })
        };
        println!(
            "{:<13} rows {:>3}: engine {:>7.1} us ({:>3.0}%; {:.1} in a stream) | best {} | chosen {}",
            e.projection,
            e.rows,
            e.time_us,
            frac(e.time_us, e.bytes) * 100.0,
            e.stream_us,
            show(best),
            show(chosen)
        );
        i = j;
    }
    for t in &timings {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{:.2},{:.0},{:.4},{},{:.2},{:.4}\n",
            t.projection,
            t.n,
            t.k,
            t.rows,
            t.form,
            t.chosen,
            t.time_us,
            t.bytes,
            frac(t.time_us, t.bytes),
            t.differ,
            t.stream_us,
            frac(t.stream_us, t.bytes),
        ));
    }
    if let Err(code) = save(out, "wgmma_timing.csv", &csv) {
        return code;
    }
    let differ: usize = timings.iter().map(|t| t.differ).sum();
    if differ == 0 {
        println!("every wgmma layout gave the engine's bits");
        ExitCode::SUCCESS
    } else {
        println!("{differ} outputs of the wgmma layouts differ from the engine's bits");
        ExitCode::from(1)
    }
}
