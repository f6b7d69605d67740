//! Runs the grid points of this shard, group by group: load a model pair
//! once, tokenize each prompt set once, run the group's baseline, then each
//! draft config against it, and hand every finished row to the writers.

use super::grid::{CaptureKey, Grid, Point};
use super::measure::{join, measures};
use super::progress::Progress;
use super::resume::Finished;
use super::shard::Shard;
use super::spec::SpanMode;
use super::{interrupt, SweepError};
use crate::export::meta::rfc3339;
use crate::export::{Row, RowWriter, SpanInterval};
use specula_datasets::{prompt_input, ChatTemplate};
use specula_engine::capture::AuxCapture;
use specula_engine::generate::{generate, GenerateParams};
use specula_engine::model::{Eagle3Draft, TargetModel};
use specula_engine::pair::{CaptureChoice, ModelPair};
use specula_engine::spec::{Drafter, Eagle3Drafter, SpecConfig};
use specula_engine::timing::{HostRecorder, NullRecorder, SpanLog, SpanRecorder};
use std::collections::HashMap;
use std::time::{Instant, SystemTime};

/// What every row of the run shares.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The run id.
    pub run_id: String,
    /// `git rev-parse HEAD`.
    pub git_rev: String,
    /// Host name.
    pub machine: String,
    /// `cpu`.
    pub backend: String,
    /// CPU model.
    pub device: String,
    /// The slice of the grid this process runs.
    pub shard: Shard,
    /// Base seed (repeat `r` uses `seed + r`).
    pub seed: u64,
    /// Tokens per prompt at most.
    pub max_new_tokens: usize,
    /// Generate past EOS.
    pub ignore_eos: bool,
    /// Unrecorded batches after loading a model pair.
    pub warmup: usize,
}

/// A loaded model pair with its drafters (one per capture choice) and tokenized prompt sets.
struct Loaded {
    pair: ModelPair,
    drafters: Vec<(CaptureKey, Eagle3Drafter)>,
    prompts: HashMap<usize, Vec<Vec<u32>>>,
    /// The GPU copy of the pair, when the sweep runs on `device = "cuda"`.
    #[cfg(feature = "cuda")]
    gpu: Option<super::device::GpuSide>,
}

/// Longest prompt, in tokens, a GPU sweep makes KV room for.
#[cfg(feature = "cuda")]
const GPU_MAX_PROMPT: usize = 4096;

/// One finished row and its outputs (for the lossless check).
struct Outcome {
    row: Row,
    outputs: Vec<Vec<u32>>,
}

/// Runs rows and writes them.
pub struct Runner<'a> {
    grid: &'a Grid,
    info: &'a RunInfo,
    writers: Vec<Box<dyn RowWriter>>,
    progress: &'a Progress,
    done: Finished,
    /// Rows written by this process.
    pub written: usize,
}

