//! `specula audit`: is this draft fed the hidden states it was trained on?

use super::output::outln;
use super::CliError;
use clap::Args;
use serde_json::json;
use specula_datasets::PromptSetSpec;
use specula_engine::audit::{candidate_mappings, rank_mappings, static_checks, Check, CheckStatus};
use specula_engine::capture::{CaptureChoice, IdConvention};
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::model::{Eagle3Draft, TargetModel};
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;
use specula_engine::tokenizer::TextTokenizer;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 nothing found, 1 a capture mismatch or a failed static check, 2 unusable input.\n\nExamples:\n  specula audit --target models/tiny-llama --draft models/tiny-llama/eagle3\n  specula audit --target models/tiny-llama --draft models/tiny-llama/eagle3-embed --aux-layers 2,4,5 --json"
)]
pub struct AuditArgs {
    /// Target model folder.
    #[arg(long)]
    target: PathBuf,
    /// EAGLE-3 draft folder.
    #[arg(long)]
    draft: PathBuf,
    /// Prompts to measure on: a prompt file (MT-bench, Spec-Bench, GSM8K, HumanEval, JSONL or text) or `builtin`.
    #[arg(long, default_value = "builtin")]
    prompts: String,
    /// Prompts drawn from the set (deterministic sample).
    #[arg(long, default_value_t = 8)]
    samples: usize,
    /// Tokens the target generates greedily after each prompt; the draft is scored on prompt + continuation.
    #[arg(long, default_value_t = 48)]
    tokens: usize,
    /// The ids the serving engine uses (comma-separated; -1 = embeddings). Default: the draft config's.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    aux_layers: Option<Vec<i64>>,
    /// How the serving engine reads ids: legacy or boundary.
    #[arg(long, default_value = "boundary")]
    id_convention: String,
    /// Accuracy by which the best mapping must beat the served one to call it a mismatch.
    #[arg(long, default_value_t = 0.05)]
    margin: f64,
    /// Print one JSON object (fields: mismatch, configured, best, candidates,
    /// margin, fix {aux_layer_ids, id_convention, points} or null, static_checks, prompts, positions).
    #[arg(long)]
    json: bool,
}

/// Runs `specula audit`; `Ok(true)` when something was found.
pub fn run(a: AuditArgs) -> Result<bool, CliError> {
    let convention: IdConvention = a.id_convention.parse()?;
    let checks = static_checks(&a.target, &a.draft);
    let failed_checks = checks.iter().any(|c| c.status == CheckStatus::Error);
    if failed_checks {
        // The pair cannot be loaded as it is: report the checks and stop there.
        if a.json {
            let out = json!({"mismatch": null, "empirical": "skipped: a static check failed", "static_checks": checks});
            outln!(
                "{}",
                serde_json::to_string_pretty(&out).expect("serialisable")
            );
        } else {
            print_checks(&checks);
            outln!("\nthe capture-mapping check is skipped: fix the failed static checks first");
        }
        return Ok(true);
    }
    let target = TargetModel::load(&a.target)?;
    let tokenizer = TextTokenizer::load(&a.target)?;
    let draft = Eagle3Draft::load(&a.draft, target.config(), target.embedding())?;
    let layers = target.config().num_hidden_layers;
    let served = CaptureChoice {
        override_ids: a.aux_layers.clone(),
        convention,
        ..CaptureChoice::default()
    }
    .resolve(draft.config().aux_layer_ids.as_deref(), layers)?;
    let spec = if a.prompts == "builtin" {
        PromptSetSpec::builtin()
    } else {
        PromptSetSpec::from_path(&a.prompts)
    };
    let set = spec.with_sample(a.samples, 0).load()?;
    let prompts: Vec<Vec<u32>> = set
        .prompts
        .iter()
        .map(|p| tokenizer.encode(p.text()))
        .collect::<Result<_, _>>()?;
    let params = GenerateParams {
        speculative: SpeculativeConfig::BASELINE,
        temperature: 0.0,
        max_new_tokens: a.tokens.max(1),
        seed: 0,
        sequence_seeds: None,
        ignore_eos: true,
        synthetic: None,
    };
    let g = generate(&target, &prompts, &params, None, &mut NullRecorder)?;
    let sequences: Vec<Vec<u32>> = prompts
        .iter()
        .zip(&g.sequences)
        .map(|(p, s)| [p.clone(), s.output.clone()].concat())
        .collect();
    let candidates = candidate_mappings(&served, draft.config().aux_layer_ids.as_deref(), layers);
    let audit = rank_mappings(&target, &draft, &sequences, candidates, &served, a.margin);
    if a.json {
        let out = json!({
            "mismatch": audit.mismatch,
            "configured": audit.configured,
            "best": audit.best,
            "candidates": audit.candidates,
            "margin": audit.margin,
            "fix": audit.fix,
            "static_checks": checks,
            "prompts": set.len(),
            "positions": audit.best.positions,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
        return Ok(audit.mismatch);
    }
    print_checks(&checks);
    outln!("\ndraft accuracy (teacher-forced first step, {} positions from {} prompts) per capture mapping:", audit.best.positions, set.len());
    for c in &audit.candidates {
        let tag = if c.points == audit.configured.points {
            "  <- served"
        } else {
            ""
        };
        outln!(
            "  {:>6.1}%  {:<14} {}{tag}",
            c.accuracy * 100.0,
            points(&c.points),
            c.label
        );
    }
    if audit.mismatch {
        outln!(
            "\nMISMATCH: the draft predicts best with capture points {} ({:.1}%), but is served {} ({:.1}%).",
            points(&audit.best.points),
            audit.best.accuracy * 100.0,
            points(&audit.configured.points),
            audit.configured.accuracy * 100.0,
        );
        match &audit.fix {
            Some(fix) if fix.id_convention != convention => outln!(
                "fix: {fix} (the {} convention cannot express these points)",
                convention.name()
            ),
            Some(fix) => outln!("fix: {fix}"),
            None => outln!("fix: no layer ids express these points"),
        }
    } else {
        outln!(
            "\nno capture mismatch: the served mapping {} is the best or within {:.0} points of it",
            points(&audit.configured.points),
            a.margin * 100.0
        );
    }
    Ok(audit.mismatch)
}

/// Capture points as `[0, 2, 4]`.
fn points(p: &[usize]) -> String {
    let items: Vec<String> = p.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn print_checks(checks: &[Check]) {
    outln!("static checks:");
    for c in checks {
        let mark = match c.status {
            CheckStatus::Pass => "ok  ",
            CheckStatus::Warn => "WARN",
            CheckStatus::Error => "FAIL",
        };
        outln!("  {mark} {:<15} {}", c.name, c.message);
    }
}
