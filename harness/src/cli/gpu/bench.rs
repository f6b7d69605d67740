//! `specula gpu bench`: on a checkpoint (`--target`, `--draft`) or a
//! config.json shape with random weights drawn on the device, (1) baseline
//! decode: bytes read per step (the weights every step reads, the routed
//! experts the tokens touched as counted on the device, and the KV cache)
//! over the CUDA-event time of the step, against the device-to-device copy
//! bandwidth measured in the same run; (2)
//! synthetic acceptance: measured speedup over the same-run baseline against
//! the ideal speedup computed from the measured span costs. Rows are marked
//! synthetic.

use super::spans::{csv_rows, median_us, SPANS_HEADER};
use super::{open_gpu, write};
use crate::cli::output::outln;
use crate::cli::CliError;
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula::process_stats::{peak_rss_bytes, process_age_s};
use specula_engine::backend::cuda::{
    default_draft_config, GpuDtype, GpuModels, GpuOptions, GpuRecorder, LoadOptions,
};
use specula_engine::capture::CaptureChoice;
use specula_engine::config::TargetConfig;
use specula_engine::generate::GenerateParams;
use specula_engine::speculative::{SpeculativeConfig, SyntheticAcceptance};
use specula_engine::timing::Span;
use specula_kernels::cuda::check::measure_ceilings;
use std::path::PathBuf;

/// Arguments of `specula gpu bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// A target's config.json (for example Llama-3.1-8B's), with --random-weights.
    #[arg(long, conflicts_with = "target")]
    config: Option<PathBuf>,
    /// Draw random weights for --config's shape on the device (no download).
    #[arg(long, requires = "config")]
    random_weights: bool,
    /// A target checkpoint folder (config.json, safetensors) to load instead.
    #[arg(long)]
    target: Option<PathBuf>,
    /// The EAGLE-3 draft for --target (the synthetic run needs one; without
    /// it only the baseline is measured).
    #[arg(long, requires = "target")]
    draft: Option<PathBuf>,
    /// Element type.
    #[arg(long, default_value = "bf16", value_parser = ["bf16", "f32"])]
    dtype: String,
    /// Batch sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch_sizes: Vec<usize>,
    /// Prompt length in tokens (random ids).
    #[arg(long, default_value_t = 128)]
    prompt_len: usize,
    /// Tokens generated per sequence.
    #[arg(long, default_value_t = 128)]
    max_new_tokens: usize,
    /// Draft depth of the synthetic run.
    #[arg(long, default_value_t = 5)]
    steps: usize,
    /// Branching of the synthetic run.
    #[arg(long, default_value_t = 1)]
    topk: usize,
    /// Tokens verified per step (default steps * topk + 1 capped by the tree).
    #[arg(long)]
    num_draft_tokens: Option<usize>,
    /// Conditional acceptance per draft position, comma-separated (the last repeats).
    #[arg(long, value_delimiter = ',', default_value = "0.8")]
    synthetic: Vec<f64>,
    /// Repeats of each (batch, mode) pair, interleaved.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Seed of the weights and prompts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Launch every forward eagerly instead of replaying CUDA graphs.
    #[arg(long)]
    eager: bool,
    /// Folder for the CSV files and meta.json (load time, peak host memory).
    #[arg(long, default_value = "results/gpu")]
    out: PathBuf,
    /// No loading progress line.
    #[arg(long)]
    quiet: bool,
}

struct Measured {
    tok_s: f64,
    tau: f64,
    steps: usize,
    verify_us: f64,
    draft_us_per_step: f64,
    log: specula_engine::timing::SpanLog,
}

