//! One (batch, prompt length) case of `specula gpu bench`: warm-up, then
//! interleaved baseline and synthetic-acceptance repeats, each timed with
//! CUDA events.

use super::bench::{print_profile, BenchArgs};
use super::bench_memory::device_used;
use super::bench_rows::{CaseRepeat, SyntheticRepeat};
use super::spans::median_us;
use super::stamp_shares::kernel_shares;
use crate::cli::CliError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use specula::process_stats::{peak_rss_bytes, process_age_s};
use specula_engine::backend::cuda::{Gpu, GpuModels, GpuRecorder, GraphLaunches, LoadStats};
use specula_engine::config::{MoeConfig, TargetConfig};
use specula_engine::generate::GenerateParams;
use specula_engine::timing::{Span, SpanLog};
use specula_kernels::cuda::stamps::{reset_stamps, stamp_kernels, stamps_on, take_stamps, Stamp};
use std::fmt::Write as _;
use std::sync::Arc;

/// One generate call's measures.
pub(super) struct Measured {
    pub(super) tok_s: f64,
    pub(super) tau: f64,
    pub(super) steps: usize,
    pub(super) verify_us: f64,
    pub(super) draft_us_per_step: f64,
    /// Drafting and verifying summed over the run, microseconds.
    pub(super) draft_verify_us: f64,
    /// Tokens emitted by decode steps, summed over sequences.
    pub(super) decode_tokens: usize,
    /// Verify steps per sequence, mean over the batch.
    pub(super) sequence_steps: f64,
    /// The target's prefill and the draft's extend over the prompts.
    pub(super) prefill_ms: f64,
    /// The draft's extend over the prompts alone.
    pub(super) draft_prefill_ms: f64,
    pub(super) log: SpanLog,
}

/// Runs one generate call and reads its CUDA-event spans.
pub(super) fn measure(
    models: &mut GpuModels,
    gpu: &Arc<Gpu>,
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
    let verify_total = rec.log.total(Span::Verify).as_secs_f64() * 1e6;
    Ok(Measured {
        tok_s: g.decode_throughput(),
        tau: g.tau(),
        steps: g.batch_steps,
        verify_us: median_us(&verify),
        draft_us_per_step: draft_total / g.batch_steps.max(1) as f64,
        draft_verify_us: draft_total + verify_total,
        decode_tokens: g.emitted_in_decode(),
        sequence_steps: g.verify_steps() as f64 / g.sequences.len().max(1) as f64,
        prefill_ms: (rec.log.total(Span::Prefill) + rec.log.total(Span::DraftPrefill))
            .as_secs_f64()
            * 1e3,
        draft_prefill_ms: rec.log.total(Span::DraftPrefill).as_secs_f64() * 1e3,
        log: rec.log,
    })
}

/// What every case of one prompt length shares.
pub(super) struct CaseContext {
    pub(super) prompt_len: usize,
    pub(super) weight_bytes: usize,
    pub(super) expert_bytes: usize,
    pub(super) kv_per_token: usize,
    pub(super) moe_layers: usize,
    /// The target's routing (None on dense targets): the expected experts of
    /// independently routed tokens, beside the counted ones.
    pub(super) moe: Option<MoeConfig>,
    pub(super) synthetic: bool,
    /// Bytes per weight element (parameters = weight bytes / this).
    pub(super) elem_bytes: f64,
    /// Query width summed over layers (attention FLOPs per key: 4 x this).
    pub(super) attention_width: usize,
    /// Copy ceiling of the run, GB/s.
    pub(super) copy_gb_s: f64,
    /// A dependent launch with no work in it, microseconds (same run).
    pub(super) launch_us: f64,
    /// Prompt tokens of the warm-up runs ([`warm_prompt_len`]).
    pub(super) warm_len: usize,
}

/// Prompt tokens of a case's warm-up runs: 128 (at most the case's own), or
/// for a latent-attention target up to the long-row cut (`SPECULA_MLA_LONG`,
/// 512 by default), past which its decode and verify graphs take the
/// tensor-core form's launches: a graph's shape, so a warm-up on shorter
/// prompts would leave those graphs to be captured inside the measured run.
/// Every other graph is keyed by rows, not context (a short warm-up meets
/// them without a long prefill).
pub(super) fn warm_prompt_len(prompt_len: usize, long_cut: Option<usize>) -> usize {
    prompt_len.min(long_cut.unwrap_or(0).max(128))
}

