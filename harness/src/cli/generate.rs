//! `specula generate`: one prompt through the engine, with tau and span times.

use super::CliError;
use clap::Args;
use serde_json::json;
use specula_engine::capture::CaptureChoice;
use specula_engine::capture::IdConvention;
use specula_engine::generate::GenerateParams;
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::{HostRecorder, Span};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  specula generate --target m/target --prompt 'def fib(n):'\n  specula generate --target m/target --draft m/draft --steps 5 --prompt 'Question: ...' --json\n  specula generate --target m/target --draft m/draft --aux-layers -1,2,4 --id-convention boundary --prompt hi"
)]
pub struct GenerateArgs {
    /// Target model folder (config.json, *.safetensors, tokenizer.json).
    #[arg(long)]
    target: PathBuf,
    /// EAGLE-3 draft folder (SGLang/SpecForge layout). Without it, plain decoding.
    #[arg(long)]
    draft: Option<PathBuf>,
    /// The prompt text (tokenized with the target's tokenizer.json, no chat template).
    #[arg(long)]
    prompt: String,
    /// Draft depth (draft forwards per step); 0 = no speculation. Default: 5 with a draft, else 0.
    #[arg(long)]
    steps: Option<usize>,
    /// Branching per draft step (1 = a chain).
    #[arg(long, default_value_t = 1)]
    topk: usize,
    /// Tokens verified per step, root included (at most steps * topk + 1). Default: steps * topk + 1.
    #[arg(long)]
    num_draft_tokens: Option<usize>,
    /// Sampling temperature; 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    max_new_tokens: usize,
    /// Aux-layer ids overriding the draft's eagle_config (comma-separated; -1 = embedding output).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    aux_layers: Option<Vec<i64>>,
    /// How layer ids map to captured residual streams: legacy (id l -> entering layer l+1) or boundary (shift only when the first id is 1).
    #[arg(long, default_value = "boundary")]
    id_convention: String,
    /// Seed of the sampling streams.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Keep generating past the end-of-sequence token.
    #[arg(long)]
    ignore_eos: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `specula generate`.
pub fn run(a: GenerateArgs) -> Result<(), CliError> {
    let convention: IdConvention = a.id_convention.parse()?;
    let steps = a.steps.unwrap_or(if a.draft.is_some() { 5 } else { 0 });
    let speculative = SpeculativeConfig::new(
        steps,
        a.topk,
        a.num_draft_tokens.unwrap_or(steps * a.topk + 1),
    )?;
    if !speculative.is_baseline() && a.draft.is_none() {
        return Err(CliError::Input(format!(
            "--steps {steps} needs --draft (an EAGLE-3 draft folder)"
        )));
    }
    if !(a.temperature >= 0.0 && a.temperature.is_finite()) {
        return Err(CliError::Input(format!(
            "--temperature {}: must be a finite number >= 0",
            a.temperature
        )));
    }
    let capture = CaptureChoice {
        override_ids: a.aux_layers.clone(),
        convention,
    };
    let mut pair = ModelPair::load(&a.target, a.draft.as_deref(), &capture)?;
    let prompt = pair.tokenizer.encode(&a.prompt)?;
    let params = GenerateParams {
        speculative,
        temperature: a.temperature,
        max_new_tokens: a.max_new_tokens,
        seed: a.seed,
        ignore_eos: a.ignore_eos,
        synthetic: None,
    };
    let mut rec = HostRecorder::default();
    let g = pair.generate(std::slice::from_ref(&prompt), &params, &mut rec)?;
    let seq = &g.sequences[0];
    let text = pair.tokenizer.decode(&seq.output)?;
    let step_ns: u64 = Span::ALL
        .iter()
        .filter(|s| **s != Span::Prefill)
        .map(|s| rec.log.total(*s).as_nanos() as u64)
        .sum();
    let spans: serde_json::Map<String, serde_json::Value> = Span::ALL
        .iter()
        .filter(|s| rec.log.count(**s) > 0)
        .map(|&s| {
            let total = rec.log.total(s);
            let count = rec.log.count(s);
            let share = if s == Span::Prefill || step_ns == 0 { None } else { Some(total.as_nanos() as f64 / step_ns as f64) };
            (s.name().to_string(), json!({"count": count, "total_ms": total.as_secs_f64() * 1e3, "mean_us": total.as_secs_f64() * 1e6 / count as f64, "share_of_step": share}))
        })
        .collect();
    let capture_json = pair.capture().map(|c| json!(c));
    if a.json {
        let out = json!({
            "text": text,
            "token_ids": seq.output,
            "prompt_tokens": prompt.len(),
            "output_tokens": seq.output.len(),
            "finish": seq.finish,
            "speculative": speculative,
            "temperature": a.temperature,
            "tau": g.tau(),
            "verify_steps": g.verify_steps(),
            "accept_rate": g.accept_rate(),
            "per_position_acceptance": g.per_position_acceptance(),
            "capture_layers": pair.capture().map(|c| c.points.clone()),
            "capture": capture_json,
            "prefill_s": g.prefill_s,
            "decode_s": g.decode_s,
            "decode_tok_s": g.decode_throughput(),
            "spans": spans,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
        return Ok(());
    }
    println!("{text}");
    println!("---");
    println!(
        "{speculative}  temperature {}  prompt {} tokens  output {} tokens ({:?})",
        a.temperature,
        prompt.len(),
        seq.output.len(),
        seq.finish
    );
    if let Some(c) = pair.capture() {
        println!("capture: {c}");
    }
    println!(
        "tau {:.2} over {} verify steps, accept rate {:.3}, decode {:.1} tok/s",
        g.tau(),
        g.verify_steps(),
        g.accept_rate(),
        g.decode_throughput()
    );
    if !speculative.is_baseline() {
        let pos: Vec<String> = g
            .per_position_acceptance()
            .iter()
            .map(|a| format!("{a:.2}"))
            .collect();
        println!("per-position acceptance: [{}]", pos.join(", "));
    }
    println!(
        "{:<11} {:>6} {:>10} {:>10} {:>7}",
        "span", "count", "total ms", "mean us", "share"
    );
    for (name, v) in &spans {
        let share = v["share_of_step"]
            .as_f64()
            .map_or("-".to_string(), |s| format!("{:.1}%", s * 100.0));
        println!(
            "{:<11} {:>6} {:>10.2} {:>10.1} {:>7}",
            name,
            v["count"],
            v["total_ms"].as_f64().unwrap_or(0.0),
            v["mean_us"].as_f64().unwrap_or(0.0),
            share
        );
    }
    Ok(())
}