fn measure(
    models: &mut GpuModels,
    gpu: &std::sync::Arc<specula_engine::backend::cuda::Gpu>,
    prompts: &[Vec<u32>],
    params: &GenerateParams,
) -> Result<Measured, CliError> {
    let mut rec = GpuRecorder::new(gpu.clone());
    let g = models.generate(prompts, params, &mut rec)?;
    if let Some(e) = rec.error {
        return Err(CliError::Gpu(format!("CUDA events failed: {e}")));
    }
    let verify = rec
        .log
        .samples
        .get(&Span::Verify)
        .cloned()
        .unwrap_or_default();
    let draft_total = rec.log.total(Span::Draft).as_secs_f64() * 1e6;
    Ok(Measured {
        tok_s: g.decode_throughput(),
        tau: g.tau(),
        steps: g.batch_steps,
        verify_us: median_us(&verify),
        draft_us_per_step: draft_total / g.batch_steps.max(1) as f64,
        log: rec.log,
    })
}

/// Runs the benchmark.
pub fn run(a: BenchArgs) -> Result<(), CliError> {
    match (&a.config, &a.target) {
        (Some(_), None) if !a.random_weights => {
            return Err(CliError::Usage(
                "--config gives only a shape: add --random-weights, or pass --target CHECKPOINT"
                    .into(),
            ))
        }
        (Some(_), None) | (None, Some(_)) => {}
        _ => return Err(CliError::Usage(
            "pass --target CHECKPOINT [--draft DRAFT], or --config CONFIG.json --random-weights"
                .into(),
        )),
    };
    let target = match &a.target {
        Some(t) => TargetConfig::load(t)?,
        None => TargetConfig::load_file(a.config.as_deref().expect("checked above"))?,
    };
    let synthetic = a.target.is_none() || a.draft.is_some();
    let dtype = if a.dtype == "f32" {
        GpuDtype::F32
    } else {
        GpuDtype::Bf16
    };
    let profile = SyntheticAcceptance::new(a.synthetic.clone())?;
    let ndt = a.num_draft_tokens.unwrap_or(a.steps * a.topk + 1);
    let speculative = SpeculativeConfig::new(a.steps, a.topk, ndt)?;
    let gpu = open_gpu()?;
    let ceilings = measure_ceilings(&gpu).map_err(|e| CliError::Gpu(e.to_string()))?;
    eprintln!(
        "ceilings: copy {:.0} GB/s, bf16 GEMM {:.0} TFLOP/s",
        ceilings.copy_gb_s, ceilings.gemm_tflops
    );
    let max_batch = a.batch_sizes.iter().copied().max().unwrap_or(1);
    let opts = GpuOptions {
        slots: max_batch,
        capacity: a.prompt_len + a.max_new_tokens + ndt + 8,
        graphs: !a.eager,
    };
    // Straight from the checkpoint's files to the device (host memory: the
    // staging buffers), or random weights drawn on the device.
    let load_opts = LoadOptions { quiet: a.quiet };
    let (mut models, load) = match &a.target {
        Some(t) => {
            let (mut m, mut load) = GpuModels::load(gpu.clone(), t, dtype, &opts, &load_opts)?;
            if let Some(d) = &a.draft {
                let (_, s) = m.load_drafter(d, &CaptureChoice::default(), &opts, &load_opts)?;
                load = load.plus(s);
            }
            (m, Some(load))
        }
        None => (
            GpuModels::random(
                gpu.clone(),
                target.clone(),
                Some(default_draft_config(&target)),
                dtype,
                a.seed,
                &opts,
            )?,
            None,
        ),
    };
    let weight_bytes = models.target_weight_bytes();
    let expert_bytes = models.target_expert_bytes();
    let kv_per_token = models.target_kv_bytes_per_token();
    let moe_layers = target
        .moe
        .as_ref()
        .map_or(0, |m| m.sparse_layers.iter().filter(|&&s| s).count());
    // A baseline decode step at position p reads p + 1 keys per row: on average
    // over the run, the prompt and half the generated tokens.
    let mean_context = a.prompt_len as f64 + (a.max_new_tokens as f64 + 1.0) / 2.0;
    eprintln!(
        "{} {} weights: {:.2} GB read per target step{}",
        if a.target.is_some() {
            "checkpoint"
        } else {
            "random"
        },
        dtype.name(),
        weight_bytes as f64 / 1e9,
        if synthetic {
            ""
        } else {
            " (no draft: baseline only)"
        }
    );
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let base_params = GenerateParams {
        speculative: SpeculativeConfig::BASELINE,
        max_new_tokens: a.max_new_tokens,
        ignore_eos: true,
        ..GenerateParams::default()
    };
    let spec_params = GenerateParams {
        speculative,
        synthetic: Some(profile.clone()),
        ..base_params.clone()
    };
    // The first decoded token (one prompt, one new token), timed from the
    // process's start: what a user waits before the model answers.
    let mut first_rng = ChaCha8Rng::seed_from_u64(a.seed ^ 0xF157);
    let first: Vec<Vec<u32>> = vec![(0..a.prompt_len)
        .map(|_| first_rng.random_range(0..target.vocab_size as u32))
        .collect()];
    let one = GenerateParams {
        max_new_tokens: 1,
        ..base_params.clone()
    };
    measure(&mut models, &gpu, &first, &one)?;
    let first_token_s = process_age_s();
    let rss_after_load = peak_rss_bytes();
    if let Some(l) = &load {
        eprintln!(
            "load: {:.2} GB in {:.2} s ({:.1} GB/s); first token {}; peak host memory {:.2} GB",
            l.bytes as f64 / 1e9,
            l.seconds,
            l.gb_s(),
            first_token_s.map_or("at an unknown time".into(), |s| format!(
                "{s:.2} s after the process started"
            )),
            rss_after_load as f64 / 1e9
        );
    }
    let mut bw = String::from("batch_size,repeat,dtype,cuda_graphs,weight_bytes,step_us_p50,weight_gb_s,copy_gb_s,fraction_of_copy,tok_s,experts_per_moe_layer,expert_bytes,kv_bytes,bytes_read,read_gb_s,read_fraction_of_copy\n");
    let mut sp = String::from("batch_size,repeat,synthetic,profile,steps,topk,num_draft_tokens,tau,expected_tau,base_tok_s,spec_tok_s,measured_speedup,base_step_us,draft_us_per_step,verify_us,ideal_speedup,fraction_of_ideal\n");
    let mut spans = format!("{SPANS_HEADER}\n");
    for &batch in &a.batch_sizes {
        let prompts: Vec<Vec<u32>> = (0..batch)
            .map(|_| {
                (0..a.prompt_len)
                    .map(|_| rng.random_range(0..target.vocab_size as u32))
                    .collect()
            })
            .collect();
        // Warm-up: NVRTC modules, cuBLAS heuristics, allocator pools.
        let warm = GenerateParams {
            max_new_tokens: 8,
            ..base_params.clone()
        };
        measure(&mut models, &gpu, &prompts, &warm)?;
        if synthetic {
            measure(
                &mut models,
                &gpu,
                &prompts,
                &GenerateParams {
                    max_new_tokens: 8,
                    ..spec_params.clone()
                },
            )?;
        }
        for repeat in 0..a.repeats {
            specula_engine::backend::cuda::take_profile();
            models.reset_expert_stats()?;
            let base = measure(&mut models, &gpu, &prompts, &base_params)?;
            print_profile(batch, "baseline");
            let (touched, moe_forwards) = models.expert_stats()?;
            let per_layer = touched as f64 / moe_forwards.max(1) as f64;
            let experts_read = per_layer * moe_layers as f64 * expert_bytes as f64;
            let kv_read = batch as f64 * mean_context * kv_per_token as f64;
            let bytes_read = weight_bytes as f64 + experts_read + kv_read;
            let step_s = base.verify_us * 1e-6;
            let gb_s = weight_bytes as f64 / step_s / 1e9;
            let read_gb_s = bytes_read / step_s / 1e9;
            bw.push_str(&format!(
                "{batch},{repeat},{},{},{weight_bytes},{:.1},{gb_s:.1},{:.1},{:.4},{:.2},{per_layer:.2},{experts_read:.0},{kv_read:.0},{bytes_read:.0},{read_gb_s:.1},{:.4}\n",
                dtype.name(),
                !a.eager,
                base.verify_us,
                ceilings.copy_gb_s,
                gb_s / ceilings.copy_gb_s,
                base.tok_s,
                read_gb_s / ceilings.copy_gb_s,
            ));
            eprintln!(
                "batch {batch} repeat {repeat}: baseline step {:.0} us: {:.2} GB read ({per_layer:.1} experts per MoE layer), {read_gb_s:.0} GB/s, {:.1}% of copy; {:.1} tok/s",
                base.verify_us,
                bytes_read / 1e9,
                100.0 * read_gb_s / ceilings.copy_gb_s,
                base.tok_s,
            );
            if repeat + 1 == a.repeats {
                spans.push_str(&csv_rows("baseline", batch, &base.log));
            }
            if !synthetic {
                continue;
            }
            let syn = measure(&mut models, &gpu, &prompts, &spec_params)?;
            print_profile(batch, "synthetic (target forwards)");
            let measured = syn.tok_s / base.tok_s;
            let ideal = syn.tau * base.verify_us / (syn.draft_us_per_step + syn.verify_us);
            let rates: Vec<String> = profile.rates().iter().map(|r| r.to_string()).collect();
            sp.push_str(&format!(
                "{batch},{repeat},true,{},{},{},{},{:.4},{:.4},{:.2},{:.2},{measured:.4},{:.1},{:.1},{:.1},{ideal:.4},{:.4}\n",
                rates.join(";"),
                speculative.steps,
                speculative.topk,
                speculative.num_draft_tokens,
                syn.tau,
                profile.expected_tau(speculative.steps),
                base.tok_s,
                syn.tok_s,
                base.verify_us,
                syn.draft_us_per_step,
                syn.verify_us,
                measured / ideal
            ));
            eprintln!(
                "batch {batch} repeat {repeat}: synthetic tau {:.2}: {:.1} tok/s, speedup {measured:.2} vs ideal {ideal:.2} ({:.1}%), {} steps",
                syn.tau,
                syn.tok_s,
                100.0 * measured / ideal,
                syn.steps
            );
            if repeat + 1 == a.repeats {
                spans.push_str(&csv_rows("synthetic", batch, &syn.log));
            }
        }
    }
    write(&a.out, "decode_bandwidth.csv", &bw)?;
    if synthetic {
        write(&a.out, "synthetic_speedup.csv", &sp)?;
    }
    write(&a.out, "spans.csv", &spans)?;
    let meta = serde_json::json!({
        "target": a.target.as_ref().map(|p| p.display().to_string()),
        "draft": a.draft.as_ref().map(|p| p.display().to_string()),
        "dtype": dtype.name(),
        "device": gpu.name,
        "copy_gb_s": ceilings.copy_gb_s,
        "load_s": load.map(|l| l.seconds),
        "load_bytes": load.map(|l| l.bytes),
        "load_tensors": load.map(|l| l.tensors),
        "load_gb_s": load.map(|l| l.gb_s()),
        "first_token_s": first_token_s,
        "peak_host_memory_after_load_bytes": rss_after_load,
        "peak_host_memory_bytes": peak_rss_bytes(),
    });
    let text = serde_json::to_string_pretty(&meta).expect("a JSON value serializes");
    write(&a.out, "meta.json", &format!("{text}\n"))?;
    eprintln!(
        "peak host memory {:.2} GB (meta.json)",
        peak_rss_bytes() as f64 / 1e9
    );
    if synthetic {
        outln!("{bw}\n{sp}\n{spans}");
    } else {
        outln!("{bw}\n{spans}");
    }
    Ok(())
}

/// Prints the per-operation breakdown of the target forwards when
/// `SPECULA_GPU_PROFILE` is set (and resets it).
fn print_profile(batch: usize, mode: &str) {
    let p = specula_engine::backend::cuda::take_profile();
    if p.is_empty() {
        return;
    }
    let n = p[0].2.max(1) as f64;
    eprintln!("per-forward breakdown, batch {batch}, {mode} ({n} forwards, CUDA events):");
    for (name, ms, _) in p {
        eprintln!("  {name:<30} {:>9.1} us", 1e3 * ms / n);
    }
}