/// A case's repeats, and the span logs of its last repeat per mode.
pub(super) struct CaseRepeats {
    pub(super) rows: Vec<CaseRepeat>,
    pub(super) experts_per_layer: f64,
    /// Experts a decode forward of the batch would touch per MoE layer with
    /// independent, unbiased routing (`MoeConfig::uniform_experts`).
    pub(super) uniform_experts_per_layer: f64,
    pub(super) experts_read: f64,
    pub(super) last_logs: Vec<(&'static str, SpanLog)>,
}

/// Warms up, then runs `a.repeats` interleaved (baseline, synthetic) pairs
/// of one (batch, prompt length).
pub(super) fn run_case(
    models: &mut GpuModels,
    gpu: &Arc<Gpu>,
    a: &BenchArgs,
    ctx: &CaseContext,
    prompts: &[Vec<u32>],
    (base_params, spec_params): (&GenerateParams, &GenerateParams),
) -> Result<CaseRepeats, CliError> {
    let batch = prompts.len();
    // Warm-up: NVRTC modules, cuBLAS heuristics, allocator pools and every
    // graph the measured runs replay: as many tokens as they generate, with
    // the same seeds, so that a synthetic run's draft extends meet the same
    // row counts (each count its own graph: 32-token runs met new ones, an
    // eager run and then a capture, inside the measured steps after an
    // 8-token warm-up, results/h200/state-2026-12-07 call 1), on prompts cut
    // to `ctx.warm_len` (no long prefill twice more).
    let short: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| p[..p.len().min(ctx.warm_len)].to_vec())
        .collect();
    measure(models, gpu, &short, base_params)?;
    if ctx.synthetic {
        measure(models, gpu, &short, spec_params)?;
    }
    let mut out = CaseRepeats {
        rows: Vec::new(),
        experts_per_layer: 0.0,
        uniform_experts_per_layer: ctx.moe.as_ref().map_or(0.0, |m| m.uniform_experts(batch)),
        experts_read: 0.0,
        last_logs: Vec::new(),
    };
    // A baseline decode step at position p reads p + 1 keys per row: on
    // average over the run, the prompt and half the generated tokens.
    let mean_context = ctx.prompt_len as f64 + (a.max_new_tokens as f64 + 1.0) / 2.0;
    for repeat in 0..a.repeats {
        specula_engine::backend::cuda::take_profile();
        models.reset_expert_stats()?;
        let stamp = stamps_on() && repeat == 0;
        if stamp {
            reset_stamps(gpu).map_err(|e| CliError::Gpu(format!("stamps: {e}")))?;
        }
        let base = measure(models, gpu, prompts, base_params)?;
        let graph = models.decode_graph(batch);
        let kernels = graph.map(|g| g.kernels);
        if stamp {
            write_stamps(gpu, a, (batch, ctx.prompt_len), graph)?;
        }
        print_profile(batch, "baseline");
        let (touched, moe_forwards) = models.expert_stats()?;
        let per_layer = touched as f64 / moe_forwards.max(1) as f64;
        let experts_read = per_layer * ctx.moe_layers as f64 * ctx.expert_bytes as f64;
        let kv_read = batch as f64 * mean_context * ctx.kv_per_token as f64;
        let bytes_read = ctx.weight_bytes as f64 + experts_read + kv_read;
        let linear_flops =
            2.0 * (ctx.weight_bytes as f64 + experts_read) / ctx.elem_bytes * batch as f64;
        let attention_flops = 4.0 * batch as f64 * mean_context * ctx.attention_width as f64;
        let mut row = CaseRepeat {
            batch,
            prompt_len: ctx.prompt_len,
            repeat,
            step_us: base.verify_us,
            bytes_read,
            kv_bytes: kv_read,
            tok_s: base.tok_s,
            prefill_ms: base.prefill_ms,
            device_used_bytes: device_used(gpu)?,
            step_flops: linear_flops + attention_flops,
            kernels,
            synthetic: None,
        };
        eprintln!(
            "batch {batch} prompt {} repeat {repeat}: baseline step {:.0} us: {:.2} GB read ({per_layer:.1} experts per MoE layer), {:.1}% of copy; {:.1} tok/s; prefill {:.1} ms",
            ctx.prompt_len,
            base.verify_us,
            bytes_read / 1e9,
            100.0 * bytes_read / (base.verify_us * 1e-6) / 1e9 / ctx.copy_gb_s,
            base.tok_s,
            base.prefill_ms,
        );
        if let (Some(k), Some(us)) = (row.kernels, row.beyond_copy_per_kernel_us(ctx.copy_gb_s)) {
            eprintln!(
                "batch {batch} prompt {} repeat {repeat}: {k} kernels a step, {us:.2} us each beyond streaming the step's bytes at the copy rate (a dependent launch with no work: {:.2} us)",
                ctx.prompt_len, ctx.launch_us
            );
        }
        out.experts_per_layer = per_layer;
        out.experts_read = experts_read;
        let last = repeat + 1 == a.repeats;
        if last {
            out.last_logs.push(("baseline", base.log));
        }
        if ctx.synthetic {
            models.reset_expert_stats()?;
            if stamp {
                reset_stamps(gpu).map_err(|e| CliError::Gpu(format!("stamps: {e}")))?;
            }
            let syn = measure(models, gpu, prompts, spec_params)?;
            if stamp {
                let (b, p) = (batch, ctx.prompt_len);
                write_stamp_rows(gpu, a, &format!("stamps_spec_b{b}_p{p}.csv"))?;
            }
            print_profile(batch, "synthetic (target forwards)");
            let (touched, moe_forwards) = models.expert_stats()?;
            let s = SyntheticRepeat {
                tau: syn.tau,
                tok_s: syn.tok_s,
                verify_us: syn.verify_us,
                draft_us_per_step: syn.draft_us_per_step,
                draft_verify_us: syn.draft_verify_us,
                decode_tokens: syn.decode_tokens,
                sequence_steps: syn.sequence_steps,
                experts_per_layer: touched as f64 / moe_forwards.max(1) as f64,
                uniform_experts_per_layer: ctx.moe.as_ref().map_or(0.0, |m| {
                    m.uniform_experts(batch * spec_params.speculative.num_draft_tokens)
                }),
                prefill_ms: syn.prefill_ms,
                draft_prefill_ms: syn.draft_prefill_ms,
                steps: syn.steps,
            };
            eprintln!(
                "batch {batch} prompt {} repeat {repeat}: synthetic tau {:.2}: {:.1} tok/s, speedup {:.2} vs ideal {:.2} ({:.1}%; {:.1}% of tau x step / (draft + verify)), verify {:.2}x a decode step ({:.1} experts per MoE layer, {:.1} if routed uniformly), {} batch steps ({:.1} per sequence)",
                ctx.prompt_len,
                s.tau,
                s.tok_s,
                row.speedup(&s),
                row.ideal(&s),
                100.0 * row.speedup(&s) / row.ideal(&s),
                100.0 * row.speedup(&s) / row.tau_ideal(&s),
                s.verify_us / row.step_us,
                s.experts_per_layer,
                s.uniform_experts_per_layer,
                s.steps,
                s.sequence_steps,
            );
            row.synthetic = Some(s);
            if last {
                out.last_logs.push(("synthetic", syn.log));
            }
        }
        out.rows.push(row);
    }
    Ok(out)
}

