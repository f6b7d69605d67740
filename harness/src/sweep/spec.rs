//! The sweep spec: a TOML file naming model pairs, draft configs, batch
//! sizes, prompt sets and temperatures, plus the CLI flags that override its
//! fields. Every error names the file and the line (`spec.toml:12:1: ...`).

use super::device::EngineDevice;
use super::spec_source::top_level_span;
pub use super::spec_source::{SpecError, SpecSource};
pub use super::values::{ChatTemplateMode, OneOrMany};
use crate::remote::{EngineKind, ServerSpec};
pub use crate::run_folder::SpanMode;
use serde::{Deserialize, Serialize};
use specula_datasets::PromptSetSpec;
use specula_engine::capture::IdConvention;
use specula_engine::config::DraftKind;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// One model pair: a target and, optionally, its EAGLE-3 draft.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Name in row keys and tables; default: the target folder's name (its parent's when it is called `target`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Target folder (config.json, safetensors, tokenizer.json).
    pub target: PathBuf,
    /// EAGLE-3 draft folder; without it only baselines run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<PathBuf>,
    /// `auto` (the target's chat template when it has one) or `none`.
    #[serde(default)]
    pub chat_template: ChatTemplateMode,
}

impl ModelSpec {
    /// The name used in row keys.
    pub fn resolved_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        let file = |p: &Path| p.file_name().map(|s| s.to_string_lossy().into_owned());
        match file(&self.target) {
            Some(f) if f == "target" => self.target.parent().and_then(file).unwrap_or(f),
            Some(f) => f,
            None => self.target.display().to_string(),
        }
    }
}

/// A family of draft configs: every list field is crossed with the others.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftSpec {
    /// Draft depth(s); 0 is the baseline, which runs anyway.
    pub steps: OneOrMany<usize>,
    /// Branching per step (1 = a chain).
    #[serde(default = "one_topk")]
    pub topk: OneOrMany<usize>,
    /// Tokens verified per step, root included; default `steps * topk + 1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_draft_tokens: Option<OneOrMany<usize>>,
    /// Aux-layer ids overriding the draft's `eagle_config` (-1 = embedding output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aux_layers: Option<Vec<i64>>,
    /// `legacy` or `boundary` (default): how the ids map to capture points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_convention: Option<String>,
    /// `eagle` or `eagle3`: the algorithm the draft is served with (SGLang's
    /// `--speculative-algorithm`); default the draft's own generation. An
    /// EAGLE-3 draft served as `eagle` is fed the target's last hidden state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_as: Option<String>,
    /// The speculative method(s) the server runs, crossed with the other
    /// lists (`{method}` in the `[server]` command; [`crate::remote::methods`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<OneOrMany<String>>,
}

fn one_topk() -> OneOrMany<usize> {
    OneOrMany(vec![1])
}

impl DraftSpec {
    /// The algorithm the draft is served with, parsed (`None`: its own).
    pub fn served_as(&self) -> Result<Option<DraftKind>, String> {
        match self.served_as.as_deref() {
            None => Ok(None),
            Some("eagle") => Ok(Some(DraftKind::Eagle)),
            Some("eagle3") => Ok(Some(DraftKind::Eagle3)),
            Some(s) => Err(format!("served_as {s:?}: expected eagle or eagle3")),
        }
    }

    /// The id convention, parsed (default boundary).
    pub fn convention(&self) -> Result<IdConvention, String> {
        match &self.id_convention {
            None => Ok(IdConvention::default()),
            Some(s) => s
                .parse()
                .map_err(|_| format!("id_convention {s:?}: expected legacy or boundary")),
        }
    }
}

