//! A model pair as the in-process runner holds it while it runs the pair's
//! rows: the target with its tokenizer, one drafter per capture choice
//! (built on first use), the prompt sets tokenized once, and on a GPU sweep
//! the GPU copy of it all.

use super::grid::{Grid, ModelInfo};
use super::planted::{PlantedDraft, Share};
use super::run_info::RunInfo;
use super::SweepError;
use specula_datasets::{prompt_input, ChatTemplate};
use specula_engine::capture::CaptureChoice;
use specula_engine::model::TargetModel;
use specula_engine::pair::{load_drafter, ModelPair};
use specula_engine::speculative::EagleDrafter;
use std::cell::Cell;
use std::collections::HashMap;

/// Longest prompt, in tokens, a GPU sweep makes KV room for.
#[cfg(feature = "cuda")]
const GPU_MAX_PROMPT: usize = 4096;

/// A loaded model pair with its drafters and tokenized prompt sets.
pub struct Loaded {
    /// The target and its tokenizer (no draft: drafters are per capture choice).
    pub pair: ModelPair,
    /// One drafter per capture choice met so far.
    pub drafters: Vec<(CaptureChoice, EagleDrafter)>,
    /// Drafters whose forwards repeat on a share of calls (the
    /// `draft_work_pct` test hook only), built on first use.
    pub planted_drafters: Vec<(CaptureChoice, EagleDrafter<PlantedDraft>)>,
    /// Which prefills repeat, over the whole run (the `target_work_pct` test hook).
    pub planted_prefills: Cell<Option<Share>>,
    /// Prompt set index -> its prompts as token ids.
    prompts: HashMap<usize, Vec<Vec<u32>>>,
    /// The GPU copy of the pair, when the sweep runs on `device = "cuda"`.
    #[cfg(feature = "cuda")]
    pub gpu: Option<super::device::GpuSide>,
}

impl Loaded {
    /// Loads the target of `m` (and uploads it when the run is on the GPU,
    /// with KV room for `slots` sequences).
    pub fn load(m: &ModelInfo, info: &RunInfo, slots: usize) -> Result<Loaded, SweepError> {
        let pair = ModelPair::load(&m.target_dir, None, &CaptureChoice::default())?;
        #[cfg(feature = "cuda")]
        let gpu = if info.backend == super::device::EngineDevice::Cuda.name() {
            let capacity = GPU_MAX_PROMPT + info.max_new_tokens + 64;
            Some(super::device::GpuSide::load(&pair, slots, capacity)?)
        } else {
            None
        };
        #[cfg(not(feature = "cuda"))]
        let _ = slots;
        Ok(Loaded {
            pair,
            drafters: Vec::new(),
            planted_drafters: Vec::new(),
            planted_prefills: Cell::new(info.hooks.target_work_pct.map(Share::new)),
            prompts: HashMap::new(),
            #[cfg(feature = "cuda")]
            gpu,
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
        if !self.prompts.contains_key(&set) {
            let m = &grid.models[model];
            let cfg = m.target_dir.join("tokenizer_config.json");
            let template = if m.chat_template && cfg.exists() {
                ChatTemplate::from_tokenizer_config(&cfg)?
            } else {
                None
            };
            let mut ids = Vec::new();
            for p in &grid.sets[set].prompts {
                let text = prompt_input(template.as_ref(), p)?;
                ids.push(self.pair.tokenizer.encode_with(&text, template.is_none())?);
            }
            self.prompts.insert(set, ids);
        }
        Ok(&self.prompts[&set])
    }
}

/// The drafter of `choice` among `drafters`, loaded from `m`'s draft folder
/// for `target` on first use.
pub fn drafter<'d>(
    drafters: &'d mut Vec<(CaptureChoice, EagleDrafter)>,
    target: &TargetModel,
    m: &ModelInfo,
    choice: &CaptureChoice,
) -> Result<&'d mut EagleDrafter, SweepError> {
    if let Some(i) = drafters.iter().position(|(k, _)| k == choice) {
        return Ok(&mut drafters[i].1);
    }
    let dir = m
        .draft_dir
        .as_deref()
        .expect("draft configs exist only for models with a draft");
    drafters.push((choice.clone(), load_drafter(dir, target, choice)?));
    Ok(&mut drafters.last_mut().expect("just pushed").1)
}

/// The planted drafter of `choice` (forwards repeating on a share of
/// calls), loaded from `m`'s draft folder for `target` on first use.
pub fn planted_drafter<'d>(
    drafters: &'d mut Vec<(CaptureChoice, EagleDrafter<PlantedDraft>)>,
    target: &TargetModel,
    m: &ModelInfo,
    choice: &CaptureChoice,
) -> Result<&'d mut EagleDrafter<PlantedDraft>, SweepError> {
    if let Some(i) = drafters.iter().position(|(k, _)| k == choice) {
        return Ok(&mut drafters[i].1);
    }
    let dir = m
        .draft_dir
        .as_deref()
        .expect("draft configs exist only for models with a draft");
    let (model, capture) = load_drafter(dir, target, choice)?.into_parts();
    let planted = EagleDrafter::new(PlantedDraft::new(model), capture)?;
    drafters.push((choice.clone(), planted));
    Ok(&mut drafters.last_mut().expect("just pushed").1)
}