/// The first decoded token (one prompt of `prompt_len` random ids, one new
/// token), timed from the process's start: what a user waits before the
/// model answers. Prints it with the load; returns it and the peak host
/// memory so far.
pub(super) fn first_token(
    models: &mut GpuModels,
    gpu: &std::sync::Arc<Gpu>,
    a: &BenchArgs,
    target: &TargetConfig,
    prompt_len: usize,
    base_params: &GenerateParams,
    load: Option<&LoadStats>,
) -> Result<(Option<f64>, u64), CliError> {
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed ^ 0xF157);
    let first: Vec<Vec<u32>> = vec![(0..prompt_len)
        .map(|_| rng.random_range(0..target.vocab_size as u32))
        .collect()];
    let one = GenerateParams {
        max_new_tokens: 1,
        ..base_params.clone()
    };
    measure(models, gpu, &first, &one)?;
    let first_token_s = process_age_s();
    let rss = peak_rss_bytes();
    if let Some(l) = load {
        eprintln!(
            "load: {:.2} GB in {:.2} s ({:.1} GB/s); first token {}; peak host memory {:.2} GB",
            l.bytes as f64 / 1e9,
            l.seconds,
            l.gb_s(),
            first_token_s.map_or("at an unknown time".into(), |s| format!(
                "{s:.2} s after the process started"
            )),
            rss as f64 / 1e9
        );
    }
    Ok((first_token_s, rss))
}

