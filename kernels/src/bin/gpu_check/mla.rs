//! `--mla-timing`: the latent attention alone at long contexts, the FMA
//! form and tensor cores under each split rule (`mla_timing.rs`), for the
//! DeepSeek-V2-Lite / Moonlight latent shape.

use super::save;
use specula_kernels::cuda::mla_timing::time_mla_attention;
use specula_kernels::cuda::{Gpu, MlaShape};
use specula_kernels::mla_layout::MlaSplits;
use std::process::ExitCode;

/// The latent shape of DeepSeek-V2-Lite and Moonlight-16B-A3B.
const V2_LITE: MlaShape = MlaShape {
    heads: 16,
    lora: 512,
    rope: 64,
    nope: 128,
    v_dim: 128,
};

/// Times the V2-Lite latent attention at 1 and 8 sequences and contexts of
/// 512 to 32k keys: a table on stdout, `mla_times.csv` into `out`.
pub(crate) fn mla_timing_report(gpu: &Gpu, out: Option<&std::path::Path>) -> ExitCode {
    let rule = |cap, min_chunks| MlaSplits { cap, min_chunks };
    let rules = [
        MlaSplits::FMA,
        rule(64, 2),
        rule(128, 1),
        rule(128, 2),
        rule(128, 4),
    ];
    let timings = match time_mla_attention(gpu, V2_LITE, &[1, 8], &[512, 2048, 8192, 32768], &rules)
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    println!("latent attention alone with W_UV, V2-Lite shape (16 heads, latent 512 + rope 64), bf16, median of 30:");
    println!(
        "{:<10} {:<8} {:>4} {:>7} {:>10} {:>9}",
        "form", "case", "seqs", "context", "time us", "cache GB/s"
    );
    let mut csv = String::from("form,case,sequences,context,time_us,cache_bytes,cache_gb_s\n");
    for t in &timings {
        println!(
            "{:<10} {:<8} {:>4} {:>7} {:>10.1} {:>9.0}",
            t.form,
            t.case,
            t.sequences,
            t.context,
            t.time_us,
            t.gb_s()
        );
        csv.push_str(&format!(
            "{},{},{},{},{:.2},{:.0},{:.1}\n",
            t.form,
            t.case,
            t.sequences,
            t.context,
            t.time_us,
            t.cache_bytes,
            t.gb_s()
        ));
    }
    match save(out, "mla_times.csv", &csv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
