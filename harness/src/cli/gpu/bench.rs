//! `specula gpu bench`: on a checkpoint (`--target`, `--draft`) or a
//! config.json shape with random weights drawn on the device, for every
//! (batch, prompt length): (1) baseline decode: bytes read per step (the
//! weights every step reads, the routed experts the tokens touched as counted
//! on the device, and the KV cache) over the CUDA-event time of the step,
//! against the device-to-device copy bandwidth measured in the same run, and
//! FLOP/s against the same run's GEMM ceiling; prefill time and tokens/s;
//! (2) synthetic acceptance: measured speedup over the same-run baseline
//! against the ideal speedup computed from the measured span costs. Rows are
//! marked synthetic. scaling.csv holds one row per (batch, prompt length).

use super::bench_case::{first_token, run_case, warm_prompt_len, CaseContext};
use super::bench_memory::{
    check_prompt_lens, fitting_beside, out_of_memory, ModelSizes, ModelSource,
};
use super::bench_rows::{
    decode_row, scaling_rows, synthetic_row, CaseRepeat, Ceilings, DecodeContext, SyntheticContext,
    DECODE_HEADER, SCALING_HEADER, SYNTHETIC_HEADER,
};
use super::spans::{csv_rows, SPANS_HEADER};
use super::{open_gpu, write};
use crate::cli::output::outln;
use crate::cli::CliError;
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula::process_stats::peak_rss_bytes;
use specula_engine::backend::cuda::{default_draft_config, GpuDtype, LoadStats};
use specula_engine::config::{DraftConfig, TargetConfig};
use specula_engine::generate::GenerateParams;
use specula_engine::speculative::{SpeculativeConfig, SyntheticAcceptance};
use specula_kernels::cuda::check::measure_ceilings;
use specula_kernels::cuda::mla_long_from;
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
    /// With --random-weights: an EAGLE-3 draft's config.json (SpecForge
    /// layout) for the random draft's shape, in place of the default (one
    /// layer of the target's width and MLP, 32000 draft tokens). Example:
    /// bench/drafts/deepseek-v3-eagle3.json.
    #[arg(long, requires = "random_weights")]
    draft_config: Option<PathBuf>,
    /// A target checkpoint folder (config.json, safetensors) to load instead.
    #[arg(long)]
    pub(super) target: Option<PathBuf>,
    /// The EAGLE-3 draft for --target (the synthetic run needs one; without
    /// it only the baseline is measured).
    #[arg(long, requires = "target")]
    pub(super) draft: Option<PathBuf>,
    /// Element type.
    #[arg(long, default_value = "bf16", value_parser = ["bf16", "f32"])]
    dtype: String,
    /// Batch sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    batch_sizes: Vec<usize>,
    /// Prompt lengths in tokens (random ids), comma-separated: every batch
    /// size runs at every prompt length (a case whose KV cache does not fit
    /// the device is reported as skipped, in meta.json).
    #[arg(
        long = "prompt-lens",
        alias = "prompt-len",
        value_delimiter = ',',
        default_value = "128"
    )]
    prompt_lens: Vec<usize>,
    /// Tokens generated per sequence (each case's unrecorded warm-up runs
    /// as many, on prompts cut to 128 tokens or to a latent-attention
    /// target's long-row cut, so the measured runs capture no graph).
    #[arg(long, default_value_t = 128)]
    pub(super) max_new_tokens: usize,
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
    pub(super) repeats: usize,
    /// Seed of the weights and prompts.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Launch every forward eagerly instead of replaying CUDA graphs.
    #[arg(long)]
    pub(super) eager: bool,
    /// Folder for the CSV files and meta.json (load time, peak host memory).
    #[arg(long, default_value = "results/gpu")]
    pub(super) out: PathBuf,
    /// No loading progress line.
    #[arg(long)]
    pub(super) quiet: bool,
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
    if a.prompt_lens.contains(&0) || a.batch_sizes.contains(&0) {
        return Err(CliError::Usage(
            "--prompt-lens and --batch-sizes take positive numbers".into(),
        ));
    }
    let target = match &a.target {
        Some(t) => TargetConfig::load(t)?,
        None => TargetConfig::load_file(a.config.as_deref().expect("checked above"))?,
    };
    check_prompt_lens(
        &a.prompt_lens,
        a.max_new_tokens,
        target.max_position_embeddings,
    )?;
    let random_draft = match &a.draft_config {
        Some(path) => DraftConfig::load_file(path)?,
        None => default_draft_config(&target),
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
    let measured = measure_ceilings(&gpu).map_err(|e| CliError::Gpu(e.to_string()))?;
    let ceil = Ceilings {
        copy_gb_s: measured.copy_gb_s,
        gemm_tflops: measured.gemm_tflops,
    };
    eprintln!(
        "ceilings: copy {:.0} GB/s, bf16 GEMM {:.0} TFLOP/s, a dependent launch with no work {:.2} us",
        ceil.copy_gb_s, ceil.gemm_tflops, measured.launch_us
    );
    let switches = specula::run_folder::environment::engine_switches();
    if let Some(line) = specula::run_folder::environment::switches_line(&switches) {
        eprintln!("{line}");
    }
    let mut batches = a.batch_sizes.clone();
    batches.sort_unstable();
    batches.dedup();
    let mut lens = a.prompt_lens.clone();
    lens.sort_unstable();
    lens.dedup();
    let moe_layers = target
        .moe
        .as_ref()
        .map_or(0, |m| m.sparse_layers.iter().filter(|&&s| s).count());
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
    let syn_ctx = SyntheticContext {
        profile: profile
            .rates()
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(";"),
        steps: speculative.steps,
        topk: speculative.topk,
        num_draft_tokens: speculative.num_draft_tokens,
        expected_tau: profile.expected_tau(speculative.steps),
    };
    let mut bw = format!("{DECODE_HEADER}\n");
    let mut sp = format!("{SYNTHETIC_HEADER}\n");
    let mut spans = format!("prompt_len,{SPANS_HEADER}\n");
    let mut all: Vec<CaseRepeat> = Vec::new();
    let mut skipped: Vec<serde_json::Value> = Vec::new();
    let mut first_load: Option<(Option<LoadStats>, Option<f64>, u64)> = None;
    // What the models take of device memory, known after the first build.
    let mut sizes: Option<ModelSizes> = None;
    let source = ModelSource {
        args: &a,
        target: &target,
        random_draft: &random_draft,
        dtype,
    };
    for &prompt_len in &lens {
        let capacity = prompt_len + a.max_new_tokens + ndt + 8;
        let (mut fit, too_big) = fitting_beside(&gpu, &batches, capacity, sizes)?;
        let mut skip = |b: usize, why: String| {
            eprintln!("batch {b}, prompt {prompt_len}: skipped: {why}");
            skipped.push(
                serde_json::json!({"batch_size": b, "prompt_len": prompt_len, "reason": why}),
            );
        };
        for (b, why) in too_big {
            skip(b, why);
        }
        let Some((mut models, load)) =
            source.build_largest(&gpu, &mut fit, capacity, &mut sizes, &mut skip)?
        else {
            continue;
        };
        let weight_bytes = models.target_weight_bytes();
        let expert_bytes = models.target_expert_bytes();
        let kv_per_token = models.target_kv_bytes_per_token();
        if first_load.is_none() {
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
            let (first_token_s, rss) = first_token(
                &mut models,
                &gpu,
                &a,
                &target,
                prompt_len,
                &base_params,
                load.as_ref(),
            )?;
            first_load = Some((load, first_token_s, rss));
        }
        let ctx = CaseContext {
            prompt_len,
            weight_bytes,
            expert_bytes,
            kv_per_token,
            moe_layers,
            moe: target.moe.clone(),
            synthetic,
            elem_bytes: if dtype == GpuDtype::F32 { 4.0 } else { 2.0 },
            // Scores and weighted values: 2 x 2 FLOPs per key per query width.
            attention_width: target.num_attention_heads
                * target.head_dim
                * target.num_hidden_layers,
            copy_gb_s: ceil.copy_gb_s,
            launch_us: measured.launch_us,
            warm_len: warm_prompt_len(
                prompt_len,
                target.mla.as_ref().and_then(|_| mla_long_from()),
            ),
        };
        for &batch in &fit {
            let prompts: Vec<Vec<u32>> = (0..batch)
                .map(|_| {
                    (0..prompt_len)
                        .map(|_| rng.random_range(0..target.vocab_size as u32))
                        .collect()
                })
                .collect();
            match run_case(
                &mut models,
                &gpu,
                &a,
                &ctx,
                &prompts,
                (&base_params, &spec_params),
            ) {
                Ok(repeats) => {
                    let dctx = DecodeContext {
                        dtype: dtype.name(),
                        graphs: !a.eager,
                        weight_bytes,
                        experts_per_layer: repeats.experts_per_layer,
                        expert_bytes: repeats.experts_read,
                        uniform_experts_per_layer: repeats.uniform_experts_per_layer,
                    };
                    for r in &repeats.rows {
                        bw.push_str(&decode_row(r, &dctx, ceil));
                        if let Some(row) = synthetic_row(r, &syn_ctx) {
                            sp.push_str(&row);
                        }
                    }
                    for (mode, log) in &repeats.last_logs {
                        for line in csv_rows(mode, batch, log).lines() {
                            spans.push_str(&format!("{prompt_len},{line}\n"));
                        }
                    }
                    all.extend(repeats.rows);
                    // Every finished case on disk: a later case that fails
                    // (or a kill) loses none of them.
                    write_tables(&a.out, (&bw, synthetic.then_some(&sp), &spans), &all, ceil)?;
                }
                Err(e) if out_of_memory(&e) => {
                    let why = format!("out of device memory: {e}");
                    eprintln!("batch {batch}, prompt {prompt_len}: skipped: {why}");
                    skipped.push(serde_json::json!({"batch_size": batch, "prompt_len": prompt_len, "reason": why}));
                    // Larger batches of this prompt length need more still.
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        drop(models);
    }
    let scaling = write_tables(&a.out, (&bw, synthetic.then_some(&sp), &spans), &all, ceil)?;
    let (load, first_token_s, rss_after_load) = first_load.unwrap_or((None, None, 0));
    let meta = serde_json::json!({
        "target": a.target.as_ref().map(|p| p.display().to_string()),
        "draft": a.draft.as_ref().map(|p| p.display().to_string()),
        "dtype": dtype.name(),
        "device": gpu.name,
        "copy_gb_s": ceil.copy_gb_s,
        "gemm_tflops": ceil.gemm_tflops,
        "launch_us": measured.launch_us,
        "batch_sizes": batches,
        "prompt_lens": lens,
        "max_new_tokens": a.max_new_tokens,
        "skipped": skipped,
        "load_s": load.map(|l| l.seconds),
        "load_bytes": load.map(|l| l.bytes),
        "load_tensors": load.map(|l| l.tensors),
        "load_gb_s": load.map(|l| l.gb_s()),
        "first_token_s": first_token_s,
        "peak_host_memory_after_load_bytes": rss_after_load,
        "peak_host_memory_bytes": peak_rss_bytes(),
        "engine_switches": switches,
    });
    let text = serde_json::to_string_pretty(&meta).expect("a JSON value serializes");
    write(&a.out, "meta.json", &format!("{text}\n"))?;
    eprintln!(
        "peak host memory {:.2} GB (meta.json)",
        peak_rss_bytes() as f64 / 1e9
    );
    outln!("{scaling}");
    Ok(())
}

/// Writes the bench's tables as they stand: decode_bandwidth.csv,
/// synthetic_speedup.csv (when the run has synthetic rows), scaling.csv
/// (from `all`, returned) and spans.csv.
fn write_tables(
    out: &std::path::Path,
    (bw, sp, spans): (&str, Option<&String>, &str),
    all: &[CaseRepeat],
    ceil: Ceilings,
) -> Result<String, CliError> {
    write(out, "decode_bandwidth.csv", bw)?;
    if let Some(sp) = sp {
        write(out, "synthetic_speedup.csv", sp)?;
    }
    let scaling = format!("{SCALING_HEADER}\n{}", scaling_rows(all, ceil));
    write(out, "scaling.csv", &scaling)?;
    write(out, "spans.csv", spans)?;
    Ok(scaling)
}

/// Prints the per-operation breakdown of the target forwards when
/// `SPECULA_GPU_PROFILE` is set (and resets it): of the forward size run
/// most often (the decode or verify forwards, not the prefill's).
pub(super) fn print_profile(batch: usize, mode: &str) {
    let sizes = specula_engine::backend::cuda::take_profile();
    let Some((rows, p)) = sizes
        .into_iter()
        .max_by_key(|(rows, p)| (p.first().map_or(0, |e| e.2), *rows))
    else {
        return;
    };
    let n = p.first().map_or(1, |e| e.2.max(1)) as f64;
    eprintln!(
        "per-forward breakdown, batch {batch}, {mode} ({n} forwards, {rows} rows each, CUDA events):"
    );
    for (name, ms, _) in p {
        eprintln!("  {name:<30} {:>9.1} us", 1e3 * ms / n);
    }
}
