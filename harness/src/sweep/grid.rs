//! Grid expansion: the spec's lists crossed into baseline groups (one per
//! model pair x prompt set x batch size x temperature x repeat), each holding
//! its baseline row first (one per span mode) and then one row per valid
//! draft config and span mode. Invalid configs are collected with their
//! reason, never dropped silently.

use super::context_fit::{self, ContextFit};
use super::draft_points::{expand_drafts, ModelDrafts};
use super::spec::{ModelSpec, SpanMode, SweepSpec};
use super::SweepError;
use crate::remote::EngineKind;
use crate::run_folder::row_key::{sanitize, RowKey, BASELINE_CONFIG};
use crate::run_folder::SkippedConfig;
use specula_datasets::{PromptSet, PromptSource};
use specula_engine::capture::CaptureChoice;
use specula_engine::config::{DraftKind, TargetConfig};
use specula_engine::model::draft_config;
use specula_engine::speculative::SpeculativeConfig;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A model pair with what its config files say.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    /// Name in row keys.
    pub name: String,
    /// Target path as written in the spec (the `target` column).
    pub target: PathBuf,
    /// Draft path as written in the spec (the `draft` column).
    pub draft: Option<PathBuf>,
    /// Target folder resolved against the sweep's base folder.
    pub target_dir: PathBuf,
    /// Draft folder resolved likewise.
    pub draft_dir: Option<PathBuf>,
    /// Storage dtype named by the target config.
    pub dtype: String,
    /// Whether to use the target's chat template.
    pub chat_template: bool,
}

/// One valid speculative config of a model pair.
#[derive(Debug, Clone)]
pub struct DraftPoint {
    /// steps, topk, num_draft_tokens.
    pub speculative: SpeculativeConfig,
    /// How the draft is fed.
    pub capture: CaptureChoice,
    /// The resolved capture points, `a;b;c` (the `aux_layers_resolved` column).
    pub aux_points: String,
    /// Its part of the row key, e.g. `s5k1n6` or `s3k2n7-auxm1_2_4-legacy`
    /// (`-<method>` appended when the spec names one).
    pub label: String,
    /// The speculative method as the backend spells it (`{method}`), when given.
    pub method: Option<String>,
}

/// Rows that share a baseline: the baseline first, then the draft configs.
#[derive(Debug, Clone)]
pub struct Group {
    /// Index into [`Grid::models`].
    pub model: usize,
    /// Index into [`Grid::sets`].
    pub prompt_set: usize,
    /// Prompts per `generate` call.
    pub batch_size: usize,
    /// Sampling temperature (0 = greedy).
    pub temperature: f64,
    /// Repeat index (0-based).
    pub repeat: usize,
    /// Requests per second offered (open loop, `[load]`); `None`: closed loop.
    pub request_rate: Option<f64>,
    /// Indices into [`Grid::points`], the baseline(s) first (one per span mode).
    pub points: Vec<usize>,
}

/// One row of runs.csv to produce.
#[derive(Debug, Clone)]
pub struct Point {
    /// Unique, file-name-safe key (`row_key` column, histogram file name).
    pub key: String,
    /// Index into [`Grid::groups`].
    pub group: usize,
    /// Index into the model's [`Grid::configs`]; `None` for the baseline.
    pub config: Option<usize>,
    /// Whether the row records spans.
    pub spans: SpanMode,
}

/// The expanded sweep.
#[derive(Debug, Clone)]
pub struct Grid {
    /// Model pairs, in spec order.
    pub models: Vec<ModelInfo>,
    /// Valid draft configs per model.
    pub configs: Vec<Vec<DraftPoint>>,
    /// Loaded prompt sets, in spec order.
    pub sets: Vec<PromptSet>,
    /// Baseline groups, in run order.
    pub groups: Vec<Group>,
    /// Rows, in run order.
    pub points: Vec<Point>,
    /// Configs that will not run.
    pub skipped: Vec<SkippedConfig>,
    /// How many of [`Grid::skipped`] cannot run as written (an impossible
    /// tree, aux ids that do not resolve), as against a baseline written as
    /// `steps = 0` or a model without a draft, which are skipped by design.
    pub refused: usize,
    /// (model, prompt set) pairs that do not fit the model's context
    /// ([`super::context_fit`]): no rows; each is in `skipped` with its reason.
    pub unfit: Vec<(usize, usize)>,
    /// How each prompt set sits in each model's trained context, `[model][set]`.
    pub context: Vec<Vec<ContextFit>>,
    /// Each model's `max_position_embeddings`, when its config is here and names it.
    pub max_positions: Vec<Option<usize>>,
}

