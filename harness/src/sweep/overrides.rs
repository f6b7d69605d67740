//! The command line's overrides of a sweep spec: flags that replace spec
//! fields (`--batch-sizes`, `--target`, ...), applied before the spec is
//! checked, so a flag's value is checked like the field's.

use super::spec::{nowhere, ChatTemplateMode, ModelSpec, OneOrMany, SpanMode, SweepSpec};
use super::spec_source::{SpecError, SpecSource};
use std::path::PathBuf;

/// CLI flags that replace spec fields (`None`: keep the spec's).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--batch-sizes`.
    pub batch_sizes: Option<Vec<usize>>,
    /// `--temperatures`.
    pub temperatures: Option<Vec<f64>>,
    /// `--max-new-tokens`.
    pub max_new_tokens: Option<usize>,
    /// `--repeats`.
    pub repeats: Option<usize>,
    /// `--warmup`.
    pub warmup: Option<usize>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--sample`: draw this many prompts from every prompt set.
    pub sample: Option<usize>,
    /// `--spans` / `--no-spans`.
    pub spans: Option<Vec<SpanMode>>,
    /// `--ignore-eos`.
    pub ignore_eos: bool,
    /// `--target` (with `--draft`): replaces the model list with one pair
    /// (keeping the first pair's `chat_template`).
    pub target: Option<PathBuf>,
    /// `--draft`.
    pub draft: Option<PathBuf>,
    /// `--cpu-threads`: the spec's `threads`.
    pub threads: Option<usize>,
    /// `--allow-past-context`: the spec's `allow_past_context` set to true.
    pub allow_past_context: bool,
}

impl Overrides {
    /// Whether any flag overrides the spec.
    pub fn any(&self) -> bool {
        self.batch_sizes.is_some()
            || self.temperatures.is_some()
            || self.max_new_tokens.is_some()
            || self.repeats.is_some()
            || self.warmup.is_some()
            || self.seed.is_some()
            || self.sample.is_some()
            || self.spans.is_some()
            || self.ignore_eos
            || self.target.is_some()
            || self.draft.is_some()
            || self.threads.is_some()
            || self.allow_past_context
    }
}

impl SweepSpec {
    /// Replaces the fields the flags name, then checks the result.
    pub fn apply(&mut self, o: &Overrides, src: &SpecSource) -> Result<(), SpecError> {
        if let Some(n) = o.threads {
            self.threads = Some(n);
        }
        if let Some(v) = &o.batch_sizes {
            self.batch_sizes = nowhere(OneOrMany(v.clone()));
        }
        if let Some(v) = &o.temperatures {
            self.temperatures = nowhere(OneOrMany(v.clone()));
        }
        if let Some(v) = &o.spans {
            self.spans = nowhere(OneOrMany(v.clone()));
        }
        self.max_new_tokens = o.max_new_tokens.unwrap_or(self.max_new_tokens);
        self.repeats = o.repeats.unwrap_or(self.repeats);
        self.warmup = o.warmup.unwrap_or(self.warmup);
        self.seed = o.seed.unwrap_or(self.seed);
        self.ignore_eos |= o.ignore_eos;
        self.allow_past_context |= o.allow_past_context;
        if let Some(n) = o.sample {
            for p in &mut self.prompt_sets {
                p.get_mut().sample = Some(n);
            }
        }
        match (&o.target, &o.draft) {
            (Some(t), d) => {
                let chat_template = self
                    .models
                    .first()
                    .map_or(ChatTemplateMode::Auto, |m| m.get_ref().chat_template);
                self.models = vec![nowhere(ModelSpec {
                    name: None,
                    target: t.clone(),
                    draft: d.clone(),
                    chat_template,
                })]
            }
            (None, Some(_)) => {
                return Err(SpecError {
                    origin: "command line".into(),
                    at: None,
                    message: "--draft needs --target".into(),
                })
            }
            (None, None) => {}
        }
        self.validate(src)
    }
}
