//! `specula serve`: the built-in engine behind an SGLang- and vLLM-compatible HTTP server.

use super::speculation::{Speculation, SpeculationArgs};
use super::CliError;
use clap::Args;
use specula::serve::engine::Engine;
use specula::serve::{serve, InjectedFault};
use specula_engine::pair::ModelPair;
use specula_engine::tokenizer::TextTokenizer;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  specula serve --target models/tiny-llama --port 30000
  specula serve --target models/tiny-llama --draft models/tiny-llama/eagle3 --steps 5 --port 30000
  curl -s localhost:30000/generate -d '{\"text\": \"def f(x):\", \"sampling_params\": {\"max_new_tokens\": 16, \"temperature\": 0}}'
  curl -s localhost:30000/v1/completions -d '{\"prompt\": \"def f(x):\", \"max_tokens\": 16, \"temperature\": 0}'
  curl -s localhost:30000/metrics")]
pub struct ServeArgs {
    /// Target model folder (config.json, *.safetensors, tokenizer.json).
    #[arg(long)]
    target: PathBuf,
    #[command(flatten)]
    speculation: SpeculationArgs,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on.
    #[arg(long)]
    port: u16,
    /// Model name in /v1/models and the `model` field requests must carry (default: --target as given).
    #[arg(long)]
    served_model_name: Option<String>,
    /// HTTP threads: at most this many requests are taken in at once (and batched).
    #[arg(long, default_value_t = 16)]
    threads: usize,
    /// Requests generated together at most (those waiting when the engine is free, same sampling settings).
    #[arg(long, default_value_t = 16)]
    max_batch: usize,
    /// Test hook: never-healthy, garbage, stall, impossible or exit-after=N.
    #[arg(long, hide = true)]
    fault: Option<InjectedFault>,
}

/// Runs `specula serve` (until the process is stopped).
pub fn run(a: ServeArgs) -> Result<(), CliError> {
    let Speculation {
        config: speculative,
        capture,
    } = a.speculation.resolve()?;
    let draft = if speculative.is_baseline() {
        None
    } else {
        a.speculation.draft.as_deref()
    };
    let pair = ModelPair::load(&a.target, draft, &capture)?;
    if let Some(c) = pair.capture() {
        eprintln!("specula serve: capture points {}", c.points_label());
    }
    let name = a
        .served_model_name
        .unwrap_or_else(|| a.target.display().to_string());
    let tokenizer = TextTokenizer::load(&a.target)?;
    let engine = Engine::new(pair, tokenizer, speculative, name);
    serve(
        engine,
        a.fault,
        &format!("{}:{}", a.host, a.port),
        a.threads,
        a.max_batch,
    )?;
    Ok(())
}