impl<'a> Runner<'a> {
    /// A runner that skips `done` rows and feeds `writers` in order (runs.csv last).
    pub fn new(
        grid: &'a Grid,
        info: &'a RunInfo,
        writers: Vec<Box<dyn RowWriter>>,
        progress: &'a Progress,
        done: Finished,
    ) -> Runner<'a> {
        Runner {
            grid,
            info,
            writers,
            progress,
            done,
            written: 0,
        }
    }

    /// Groups of this shard with rows still to run.
    pub fn pending_groups(&self) -> Vec<usize> {
        (0..self.grid.groups.len())
            .filter(|&g| self.info.shard.owns(g))
            .filter(|&g| {
                self.grid.groups[g]
                    .points
                    .iter()
                    .any(|&p| !self.done.contains(&self.grid.points[p].key))
            })
            .collect()
    }

    /// `generate` calls still to make (for the progress bar).
    pub fn pending_batches(&self) -> u64 {
        let mut n = 0;
        for g in self.pending_groups() {
            let group = &self.grid.groups[g];
            let calls = self.grid.sets[group.prompt_set]
                .len()
                .div_ceil(group.batch_size);
            let rows = group
                .points
                .iter()
                .filter(|&&p| !self.done.contains(&self.grid.points[p].key))
                .count();
            n += (calls * rows) as u64;
        }
        n
    }

    /// Runs every pending row of the shard.
    pub fn run(&mut self) -> Result<(), SweepError> {
        let pending = self.pending_groups();
        for mi in 0..self.grid.models.len() {
            let groups: Vec<usize> = pending
                .iter()
                .copied()
                .filter(|&g| self.grid.groups[g].model == mi)
                .collect();
            if groups.is_empty() {
                continue;
            }
            let m = &self.grid.models[mi];
            self.progress
                .note(&format!("loading {}", m.target.display()));
            let pair = ModelPair::load(&m.target_dir, None, &CaptureChoice::default())?;
            #[cfg(feature = "cuda")]
            let gpu = if self.info.backend == super::device::EngineDevice::Cuda.name() {
                let slots = groups
                    .iter()
                    .map(|&g| self.grid.groups[g].batch_size)
                    .max()
                    .unwrap_or(1);
                let capacity = GPU_MAX_PROMPT + self.info.max_new_tokens + 64;
                Some(super::device::GpuSide::load(&pair, slots, capacity)?)
            } else {
                None
            };
            let mut loaded = Loaded {
                pair,
                drafters: Vec::new(),
                prompts: HashMap::new(),
                #[cfg(feature = "cuda")]
                gpu,
            };
            self.warm_up(&mut loaded, groups[0])?;
            for g in groups {
                self.run_group(&mut loaded, g)?;
            }
        }
        Ok(())
    }

    fn tokenized<'l>(
        &self,
        l: &'l mut Loaded,
        set: usize,
        model: usize,
    ) -> Result<&'l [Vec<u32>], SweepError> {
        if !l.prompts.contains_key(&set) {
            let m = &self.grid.models[model];
            let cfg = m.target_dir.join("tokenizer_config.json");
            let template = if m.chat_template && cfg.exists() {
                ChatTemplate::from_tokenizer_config(&cfg)?
            } else {
                None
            };
            let mut ids = Vec::new();
            for p in &self.grid.sets[set].prompts {
                let text = prompt_input(template.as_ref(), p)?;
                ids.push(l.pair.tokenizer.encode_with(&text, template.is_none())?);
            }
            l.prompts.insert(set, ids);
        }
        Ok(&l.prompts[&set])
    }

    fn drafter<'d>(
        &self,
        target: &TargetModel,
        drafters: &'d mut Vec<(CaptureKey, Eagle3Drafter)>,
        model: usize,
        key: &CaptureKey,
    ) -> Result<&'d mut Eagle3Drafter, SweepError> {
        if let Some(i) = drafters.iter().position(|(k, _)| k == key) {
            return Ok(&mut drafters[i].1);
        }
        let m = &self.grid.models[model];
        let dir = m
            .draft_dir
            .as_deref()
            .expect("draft configs exist only for models with a draft");
        let draft = Eagle3Draft::load(dir, target.config(), target.embedding())?;
        let cap = AuxCapture::resolve(
            key.override_ids.as_deref(),
            draft.config().aux_layer_ids.as_deref(),
            key.convention,
            target.config().num_hidden_layers,
        )?;
        drafters.push((key.clone(), Eagle3Drafter::new(draft, cap)?));
        Ok(&mut drafters.last_mut().expect("just pushed").1)
    }

    fn params(&self, spec: SpecConfig, temperature: f64, repeat: usize) -> GenerateParams {
        GenerateParams {
            spec,
            temperature: temperature as f32,
            max_new_tokens: self.info.max_new_tokens,
            seed: self.info.seed.wrapping_add(repeat as u64),
            ignore_eos: self.info.ignore_eos,
            synthetic: None,
        }
    }

    /// Unrecorded calls on the first batch: the baseline, then the first draft config.
    fn warm_up(&self, l: &mut Loaded, group: usize) -> Result<(), SweepError> {
        let g = &self.grid.groups[group];
        for _ in 0..self.info.warmup {
            for &p in g.points.iter().take(2) {
                let point = &self.grid.points[p];
                let prompts = self.tokenized(l, g.prompt_set, g.model)?.to_vec();
                let batch = &prompts[..g.batch_size.min(prompts.len())];
                self.call(l, point, batch, &mut NullRecorder)?;
            }
        }
        Ok(())
    }

    /// One `generate` call for row `point`.
    fn call(
        &self,
        l: &mut Loaded,
        point: &Point,
        batch: &[Vec<u32>],
        rec: &mut dyn SpanRecorder,
    ) -> Result<specula_engine::stats::Generation, SweepError> {
        let g = &self.grid.groups[point.group];
        let params = self.params(self.grid.spec_of(point), g.temperature, g.repeat);
        let config = self.grid.config_of(point);
        let drafter = match config {
            Some(c) => Some(self.drafter(&l.pair.target, &mut l.drafters, g.model, &c.capture)?),
            None => None,
        };
        #[cfg(feature = "cuda")]
        if let Some(gpu) = l.gpu.as_mut() {
            let index = match (config, drafter) {
                (Some(c), Some(d)) => Some(gpu.drafter(&c.capture, d, &l.pair.target)?),
                _ => None,
            };
            return gpu.generate(index, batch, &params, rec);
        }
        let drafter = drafter.map(|d| d as &mut dyn Drafter);
        Ok(generate(&l.pair.target, batch, &params, drafter, rec)?)
    }

    /// One `generate` call with its spans recorded: CUDA events on the GPU, the host clock on the CPU.
    fn call_recorded(
        &self,
        l: &mut Loaded,
        point: &Point,
        batch: &[Vec<u32>],
    ) -> Result<(specula_engine::stats::Generation, SpanLog), SweepError> {
        #[cfg(feature = "cuda")]
        if let Some(mut rec) = l.gpu.as_ref().map(|g| g.recorder()) {
            let gen = self.call(l, point, batch, &mut rec)?;
            if let Some(e) = rec.error {
                return Err(SweepError::Input(format!("GPU: CUDA events failed: {e}")));
            }
            return Ok((gen, rec.log));
        }
        let mut rec = HostRecorder::default();
        let gen = self.call(l, point, batch, &mut rec)?;
        Ok((gen, rec.log))
    }

    /// The `device` column: the GPU's name on a GPU sweep.
    fn device_name(&self, _l: &Loaded) -> String {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = _l.gpu.as_ref() {
            return gpu.device_name();
        }
        self.info.device.clone()
    }

    /// Runs row `p` over the whole prompt set; `record` = keep span samples.
    fn run_point(&self, l: &mut Loaded, p: usize, record: bool) -> Result<Outcome, SweepError> {
        let point = &self.grid.points[p];
        let g = &self.grid.groups[point.group];
        let prompts = self.tokenized(l, g.prompt_set, g.model)?.to_vec();
        self.progress.row(&point.key);
        let start_time = SystemTime::now();
        let t0 = Instant::now();
        let mut gens = Vec::new();
        let mut intervals = Vec::new();
        for batch in prompts.chunks(g.batch_size) {
            if interrupt::requested() {
                return Err(SweepError::Interrupted(format!(
                    "row `{}` was dropped",
                    point.key
                )));
            }
            let start = t0.elapsed();
            let gen = if record && point.spans == SpanMode::On {
                let (gen, log) = self.call_recorded(l, point, batch)?;
                intervals.push(SpanInterval {
                    start,
                    duration: t0.elapsed() - start,
                    log,
                    client: Default::default(),
                });
                gen
            } else {
                self.call(l, point, batch, &mut NullRecorder)?
            };
            gens.push(gen);
            if record {
                self.progress.tick();
            }
        }
        let wall_s = t0.elapsed().as_secs_f64();
        let spec = self.grid.spec_of(point);
        let joined = join(gens, spec);
        let outputs = joined.sequences.iter().map(|s| s.output.clone()).collect();
        let m = &self.grid.models[g.model];
        let config = self.grid.config_of(point);
        let row = Row {
            run_id: self.info.run_id.clone(),
            git_rev: self.info.git_rev.clone(),
            started_at: rfc3339(start_time),
            start_time,
            machine: self.info.machine.clone(),
            backend: self.info.backend.clone(),
            device: self.device_name(l),
            target: m.target.display().to_string(),
            draft: m
                .draft
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            dtype: m.dtype.clone(),
            aux_layers_resolved: config.map(|c| c.aux_points.clone()).unwrap_or_default(),
            steps: spec.steps,
            topk: spec.topk,
            num_draft_tokens: spec.num_draft_tokens,
            temperature: g.temperature,
            batch_size: g.batch_size,
            prompt_set: self.grid.sets[g.prompt_set].name.clone(),
            prompts: prompts.len(),
            measures: measures(&joined, wall_s),
            repeat: g.repeat,
            seed: self.info.seed.wrapping_add(g.repeat as u64),
            max_new_tokens: self.info.max_new_tokens,
            id_convention: config
                .map(|c| c.capture.convention.name().to_string())
                .unwrap_or_default(),
            spans: point.spans,
            row_key: point.key.clone(),
            positions: joined.per_position_acceptance(),
            intervals,
        };
        Ok(Outcome { row, outputs })
    }

    fn write(&mut self, row: &Row) -> Result<(), SweepError> {
        for w in &mut self.writers {
            w.write(row)?;
        }
        self.done
            .throughput
            .insert(row.row_key.clone(), row.measures.throughput_tok_s);
        self.written += 1;
        Ok(())
    }

    fn run_group(&mut self, l: &mut Loaded, gi: usize) -> Result<(), SweepError> {
        let g = self.grid.groups[gi].clone();
        let greedy = g.temperature == 0.0;
        // Baseline throughput per span mode, and the baseline's outputs.
        let mut base_tp: HashMap<SpanMode, f64> = HashMap::new();
        let mut base_out: Option<Vec<Vec<u32>>> = None;
        for &p in &g.points {
            let point = &self.grid.points[p];
            let finished = self.done.throughput.get(&point.key).copied();
            if point.config.is_none() {
                let tp = match finished {
                    Some(tp) => tp,
                    None => {
                        let o = self.run_point(l, p, true)?;
                        let mut row = o.row;
                        row.measures.speedup = Some(1.0);
                        row.measures.lossless = greedy.then_some(true);
                        self.write(&row)?;
                        base_out = Some(o.outputs);
                        row.measures.throughput_tok_s
                    }
                };
                base_tp.insert(point.spans, tp);
                continue;
            }
            if finished.is_some() {
                continue;
            }
            if greedy && base_out.is_none() {
                // The baseline finished before a resume: its outputs are recomputed
                // (greedy decoding is deterministic); its timing is kept.
                base_out = Some(self.run_point(l, g.points[0], false)?.outputs);
            }
            let o = self.run_point(l, p, true)?;
            let mut row = o.row;
            let base = base_tp.get(&point.spans).copied().unwrap_or(0.0);
            row.measures.speedup = (base > 0.0).then(|| row.measures.throughput_tok_s / base);
            if let Some(base) = base_out.as_ref().filter(|_| greedy) {
                let same = &o.outputs == base;
                if !same {
                    let i = o
                        .outputs
                        .iter()
                        .zip(base)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    self.progress.note(&format!(
                        "warning: row `{}` is not lossless: prompt #{i} differs from the baseline",
                        row.row_key
                    ));
                }
                row.measures.lossless = Some(same);
            }
            self.write(&row)?;
        }
        Ok(())
    }
}
