//! `specula serve`: the built-in engine behind an SGLang- and vLLM-compatible HTTP server.

use super::speculation::{Speculation, SpeculationArgs};
use super::CliError;
use clap::Args;
use specula::serve::engine::Engine;
use specula::serve::field_set::{Answers, FieldSet};
use specula::serve::{serve, InjectedFault, ServeLimits, ServeOptions};
use specula::sweep::progress::stderr_line;
use specula_engine::pair::ModelPair;
use specula_engine::tokenizer::TextTokenizer;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Port to listen on (0: one the system picks, named in the `listening on` line).
    #[arg(long)]
    port: u16,
    /// Model name in /v1/models and the `model` field requests must carry (default: --target as given).
    #[arg(long)]
    served_model_name: Option<String>,
    /// Threads answering HTTP (parsing, streaming; the engine has its own, --cpu-threads).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Requests generated together at most (those waiting when the engine is free, same sampling settings).
    #[arg(long, default_value_t = 16)]
    max_batch: usize,
    /// Largest request body in bytes (413 past it, judged from Content-Length before reading).
    #[arg(long, default_value_t = ServeLimits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Prompt tokens per request at most (400 past it). Default: the target's max_position_embeddings.
    #[arg(long)]
    max_prompt_tokens: Option<usize>,
    /// Take prompts whose positions run past the target's max_position_embeddings
    /// (positions the model never saw; to measure acceptance there) instead of
    /// answering 400; prompts are then bounded by --max-prompt-tokens alone.
    #[arg(long)]
    allow_past_context: bool,
    /// New tokens per request at most (400 past it; a prompt plus its new tokens must also fit max_position_embeddings).
    #[arg(long, default_value_t = ServeLimits::default().max_new_tokens)]
    max_new_tokens: usize,
    /// Open connections at most (one more is answered 503 and closed).
    #[arg(long, default_value_t = ServeLimits::default().max_connections)]
    max_connections: usize,
    /// Requests waiting for the engine at most (one more is answered 503).
    #[arg(long, default_value_t = ServeLimits::default().max_queue)]
    max_queue: usize,
    /// Seconds a client has to send a request head (also how long an idle keep-alive connection stays open) and, once it has, its body (408 past it).
    #[arg(long, default_value_t = ServeLimits::default().body_timeout.as_secs_f64())]
    read_timeout_s: f64,
    /// Field names of the answers: `current` (today's SGLang and vLLM) or
    /// `legacy` (their older names), to test clients against both.
    #[arg(long, value_enum, default_value_t = FieldSet::Current)]
    field_set: FieldSet,
    /// vLLM's per-request speculative metrics (`metrics.speculative_decoding`
    /// in each answer, on the last streamed chunk): `summary`.
    #[arg(long, value_parser = ["summary"])]
    per_request_spec_decode_metrics: Option<String>,
    /// Test hook: never-healthy, garbage, stall, impossible, panic-in-parse, panic-in-engine or exit-after=N.
    #[arg(long, hide = true)]
    fault: Option<InjectedFault>,
}

/// Runs `specula serve` (until the process is stopped) with the engine's
/// kernels on `cpu_threads` threads.
pub fn run(a: ServeArgs, cpu_threads: Option<usize>) -> Result<(), CliError> {
    if !(a.read_timeout_s > 0.0 && a.read_timeout_s.is_finite()) {
        return Err(CliError::Usage(format!(
            "--read-timeout-s {}: must be a positive number of seconds",
            a.read_timeout_s
        )));
    }
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
        stderr_line(&format!(
            "specula serve: capture points {}",
            c.points_label()
        ));
    }
    let name = a
        .served_model_name
        .unwrap_or_else(|| a.target.display().to_string());
    let tokenizer = TextTokenizer::load(&a.target)?;
    let mut engine = Engine::new(pair, tokenizer, speculative, name, a.max_prompt_tokens);
    if a.allow_past_context {
        engine.allow_past_context(a.max_prompt_tokens);
    }
    engine.answers = Answers {
        fields: a.field_set,
        per_request_metrics: a.per_request_spec_decode_metrics.is_some(),
    };
    let read_timeout = Duration::from_secs_f64(a.read_timeout_s);
    let limits = ServeLimits {
        max_body_bytes: a.max_body_bytes,
        header_timeout: read_timeout,
        body_timeout: read_timeout,
        max_connections: a.max_connections,
        max_queue: a.max_queue,
        max_new_tokens: a.max_new_tokens,
        ..ServeLimits::default()
    };
    let options = ServeOptions {
        addr: format!("{}:{}", a.host, a.port),
        http_threads: a.threads,
        cpu_threads,
        max_batch: a.max_batch,
        limits,
        fault: a.fault,
    };
    serve(engine, options)?;
    Ok(())
}
