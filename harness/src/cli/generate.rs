//! `specula generate`: one prompt through the engine, with tau and span times.

use super::output::outln;
use super::speculation::{Speculation, SpeculationArgs};
use super::CliError;
use clap::Args;
use serde_json::json;
use specula_engine::generate::GenerateParams;
use specula_engine::pair::ModelPair;
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
    /// The prompt text (tokenized with the target's tokenizer.json, no chat template).
    #[arg(long)]
    prompt: String,
    #[command(flatten)]
    speculation: SpeculationArgs,
    /// Sampling temperature; 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    max_new_tokens: usize,
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
    let Speculation {
        config: speculative,
        capture,
    } = a.speculation.resolve()?;
    if !(a.temperature >= 0.0 && a.temperature.is_finite()) {
        return Err(CliError::Usage(format!(
            "--temperature {}: must be a finite number >= 0",
            a.temperature
        )));
    }
    let mut pair = ModelPair::load(&a.target, a.speculation.draft.as_deref(), &capture)?;
    let prompt = pair.tokenizer.encode(&a.prompt)?;
    let params = GenerateParams {
        speculative,
        temperature: a.temperature,
        max_new_tokens: a.max_new_tokens,
        seed: a.seed,
        sequence_seeds: None,
        ignore_eos: a.ignore_eos,
        synthetic: None,
        ..GenerateParams::default()
    };
    let mut rec = HostRecorder::default();
    let g = pair.generate(std::slice::from_ref(&prompt), &params, &mut rec)?;
    let seq = &g.sequences[0];
    let text = pair.tokenizer.decode(&seq.output)?;
    let step_ns: u64 = Span::ALL
        .iter()
        .filter(|s| !s.per_call())
        .map(|s| rec.log.total(*s).as_nanos() as u64)
        .sum();
    let spans: serde_json::Map<String, serde_json::Value> = Span::ALL
        .iter()
        .filter(|s| rec.log.count(**s) > 0)
        .map(|&s| {
            let total = rec.log.total(s);
            let count = rec.log.count(s);
            let share = if s.per_call() || step_ns == 0 { None } else { Some(total.as_nanos() as f64 / step_ns as f64) };
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
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
        return Ok(());
    }
    outln!("{text}");
    outln!("---");
    outln!(
        "{speculative}  temperature {}  prompt {} tokens  output {} tokens (finish reason: {})",
        a.temperature,
        prompt.len(),
        seq.output.len(),
        seq.finish
    );
    if let Some(c) = pair.capture() {
        outln!("capture: {c}");
    }
    if let Some(note) = pair
        .drafter
        .as_ref()
        .and_then(|d| d.model().config().capture_note())
    {
        outln!("note: {note}");
    }
    outln!(
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
        outln!("per-position acceptance: [{}]", pos.join(", "));
    }
    outln!(
        "{:<11} {:>6} {:>10} {:>10} {:>7}",
        "span",
        "count",
        "total ms",
        "mean us",
        "share"
    );
    for (name, v) in &spans {
        let share = v["share_of_step"]
            .as_f64()
            .map_or("-".to_string(), |s| format!("{:.1}%", s * 100.0));
        outln!(
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