/// The whole sweep, as read from TOML (field docs are in `bench/sweeps/default.toml`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Sweep name: the run id starts with it.
    #[serde(default = "default_name")]
    pub name: String,
    /// Seed of the sampling streams (repeat `r` uses `seed + r`).
    #[serde(default)]
    pub seed: u64,
    /// Tokens generated per prompt at most.
    #[serde(default = "default_max_new_tokens")]
    pub max_new_tokens: usize,
    /// Keep generating past end-of-sequence (fixed-length rows).
    #[serde(default)]
    pub ignore_eos: bool,
    /// Rows per grid point (each with its own baseline).
    #[serde(default = "default_repeats")]
    pub repeats: usize,
    /// Unrecorded batches run after loading each model pair.
    #[serde(default = "default_warmup")]
    pub warmup: usize,
    /// Worker threads of the CPU kernels (default: one per core). 1 makes
    /// timings steadier on cores shared with other jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Run (model, prompt set) pairs whose prompts need more positions than
    /// the target's `max_position_embeddings` instead of skipping them:
    /// acceptance past the trained context, marked as such in meta.json,
    /// requests.csv, analyze and the report.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_past_context: bool,
    /// Run a baseline group's rows batch by batch in turn (baseline, each
    /// config, then the next batch) instead of row after row: load from
    /// other jobs then falls on every row alike, steadying the speedups.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interleave: bool,
    /// Prompts per `generate` call.
    #[serde(default = "default_batch_sizes")]
    pub batch_sizes: Spanned<OneOrMany<usize>>,
    /// 0 = greedy; > 0 = rejection sampling.
    #[serde(default = "default_temperatures")]
    pub temperatures: Spanned<OneOrMany<f64>>,
    /// `on`, `off` or both (to measure the recording overhead).
    #[serde(default = "default_spans")]
    pub spans: Spanned<OneOrMany<SpanMode>>,
    /// Model pairs.
    #[serde(default)]
    pub models: Vec<Spanned<ModelSpec>>,
    /// Draft configs (default: one chain of 5 steps).
    #[serde(default = "default_drafts")]
    pub drafts: Vec<Spanned<DraftSpec>>,
    /// Prompt sets (default: the whole built-in set).
    #[serde(default = "default_prompt_sets")]
    pub prompt_sets: Vec<Spanned<PromptSetSpec>>,
    /// `engine` (in process, the default), `sglang` or `vllm` (over HTTP, see `server`).
    #[serde(default, skip_serializing_if = "is_engine")]
    pub backend: EngineKind,
    /// How to start or reach the servers of the `sglang` and `vllm` backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Spanned<ServerSpec>>,
    /// Open-loop load (`[load]`: request rates, arrivals, bounds, goodput
    /// SLO); absent: closed loop, `batch_sizes` requests in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::load::LoadSpec>,
    /// Where the engine backend runs: `cpu` (default) or `cuda` (a build with `--features cuda`).
    #[serde(default, skip_serializing_if = "is_cpu")]
    pub device: EngineDevice,
}

fn is_cpu(d: &EngineDevice) -> bool {
    *d == EngineDevice::Cpu
}

fn is_engine(b: &EngineKind) -> bool {
    *b == EngineKind::Engine
}

/// A value that came from a flag or a default: it has no place in the file.
pub(super) fn nowhere<T>(v: T) -> Spanned<T> {
    Spanned::new(0..0, v)
}
fn default_name() -> String {
    "sweep".into()
}
fn default_max_new_tokens() -> usize {
    64
}
fn default_repeats() -> usize {
    1
}
fn default_warmup() -> usize {
    1
}
fn default_batch_sizes() -> Spanned<OneOrMany<usize>> {
    nowhere(OneOrMany(vec![1]))
}
fn default_temperatures() -> Spanned<OneOrMany<f64>> {
    nowhere(OneOrMany(vec![0.0]))
}
fn default_spans() -> Spanned<OneOrMany<SpanMode>> {
    nowhere(OneOrMany(vec![SpanMode::On]))
}
fn default_drafts() -> Vec<Spanned<DraftSpec>> {
    vec![nowhere(DraftSpec {
        steps: OneOrMany(vec![5]),
        topk: one_topk(),
        num_draft_tokens: None,
        aux_layers: None,
        id_convention: None,
        served_as: None,
        method: None,
    })]
}
fn default_prompt_sets() -> Vec<Spanned<PromptSetSpec>> {
    vec![nowhere(PromptSetSpec::builtin())]
}

