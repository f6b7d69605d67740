//! `specula audit`: is this draft fed the hidden states it was trained on?

use super::output::outln;
use super::CliError;
use clap::Args;
use serde_json::json;
use specula::probe::{probe_run, ProbeRow};
use specula_datasets::PromptSetSpec;
use specula_engine::audit::{
    add_engine_candidates, candidate_mappings, check_capture_fits, engine_feeds,
    load_draft_on_states, rank_mappings, score_engines, static_checks, static_checks_for, Check,
    CheckStatus, EngineScore, TargetFacts,
};
use specula_engine::capture::{CaptureChoice, IdConvention};
use specula_engine::capture_file::{
    record_prompts, CaptureFile, CaptureMeta, MemoryStates, RecordSettings, StatesSource,
};
use specula_engine::config::{read_json, DraftConfig};
use specula_engine::model::TargetModel;
use specula_engine::tokenizer::TextTokenizer;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    after_help = "The draft is scored on the target's hidden states: recorded here by loading the target \
(--target, a model this engine runs), or read from a capture file (--states, written by `specula capture` \
or tools/capture/capture_hf.py for any Hugging Face model, DeepSeek-V3 and Kimi-K2.5 included); the two \
give the same accuracies for the same prompts.\n\n\
Exit codes: 0 nothing found, 1 a capture mismatch or a failed static check, 2 unusable input \
(a bad model folder, or a capture file that is truncated, of another model, without the boundaries the draft needs, or holding NaN).\n\n\
Examples:\n  specula audit --target models/tiny-llama --draft models/tiny-llama/eagle3\n  \
specula audit --target models/tiny-llama --draft models/tiny-llama/eagle3-embed --aux-layers 2,4,5 --json\n  \
specula audit --states kimi.capture.safetensors --draft kimi-eagle3"
)]
pub struct AuditArgs {
    /// Target model folder, loaded to record its hidden states (or give --states).
    #[arg(long, required_unless_present = "states", conflicts_with = "states")]
    target: Option<PathBuf>,
    /// A capture file of the target's hidden states (`specula capture`,
    /// tools/capture/capture_hf.py): audit without loading the target.
    #[arg(long)]
    states: Option<PathBuf>,
    /// EAGLE-3 draft folder.
    #[arg(long)]
    draft: PathBuf,
    /// Prompts to measure on (with --target): a prompt file (MT-bench, Spec-Bench, GSM8K, HumanEval, JSONL or text) or `builtin`.
    #[arg(long, default_value = "builtin", conflicts_with = "states")]
    prompts: String,
    /// Prompts drawn from the set (deterministic sample; with --target).
    #[arg(long, default_value_t = 8, conflicts_with = "states")]
    samples: usize,
    /// Tokens the target generates greedily after each prompt; the draft is scored on prompt + continuation (with --target).
    #[arg(long, default_value_t = 48, conflicts_with = "states")]
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
    /// A served sweep run (sglang or vllm rows, greedy, with per-position acceptance): say which
    /// mapping its server feeds the draft, from the a_1 it measured against each mapping's prediction.
    #[arg(long, value_name = "RUN_DIR")]
    probe: Option<PathBuf>,
    /// How far a measured a_1 may be from a mapping's prediction and still be consistent with it.
    #[arg(long, default_value_t = 0.1)]
    probe_tolerance: f64,
    /// Print one JSON object (fields: mismatch, configured, best, candidates, not_captured, engines,
    /// margin, fix {aux_layer_ids, id_convention, points} or null, static_checks, states, prompts, positions,
    /// probe: one entry per probed row, or null).
    #[arg(long)]
    json: bool,
}

/// The target's states recorded in process, every boundary of every prompt.
fn record_in_process(a: &AuditArgs, target_dir: &Path) -> Result<MemoryStates, CliError> {
    let target = TargetModel::load(target_dir)?;
    let tokenizer = TextTokenizer::load(target_dir)?;
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
    let config_path = target_dir.join("config.json");
    let config: serde_json::Value =
        read_json(&config_path, "config.json (the target model config)")?;
    let meta = CaptureMeta::for_target(
        &config,
        "specula audit (in process)",
        "float32",
        None,
        &config_path,
    )?;
    let settings = RecordSettings {
        max_new_tokens: a.tokens.max(1),
        boundaries: meta.boundaries.clone(),
    };
    let mut states = MemoryStates {
        meta,
        prompts: Vec::new(),
    };
    record_prompts(&target, &prompts, &settings, |_, p| {
        states.prompts.push(p);
        Ok(())
    })?;
    Ok(states)
}

