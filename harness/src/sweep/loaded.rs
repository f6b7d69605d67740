//! A target as the in-process runner holds it while it runs the rows over
//! it: its tokenizer, the CPU model (CPU sweeps) or the GPU copy loaded
//! straight from the checkpoint (GPU sweeps: no CPU model at all), one
//! drafter per draft folder and capture choice (built on first use), the
//! prompt sets tokenized once. Every model entry of a sweep over the same
//! target (canonical path, dtype, device) shares one `Loaded`.

use super::grid::{Grid, ModelInfo};
use super::planted::{PlantedDraft, Share};
use super::run_info::RunInfo;
use super::SweepError;
use specula_datasets::{prompt_input, ChatTemplate};
use specula_engine::capture::CaptureChoice;
use specula_engine::config::TargetConfig;
use specula_engine::error::EngineError;
use specula_engine::model::TargetModel;
use specula_engine::pair::load_drafter;
use specula_engine::speculative::EagleDrafter;
use specula_engine::tokenizer::TextTokenizer;
use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;

/// Which drafter: its folder and how it is fed.
pub type DrafterKey = (Option<PathBuf>, CaptureChoice);

/// What makes two model entries share one loaded target: the target's
/// canonical folder, its dtype and the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadKey {
    /// The target folder, canonicalized (symlinks and `..` resolved).
    pub target: PathBuf,
    /// The dtype the target is loaded in.
    pub dtype: String,
    /// `cpu` or `cuda`.
    pub device: String,
}

impl LoadKey {
    /// The key of `m`'s target on the run's device.
    pub fn of(m: &ModelInfo, info: &RunInfo) -> LoadKey {
        LoadKey {
            target: std::fs::canonicalize(&m.target_dir).unwrap_or_else(|_| m.target_dir.clone()),
            dtype: m.dtype.clone(),
            device: info.backend.clone(),
        }
    }
}

/// Longest prompt, in tokens, a GPU sweep makes KV room for.
#[cfg(feature = "cuda")]
const GPU_MAX_PROMPT: usize = 4096;

/// A loaded target with its drafters and tokenized prompt sets.
pub struct Loaded {
    /// What it was loaded for (entries with the same key share it).
    pub key: LoadKey,
    /// Sequences its GPU KV pools have room for.
    pub slots: usize,
    /// The target's tokenizer.
    pub tokenizer: TextTokenizer,
    /// The CPU model (none on a GPU sweep, which never builds one).
    pub cpu: Option<TargetModel>,
    /// One drafter per draft folder and capture choice met so far.
    pub drafters: Vec<(DrafterKey, EagleDrafter)>,
    /// Drafters whose forwards repeat on a share of calls (the
    /// `draft_work_pct` test hook only), built on first use.
    pub planted_drafters: Vec<(DrafterKey, EagleDrafter<PlantedDraft>)>,
    /// Which prefills repeat, over the whole run (the `target_work_pct` test hook).
    pub planted_prefills: Cell<Option<Share>>,
    /// (prompt set, chat template used) -> its prompts as token ids.
    prompts: HashMap<(usize, bool), Vec<Vec<u32>>>,
    /// How long the load took and what it cost (meta.json `model_loads`).
    pub record: crate::run_folder::meta::ModelLoad,
    /// The GPU copy of the pair, when the sweep runs on `device = "cuda"`.
    #[cfg(feature = "cuda")]
    pub gpu: Option<super::device::GpuSide>,
}

