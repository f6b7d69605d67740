//! `specula serve`: the built-in engine behind an SGLang- and vLLM-compatible HTTP server.

use super::CliError;
use crate::serve::engine::Engine;
use crate::serve::{serve, Fault};
use clap::Args;
use specula_engine::capture::CaptureChoice;
use specula_engine::capture::IdConvention;
use specula_engine::pair::ModelPair;
use specula_engine::speculative::SpeculativeConfig;
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
    /// EAGLE-3 draft folder; without it the server decodes plainly.
    #[arg(long)]
    draft: Option<PathBuf>,
    /// Draft depth; 0 = no speculation. Default: 5 with a draft, else 0.
    #[arg(long)]
    steps: Option<usize>,
    /// Branching per draft step (1 = a chain).
    #[arg(long, default_value_t = 1)]
    topk: usize,
    /// Tokens verified per step, root included. Default: steps * topk + 1.
    #[arg(long)]
    num_draft_tokens: Option<usize>,
    /// Aux-layer ids overriding the draft's eagle_config (comma-separated; -1 = embedding output).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    aux_layers: Option<Vec<i64>>,
    /// legacy or boundary: how layer ids map to captured residual streams.
    #[arg(long, default_value = "boundary")]
    id_convention: String,
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
    /// Test hook: never-healthy, garbage, stall or exit-after=N.
    #[arg(long, hide = true)]
    fault: Option<Fault>,
}

/// Runs `specula serve` (until the process is stopped).
pub fn run(a: ServeArgs) -> Result<(), CliError> {
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
    let capture = CaptureChoice {
        override_ids: a.aux_layers.clone(),
        convention,
    };
    let draft = if speculative.is_baseline() {
        None
    } else {
        a.draft.as_deref()
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
    )
    .map_err(CliError::Input)
}