/// Takes the device's stamps and writes them, one row a launch (the global
/// timer in ns, blocks, threads a block and the kernels launched with that
/// shape), into `name` under the bench's output folder; returns them.
fn write_stamp_rows(gpu: &Gpu, a: &BenchArgs, name: &str) -> Result<Vec<Stamp>, CliError> {
    let (stamps, dropped) = take_stamps(gpu).map_err(|e| CliError::Gpu(format!("stamps: {e}")))?;
    let mut csv = String::from("ns,blocks,threads,kernels\n");
    for s in &stamps {
        let _ = writeln!(
            csv,
            "{},{},{},{}",
            s.ns,
            s.blocks,
            s.threads,
            stamp_kernels(s)
        );
    }
    super::write(&a.out, name, &csv)?;
    let dropped = if dropped > 0 {
        format!(" ({dropped} past the cap dropped)")
    } else {
        String::new()
    };
    eprintln!(
        "{} wait-return stamps in {}{dropped}",
        stamps.len(),
        a.out.join(name).display(),
    );
    Ok(stamps)
}

/// The wait-return stamps of a case's first baseline run (prefill and
/// decode steps; `SPECULA_STAMPS=1`) into `stamps_b{batch}_p{prompt}.csv`:
/// one row a launch, the global timer in ns, blocks, threads a block and
/// the kernels launched with that shape; with the decode graph's launches
/// (how many, and its first's shape, where a step begins), each kernel's
/// share of a step into
/// `kernel_shares_b{batch}_p{prompt}.csv`, the largest printed.
fn write_stamps(
    gpu: &Gpu,
    a: &BenchArgs,
    (batch, prompt_len): (usize, usize),
    graph: Option<GraphLaunches>,
) -> Result<(), CliError> {
    let case = format!("b{batch}_p{prompt_len}");
    let stamps = write_stamp_rows(gpu, a, &format!("stamps_{case}.csv"))?;
    let per = graph.map(|g| g.kernels);
    let Some((step, shares)) =
        graph.and_then(|g| kernel_shares(&stamps, g.kernels, g.first, stamp_kernels))
    else {
        eprintln!(
            "batch {batch} prompt {prompt_len}: no three repeats of the decode graph's {} launches in the stamps (no kernel shares)",
            per.map_or("(no graph)".to_string(), |p| p.to_string())
        );
        return Ok(());
    };
    let mut out = String::from("kernel,blocks,threads,launches,us_per_step,us_each,share\n");
    for s in &shares {
        let _ = writeln!(
            out,
            "{},{},{},{},{:.2},{:.3},{:.4}",
            s.kernel,
            s.blocks,
            s.threads,
            s.launches,
            s.us,
            s.us_each(),
            s.share
        );
    }
    super::write(&a.out, &format!("kernel_shares_{case}.csv"), &out)?;
    eprintln!("batch {batch} prompt {prompt_len}: where a replayed step goes ({step:.0} us a step, stamps' median; kernel_shares_{case}.csv):");
    for s in shares.iter().take(8) {
        eprintln!(
            "  {:>5.1}%  {:>8.1} us  {:>3} x {:>7.2} us  {} ({}x{})",
            100.0 * s.share,
            s.us,
            s.launches,
            s.us_each(),
            s.kernel,
            s.blocks,
            s.threads
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::warm_prompt_len;

    #[test]
    fn warm_up_prompts_reach_the_long_row_cut_of_a_latent_attention_target() {
        // Dense targets' graphs are keyed by rows: 128 tokens meet them all.
        assert_eq!(warm_prompt_len(8192, None), 128);
        assert_eq!(warm_prompt_len(64, None), 64);
        // Latent attention: at the cut the first decode row has cut + 1
        // keys, so the warm-up captures the long-row graphs the case replays.
        assert_eq!(warm_prompt_len(8192, Some(512)), 512);
        assert_eq!(warm_prompt_len(8192, Some(4096)), 4096);
        assert_eq!(warm_prompt_len(8192, Some(64)), 128);
        // A case shorter than the cut warms on its own prompts (it crosses
        // the cut, if at all, at the same step as the measured run).
        assert_eq!(warm_prompt_len(300, Some(512)), 300);
    }
}