impl Loaded {
    /// Loads the target of `m`: on the CPU, or on a GPU sweep straight to
    /// the device with KV room for `slots` sequences of prompts up to
    /// `GPU_MAX_PROMPT` tokens, or `longest_prompt` where longer (no CPU model).
    pub fn load(
        m: &ModelInfo,
        info: &RunInfo,
        slots: usize,
        longest_prompt: usize,
        quiet: bool,
    ) -> Result<Loaded, SweepError> {
        let t0 = std::time::Instant::now();
        let config = TargetConfig::load(&m.target_dir)?;
        let tokenizer = TextTokenizer::load(&m.target_dir)?;
        if tokenizer.vocab_size() > config.vocab_size {
            return Err(EngineError::config(
                &config.path,
                "vocab_size",
                format!(
                    "{}, but {} has {} tokens",
                    config.vocab_size,
                    tokenizer.path().display(),
                    tokenizer.vocab_size()
                ),
            )
            .into());
        }
        let on_gpu = info.backend == super::device::EngineDevice::Cuda.name();
        #[cfg(feature = "cuda")]
        let (gpu, bytes) = if on_gpu {
            let capacity = GPU_MAX_PROMPT.max(longest_prompt) + info.max_new_tokens + 64;
            let (side, stats) =
                super::device::GpuSide::load(&m.target_dir, slots, capacity, quiet)?;
            (Some(side), stats.bytes)
        } else {
            (None, 0)
        };
        #[cfg(not(feature = "cuda"))]
        let (bytes, _, _) = (0u64, quiet, longest_prompt);
        let cpu = if on_gpu {
            None
        } else {
            Some(TargetModel::load(&m.target_dir)?)
        };
        let seconds = t0.elapsed().as_secs_f64();
        let record = crate::run_folder::meta::ModelLoad {
            target: m.target.display().to_string(),
            device: info.backend.clone(),
            dtype: m.dtype.clone(),
            seconds,
            bytes,
            gb_s: if bytes > 0 {
                bytes as f64 / seconds / 1e9
            } else {
                0.0
            },
            peak_host_memory_bytes: crate::process_stats::peak_rss_bytes(),
            models: vec![m.name.clone()],
        };
        Ok(Loaded {
            key: LoadKey::of(m, info),
            slots,
            tokenizer,
            cpu,
            drafters: Vec::new(),
            planted_drafters: Vec::new(),
            planted_prefills: Cell::new(info.hooks.target_work_pct.map(Share::new)),
            prompts: HashMap::new(),
            record,
            #[cfg(feature = "cuda")]
            gpu,
        })
    }

    /// The CPU model, or an error on a GPU sweep (which has none).
    pub fn cpu_target(cpu: &Option<TargetModel>) -> Result<&TargetModel, SweepError> {
        cpu.as_ref().ok_or_else(|| {
            SweepError::Input("internal: a CPU forward on a GPU sweep (no CPU model)".into())
        })
    }

    /// Prompt set `set` of `grid` as token ids for model `model` (through
    /// its chat template when it has one and the spec asks for it), once.
    pub fn tokenized(
        &mut self,
        grid: &Grid,
        set: usize,
        model: usize,
    ) -> Result<&[Vec<u32>], SweepError> {
        let m = &grid.models[model];
        let key = (set, m.chat_template);
        if !self.prompts.contains_key(&key) {
            let cfg = m.target_dir.join("tokenizer_config.json");
            let template = if m.chat_template && cfg.exists() {
                ChatTemplate::from_tokenizer_config(&cfg)?
            } else {
                None
            };
            let mut ids = Vec::new();
            for p in &grid.sets[set].prompts {
                let text = prompt_input(template.as_ref(), p)?;
                ids.push(self.tokenizer.encode_with(&text, template.is_none())?);
            }
            self.prompts.insert(key, ids);
        }
        Ok(&self.prompts[&key])
    }
}

/// The drafter of `choice` among `drafters`, loaded from `m`'s draft folder
/// for `target` on first use.
pub fn drafter<'d>(
    drafters: &'d mut Vec<(DrafterKey, EagleDrafter)>,
    target: &TargetModel,
    m: &ModelInfo,
    choice: &CaptureChoice,
) -> Result<&'d mut EagleDrafter, SweepError> {
    let key = (m.draft_dir.clone(), choice.clone());
    if let Some(i) = drafters.iter().position(|(k, _)| *k == key) {
        return Ok(&mut drafters[i].1);
    }
    let dir = m
        .draft_dir
        .as_deref()
        .expect("draft configs exist only for models with a draft");
    drafters.push((key, load_drafter(dir, target, choice)?));
    Ok(&mut drafters.last_mut().expect("just pushed").1)
}

/// The planted drafter of `choice` (forwards repeating on a share of
/// calls), loaded from `m`'s draft folder for `target` on first use.
pub fn planted_drafter<'d>(
    drafters: &'d mut Vec<(DrafterKey, EagleDrafter<PlantedDraft>)>,
    target: &TargetModel,
    m: &ModelInfo,
    choice: &CaptureChoice,
) -> Result<&'d mut EagleDrafter<PlantedDraft>, SweepError> {
    let key = (m.draft_dir.clone(), choice.clone());
    if let Some(i) = drafters.iter().position(|(k, _)| *k == key) {
        return Ok(&mut drafters[i].1);
    }
    let dir = m
        .draft_dir
        .as_deref()
        .expect("draft configs exist only for models with a draft");
    let (model, capture) = load_drafter(dir, target, choice)?.into_parts();
    let planted = EagleDrafter::new(PlantedDraft::new(model), capture)?;
    drafters.push((key, planted));
    Ok(&mut drafters.last_mut().expect("just pushed").1)
}
