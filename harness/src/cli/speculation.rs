//! The speculation flags `generate` and `serve` share, as SGLang names
//! them, and what they resolve to: a checked [`SpeculativeConfig`] and the
//! [`CaptureChoice`] the draft is fed with.

use super::CliError;
use clap::Args;
use specula_engine::capture::{CaptureChoice, IdConvention};
use specula_engine::config::DraftKind;
use specula_engine::speculative::SpeculativeConfig;
use std::path::PathBuf;

/// The draft and how it speculates.
#[derive(Args, Debug, Clone)]
pub struct SpeculationArgs {
    /// EAGLE draft folder: EAGLE-3 or EAGLE-1/2, in any published layout (SGLang, SpecForge, vLLM, the EAGLE authors'; safetensors or pytorch_model.bin). Without it, plain decoding.
    #[arg(long)]
    pub draft: Option<PathBuf>,
    /// Draft depth (draft forwards per step); 0 = no speculation. Default: 5 with a draft, else 0.
    #[arg(long)]
    steps: Option<usize>,
    /// Branching per draft step (1 = a chain).
    #[arg(long, default_value_t = 1)]
    topk: usize,
    /// Tokens verified per step, root included (at most steps * topk + 1). Default: steps * topk + 1.
    #[arg(long)]
    num_draft_tokens: Option<usize>,
    /// Aux-layer ids overriding the draft's eagle_config (comma-separated; -1 = embedding output).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    aux_layers: Option<Vec<i64>>,
    /// How layer ids map to captured residual streams: legacy (id l -> entering layer l+1) or boundary (shift only when the first id is 1).
    #[arg(long, default_value = "boundary")]
    id_convention: String,
    /// Serve the draft as another generation, as SGLang's --speculative-algorithm does: eagle feeds the target's last hidden state (an EAGLE-3 draft then skips fc: SGLang's tau-of-1.0 misconfiguration); eagle3 feeds three aux states. Default: the draft's own.
    #[arg(long, value_parser = ["eagle", "eagle3"])]
    served_as: Option<String>,
}

/// What the speculation flags resolve to.
#[derive(Debug, Clone)]
pub struct Speculation {
    /// steps, topk, num_draft_tokens (the baseline without a draft).
    pub config: SpeculativeConfig,
    /// How the draft is fed.
    pub capture: CaptureChoice,
}

impl SpeculationArgs {
    /// Checks the flags: the tree must be possible, and speculating needs a draft.
    pub fn resolve(&self) -> Result<Speculation, CliError> {
        let convention: IdConvention = self.id_convention.parse()?;
        let steps = self
            .steps
            .unwrap_or(if self.draft.is_some() { 5 } else { 0 });
        let config = SpeculativeConfig::new(
            steps,
            self.topk,
            self.num_draft_tokens.unwrap_or(steps * self.topk + 1),
        )?;
        if !config.is_baseline() && self.draft.is_none() {
            return Err(CliError::Usage(format!(
                "--steps {steps} needs --draft (an EAGLE draft folder)"
            )));
        }
        Ok(Speculation {
            config,
            capture: CaptureChoice {
                override_ids: self.aux_layers.clone(),
                convention,
                served_as: match self.served_as.as_deref() {
                    Some("eagle") => Some(DraftKind::Eagle),
                    Some(_) => Some(DraftKind::Eagle3),
                    None => None,
                },
            },
        })
    }
}