/// Runs `specula audit`; `Ok(true)` when something was found.
pub fn run(a: AuditArgs) -> Result<bool, CliError> {
    let convention: IdConvention = a.id_convention.parse()?;
    let file = a.states.as_deref().map(CaptureFile::open).transpose()?;
    if let Some(f) = &file {
        check_capture_fits(&a.draft, f)?;
    }
    let (checks, layers) = match (&file, &a.target) {
        (Some(f), _) => (
            static_checks_for(&TargetFacts::from_capture(f.meta()), &a.draft),
            f.meta().num_hidden_layers,
        ),
        (None, Some(t)) => (
            static_checks(t, &a.draft),
            TargetFacts::from_dir(t)?.num_hidden_layers,
        ),
        (None, None) => return Err(CliError::Usage("give --target or --states".into())),
    };
    if checks.iter().any(Check::blocks_loading) {
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
    let draft_ids = DraftConfig::load(&a.draft)?.aux_layer_ids;
    // Any other field of the choice (how the draft is served) keeps its default.
    #[allow(clippy::needless_update)]
    let choice = CaptureChoice {
        override_ids: a.aux_layers.clone(),
        convention,
        ..CaptureChoice::default()
    };
    let served = choice.resolve(draft_ids.as_deref(), layers)?;
    let memory;
    let source: &dyn StatesSource = match (&file, &a.target) {
        (Some(f), _) => f,
        (None, Some(t)) => {
            memory = record_in_process(&a, t)?;
            &memory
        }
        (None, None) => unreachable!("checked above"),
    };
    let d = load_draft_on_states(&a.draft, source)?;
    let mut candidates = candidate_mappings(&served, draft_ids.as_deref(), layers);
    let raw: serde_json::Value = read_json(
        &a.draft.join("config.json"),
        "config.json (the draft config)",
    )?;
    let feeds = engine_feeds(&raw, layers);
    add_engine_candidates(&feeds, &mut candidates);
    let audit = rank_mappings(&d, source, candidates, &served, a.margin)?;
    let engines = score_engines(feeds, &audit);
    let probe = a
        .probe
        .as_deref()
        .map(|run| probe_run(run, &audit, a.probe_tolerance))
        .transpose()?;
    let misfed = probe.iter().flatten().any(|r| !r.feeds_configured);
    let failed_checks = checks.iter().any(|c| c.status == CheckStatus::Error);
    let states = json!({"origin": source.origin(), "writer": source.meta().writer, "boundaries": source.meta().boundaries});
    if a.json {
        let out = json!({
            "mismatch": audit.mismatch,
            "configured": audit.configured,
            "best": audit.best,
            "candidates": audit.candidates,
            "not_captured": audit.not_captured,
            "engines": engines,
            "probe": probe,
            "margin": audit.margin,
            "fix": audit.fix,
            "static_checks": checks,
            "states": states,
            "prompts": source.prompt_count(),
            "positions": audit.best.positions,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
        return Ok(audit.mismatch || failed_checks || misfed);
    }
    print_checks(&checks);
    outln!(
        "\nstates: {} (written by {})",
        source.origin(),
        source.meta().writer
    );
    outln!("draft accuracy (teacher-forced first step, {} positions from {} prompts) per capture mapping:", audit.best.positions, source.prompt_count());
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
    for c in &audit.not_captured {
        outln!(
            "     -    {:<14} {} (not in the capture)",
            points(&c.points),
            c.label
        );
    }
    print_engines(&engines);
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
    if let (Some(rows), Some(run)) = (&probe, &a.probe) {
        print_probe(rows, run, a.probe_tolerance);
    }
    Ok(audit.mismatch || failed_checks || misfed)
}

/// What each probed row says about the mapping its server feeds.
fn print_probe(rows: &[ProbeRow], run: &Path, tolerance: f64) {
    outln!("\nprobe of {} (a_1 against each mapping's first-step accuracy on generated tokens, tolerance {tolerance}):", run.display());
    for r in rows {
        let verdict = if r.feeds_configured {
            format!(
                "consistent with the configured {}",
                points(&r.configured.points)
            )
        } else {
            format!(
                "NOT the configured {} (predicts {:.3}): the server most likely feeds {} ({}, predicts {:.3})",
                points(&r.configured.points),
                r.configured.a1,
                points(&r.closest.points),
                r.closest.label,
                r.closest.a1
            )
        };
        outln!(
            "  {} ({}): a_1 {:.3}, {verdict}",
            r.row_key,
            r.backend,
            r.a1
        );
    }
}

/// What each engine would feed the draft, and whether that mis-serves it.
fn print_engines(engines: &[EngineScore]) {
    outln!("\nwhat each engine would feed this draft (DESIGN 5.3):");
    for e in engines {
        let fed = match (&e.feed.points, &e.feed.problem) {
            (Some(p), _) => points(p),
            (None, Some(why)) => format!("nothing usable: {why}"),
            (None, None) => "nothing usable".into(),
        };
        let verdict = match (e.mis_serves, e.accuracy) {
            (Some(true), Some(a)) => format!("{:.1}%  MIS-SERVES", a * 100.0),
            (Some(true), None) => "MIS-SERVES".into(),
            (Some(false), Some(a)) => format!("{:.1}%  ok", a * 100.0),
            _ => "not in the capture".into(),
        };
        outln!(
            "  {:<30} {:<14} {verdict}  (ids from {})",
            e.feed.engine.name(),
            fed,
            e.feed.ids_from
        );
    }
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