impl SweepSpec {
    /// Checks values that TOML types cannot: ranges, empty lists, names.
    pub fn validate(&self, src: &SpecSource) -> Result<(), SpecError> {
        let need = |ok: bool, span: Range<usize>, msg: String| {
            if ok {
                Ok(())
            } else {
                Err(src.error(span, msg))
            }
        };
        let top = |field: &str| top_level_span(&src.text, field);
        need(
            !self.name.is_empty(),
            top("name"),
            "field `name` must not be empty".into(),
        )?;
        need(
            self.max_new_tokens >= 1,
            top("max_new_tokens"),
            "field `max_new_tokens` must be at least 1".into(),
        )?;
        need(
            self.repeats >= 1,
            top("repeats"),
            "field `repeats` must be at least 1".into(),
        )?;
        need(
            self.threads != Some(0),
            top("threads"),
            "field `threads` must be at least 1".into(),
        )?;
        let b = &self.batch_sizes;
        need(
            !b.get_ref().0.is_empty() && b.get_ref().0.iter().all(|&x| x >= 1),
            b.span(),
            format!(
                "field `batch_sizes`: {:?}: needs at least one size, each at least 1",
                b.get_ref().0
            ),
        )?;
        let t = &self.temperatures;
        need(
            !t.get_ref().0.is_empty() && t.get_ref().0.iter().all(|&x| x >= 0.0 && x.is_finite()),
            t.span(),
            format!(
                "field `temperatures`: {:?}: needs at least one, each finite and >= 0",
                t.get_ref().0
            ),
        )?;
        need(
            !self.spans.get_ref().0.is_empty(),
            self.spans.span(),
            "field `spans` must name on, off or both".into(),
        )?;
        need(
            !self.models.is_empty(),
            0..0,
            "no model pair: add a [[models]] table with `target` (and `draft`)".into(),
        )?;
        for d in &self.drafts {
            let v = d.get_ref();
            need(
                !v.steps.0.is_empty() && !v.topk.0.is_empty(),
                d.span(),
                "[[drafts]]: `steps` and `topk` need at least one value".into(),
            )?;
            if let Err(m) = v.convention() {
                return Err(src.error(d.span(), format!("[[drafts]]: {m}")));
            }
        }
        need(
            !self.prompt_sets.is_empty(),
            top("prompt_sets"),
            "field `prompt_sets` is empty".into(),
        )?;
        need(
            self.device.available(),
            top("device"),
            format!(
                "field `device`: \"{}\" needs a build with the GPU backend: cargo build --release -p specula --features cuda",
                self.device.name()
            ),
        )?;
        need(
            self.device == EngineDevice::Cpu || self.backend == EngineKind::Engine,
            top("device"),
            format!(
                "field `device` is for the in-process engine; backend `{}` runs where its server runs",
                self.backend.name()
            ),
        )?;
        match (&self.server, self.backend) {
            (None, EngineKind::Engine) => Ok(()),
            (Some(s), EngineKind::Engine) => Err(src.error(
                s.span(),
                "[server] is for `backend = \"sglang\"` or `\"vllm\"`; the engine backend runs in process",
            )),
            (None, b) => Err(src.error(
                top("backend"),
                format!("backend `{}` needs a [server] table with `command` or `url`", b.name()),
            )),
            (Some(s), b) => {
                if b == EngineKind::Vllm && s.get_ref().endpoint != crate::remote::SglangEndpoint::Generate {
                    return Err(src.error(
                        s.span(),
                        "[server] `endpoint` picks SGLang's endpoint; backend `vllm` always uses /v1/completions",
                    ));
                }
                s.get_ref().validate().map_err(|m| src.error(s.span(), m))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> SpecSource {
        SpecSource {
            path: "s.toml".into(),
            text: text.into(),
        }
    }

    #[test]
    fn scalars_and_lists_both_read_as_lists() {
        let s = src("batch_sizes = 2\ntemperatures = [0, 0.5]\n[[models]]\ntarget = \"m/target\"\n[[drafts]]\nsteps = [1, 3]\n")
            .parse()
            .unwrap();
        assert_eq!(s.batch_sizes.get_ref().0, vec![2]);
        assert_eq!(s.temperatures.get_ref().0, vec![0.0, 0.5]);
        assert_eq!(s.drafts[0].get_ref().steps.0, vec![1, 3]);
        assert_eq!(s.drafts[0].get_ref().topk.0, vec![1]);
        assert_eq!(s.models[0].get_ref().resolved_name(), "m");
    }

    #[test]
    fn errors_name_the_line() {
        let e = src("name = \"x\"\n\n[[models]]\ntarget = \"t\"\ncolour = 3\n")
            .parse()
            .unwrap_err();
        assert_eq!(e.at.map(|a| a.0), Some(5), "{e}");
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        let e = src("repeats = 0\n[[models]]\ntarget = \"t\"\n")
            .parse()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml:1:1: field `repeats` must be at least 1"
        );
        let e = src("[[models]]\ntarget = \"t\"\n[[drafts]]\nsteps = -1\n")
            .parse()
            .unwrap_err();
        assert_eq!(e.at.map(|a| a.0), Some(4), "{e}");
    }
}