/// `path` if absolute, else `base/path`.
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// The target and draft folders of `m`, resolved against `base`; for the
/// in-process engine each must exist (served models need not: they may be
/// model ids or paths on the server).
fn folders(
    m: &ModelSpec,
    base: &Path,
    in_process: bool,
) -> Result<(PathBuf, Option<PathBuf>), SweepError> {
    let target = resolve(base, &m.target);
    let draft = m.draft.as_deref().map(|d| resolve(base, d));
    let wanted = [
        ("target", Some(&m.target), Some(&target)),
        ("draft", m.draft.as_ref(), draft.as_ref()),
    ];
    for (field, written, dir) in wanted {
        if let (true, Some(written), Some(dir)) = (in_process, written, dir) {
            if !dir.is_dir() {
                return Err(SweepError::Input(format!(
                    "model `{}`: {field} = {:?}: no folder at {} (relative paths are read from the spec's folder, {})",
                    m.resolved_name(),
                    written.display().to_string(),
                    dir.display(),
                    base.display()
                )));
            }
        }
    }
    Ok((target, draft))
}

impl Grid {
    /// Expands `spec`, reading model configs and prompt sets; relative paths
    /// are resolved against `base`, the spec file's folder.
    pub fn expand(spec: &SweepSpec, base: &Path) -> Result<Grid, SweepError> {
        if let Some(load) = &spec.load {
            load.validate().map_err(SweepError::Input)?;
            if spec.backend == EngineKind::Engine {
                return Err(SweepError::Input(
                    "[load] (open-loop request rates) needs a served backend: backend = \"sglang\" or \"vllm\"".into(),
                ));
            }
        }
        let mut models = Vec::new();
        let mut configs = Vec::new();
        let mut max_positions = Vec::new();
        let mut skipped = Vec::new();
        let mut refused = 0;
        for m in &spec.models {
            let m = m.get_ref();
            let (target_dir, draft_dir) = folders(m, base, spec.backend == EngineKind::Engine)?;
            // A served target or draft need not exist here (a model id, a remote
            // path): then its dtype or the capture points are unknown (empty).
            let local =
                spec.backend == EngineKind::Engine || target_dir.join("config.json").exists();
            let tcfg = if local {
                Some(TargetConfig::load(&target_dir)?)
            } else {
                None
            };
            let capture_known = tcfg.is_some()
                && draft_dir.as_ref().is_none_or(|d| {
                    spec.backend == EngineKind::Engine || d.join("config.json").exists()
                });
            let draft_config = match &draft_dir {
                Some(d) if capture_known => Some(draft_config(d)?),
                _ => None,
            };
            let draft_kind = draft_config
                .as_ref()
                .map_or(DraftKind::Eagle3, |c| c.kind());
            let draft_ids = match (&draft_dir, draft_config) {
                (Some(_), Some(c)) => Some(c.aux_layer_ids),
                (Some(_), None) => Some(None),
                (None, _) => None,
            };
            let info = ModelInfo {
                name: sanitize(&m.resolved_name()),
                target: m.target.clone(),
                draft: m.draft.clone(),
                target_dir,
                draft_dir,
                dtype: tcfg.as_ref().map(|c| c.dtype.clone()).unwrap_or_default(),
                chat_template: m.chat_template == super::spec::ChatTemplateMode::Auto,
            };
            let expanded = expand_drafts(
                spec,
                &ModelDrafts {
                    info: &info,
                    target: tcfg.as_ref(),
                    capture_known,
                    draft_kind,
                    draft_ids,
                },
            )?;
            skipped.extend(expanded.skipped);
            refused += expanded.refused;
            let list = expanded.points;
            max_positions.push(tcfg.as_ref().and_then(|c| c.max_position_embeddings));
            models.push(info);
            configs.push(list);
        }
        let mut sets = Vec::new();
        for p in &spec.prompt_sets {
            let mut p = p.get_ref().clone();
            if let PromptSource::Path(path) = &p.source {
                p.name = Some(p.resolved_name());
                p.source = PromptSource::Path(resolve(base, path));
            }
            sets.push(p.load()?);
        }
        let mut unfit = Vec::new();
        let mut context = Vec::new();
        for (mi, m) in models.iter().enumerate() {
            let mut fits = Vec::new();
            for (si, set) in sets.iter().enumerate() {
                let fit = context_fit::fit(m, max_positions[mi], set, spec.max_new_tokens)?;
                if let (Some(why), false) = (fit.skipped(), spec.allow_past_context) {
                    skipped.push(why);
                    unfit.push((mi, si));
                }
                fits.push(fit);
            }
            context.push(fits);
        }
        let mut grid = Grid {
            models,
            configs,
            sets,
            groups: Vec::new(),
            points: Vec::new(),
            skipped,
            refused,
            unfit,
            context,
            max_positions,
        };
        grid.cross(spec)?;
        Ok(grid)
    }

