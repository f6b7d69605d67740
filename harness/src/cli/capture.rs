//! `specula capture`: record a target's residual streams and greedy tokens
//! to a capture file, for `specula audit --states`.

use super::output::{errln, outln};
use super::CliError;
use clap::Args;
use specula::capture::CapturePlan;
use specula_datasets::PromptSetSpec;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "The file holds, per prompt, the tokens (prompt + the target's greedy continuation), the \
target's greedy choice after each token, and the residual stream at each stored boundary (boundary p = \
Hugging Face hidden_states[p], 0 = the embedding output), in bfloat16 (docs/DESIGN.md 5.1). \
For a target this engine cannot load (DeepSeek-V3, Kimi-K2.5, any Hugging Face model), write the same \
file with tools/capture/capture_hf.py.\n\n\
Size: prompts x tokens x boundaries x hidden x 2 bytes (8 prompts of 100 tokens, 61 boundaries of 7168: 700 MB).\n\n\
Exit codes: 0 written, 1 the file could not be written, 2 unusable input (an existing --out, a bad model or prompt file).\n\n\
Examples:\n  specula capture --target models/tiny-llama --out tiny.capture.safetensors\n  \
specula capture --target models/tiny-llama --prompts prompts.jsonl --boundaries 0,2,4,5 --out c.safetensors\n  \
specula audit --states tiny.capture.safetensors --draft models/tiny-llama/eagle3-embed"
)]
pub struct CaptureArgs {
    /// Target model folder (config.json, weights, tokenizer.json).
    #[arg(long)]
    target: PathBuf,
    /// Prompts: a prompt file (MT-bench, Spec-Bench, GSM8K, HumanEval, JSONL or text) or `builtin`.
    #[arg(long, default_value = "builtin")]
    prompts: String,
    /// Prompts drawn from the set (the audit's deterministic sample); 0 = every prompt.
    #[arg(long, default_value_t = 8)]
    samples: usize,
    /// Tokens the target generates greedily after each prompt (EOS does not stop it).
    #[arg(long, default_value_t = 48)]
    max_new_tokens: usize,
    /// Boundaries to store, comma-separated (0 is always stored). Default: every one, 0 to L-1.
    #[arg(long, value_delimiter = ',')]
    boundaries: Option<Vec<usize>>,
    /// The capture file to write (refused if it exists).
    #[arg(long)]
    out: PathBuf,
}

/// Runs `specula capture`.
pub fn run(a: CaptureArgs) -> Result<(), CliError> {
    let spec = if a.prompts == "builtin" {
        PromptSetSpec::builtin()
    } else {
        PromptSetSpec::from_path(&a.prompts)
    };
    let plan = CapturePlan {
        target: a.target,
        prompts: if a.samples == 0 {
            spec
        } else {
            spec.with_sample(a.samples, 0)
        },
        boundaries: a.boundaries,
        max_new_tokens: a.max_new_tokens.max(1),
        out: a.out,
    };
    let s = plan.run(|done, total, tokens| {
        errln!(
            "capture: prompt {done}/{total} ({tokens} tokens) -> {}",
            plan.out.display()
        );
    })?;
    outln!(
        "wrote {} prompts, {} tokens, boundaries {:?}, {:.1} MB to {}",
        s.prompts,
        s.tokens,
        s.boundaries,
        s.bytes as f64 / 1e6,
        plan.out.display()
    );
    Ok(())
}