    /// Builds the groups and rows, in run order, and checks that keys are unique.
    ///
    /// With both span modes, a config's `on` and `off` rows are adjacent (the
    /// order flips on odd repeats), so their throughput ratio sees the same
    /// machine state.
    fn cross(&mut self, spec: &SweepSpec) -> Result<(), SweepError> {
        let mut keys = HashSet::new();
        let mut modes = spec.spans.get_ref().0.clone();
        modes.sort();
        modes.dedup();
        for (mi, m) in self.models.iter().enumerate() {
            for (si, set) in self.sets.iter().enumerate() {
                if self.unfit.contains(&(mi, si)) {
                    continue;
                }
                let rates: Vec<Option<f64>> = match &spec.load {
                    Some(l) => l.request_rates.0.iter().copied().map(Some).collect(),
                    None => vec![None],
                };
                for &batch_size in &spec.batch_sizes.get_ref().0 {
                    for &request_rate in &rates {
                        for &temperature in &spec.temperatures.get_ref().0 {
                            for repeat in 0..spec.repeats {
                                let gi = self.groups.len();
                                let mut order = modes.clone();
                                if repeat % 2 == 1 {
                                    order.reverse();
                                }
                                let labels = std::iter::once((None, BASELINE_CONFIG.to_string()))
                                    .chain(
                                        self.configs[mi]
                                            .iter()
                                            .enumerate()
                                            .map(|(ci, c)| (Some(ci), c.label.clone())),
                                    );
                                let mut points = Vec::new();
                                for (config, label) in labels {
                                    for &spans in &order {
                                        let key = RowKey {
                                            model: &m.name,
                                            config: &label,
                                            batch_size,
                                            prompt_set: &set.name,
                                            temperature,
                                            repeat,
                                            spans,
                                        }
                                        .format();
                                        // Open loop: the rate joins the batch part (`b4-rr2`).
                                        let key = match request_rate {
                                            Some(r) => key.replacen(
                                                &format!(".b{batch_size}."),
                                                &format!(
                                                    ".b{batch_size}-rr{}.",
                                                    format!("{r}").replace('.', "p")
                                                ),
                                                1,
                                            ),
                                            None => key,
                                        };
                                        if !keys.insert(key.clone()) {
                                            return Err(SweepError::Input(format!("two grid points share the row key `{key}`: give models and prompt sets distinct `name`s")));
                                        }
                                        points.push(self.points.len());
                                        self.points.push(Point {
                                            key,
                                            group: gi,
                                            config,
                                            spans,
                                        });
                                    }
                                }
                                self.groups.push(Group {
                                    model: mi,
                                    prompt_set: si,
                                    batch_size,
                                    temperature,
                                    repeat,
                                    request_rate,
                                    points,
                                });
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the spec asked for draft configs and none runs: no model has
    /// a config left, and at least one was refused ([`Grid::refused`]).
    pub fn every_draft_config_refused(&self) -> bool {
        self.refused > 0 && self.configs.iter().all(Vec::is_empty)
    }

    /// The draft config of row `p` (`None` for a baseline).
    pub fn config_of(&self, p: &Point) -> Option<&DraftPoint> {
        let g = &self.groups[p.group];
        p.config.map(|c| &self.configs[g.model][c])
    }

    /// The (model, prompt set) pairs that run past the model's trained
    /// context (`allow_past_context`), for meta.json.
    pub fn past_trained_context(&self) -> Vec<crate::run_folder::PastContextSet> {
        let mut out = Vec::new();
        for (mi, fits) in self.context.iter().enumerate() {
            for (si, fit) in fits.iter().enumerate() {
                if let (ContextFit::Past(p), false) = (fit, self.unfit.contains(&(mi, si))) {
                    out.push(p.clone());
                }
            }
        }
        out
    }

    /// The speculation knobs of row `p`.
    pub fn speculative_of(&self, p: &Point) -> SpeculativeConfig {
        self.config_of(p)
            .map_or(SpeculativeConfig::BASELINE, |c| c.speculative)
    }
}

#[cfg(test)]
#[path = "grid_tests.rs"]
mod tests;
