//! Runs the grid points of this shard in process, group by group: load a
//! target once ([`super::loaded`]; model entries over the same target,
//! dtype and device share the load, run one after the other), run the
//! group's baseline, then each draft config against it, and hand every
//! finished row to the writers. One `generate` call of a row is
//! `call`'s.

use super::cpu_clock::process_cpu_s;
use super::grid::Grid;
use super::loaded::{LoadKey, Loaded};
use super::progress::Progress;
use super::row_calls::{Outcome, RowCalls};
pub use super::run_info::RunInfo;
use super::spec::SpanMode;
use super::{interrupt, SweepError};
use crate::run_folder::Finished;
use crate::run_folder::{Row, RowWriter, SpanInterval};
use specula_engine::generate::GenerateParams;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::NullRecorder;
use std::collections::HashMap;

mod call;

/// Runs rows and writes them.
pub struct Runner<'a> {
    grid: &'a Grid,
    info: &'a RunInfo,
    writers: Vec<Box<dyn RowWriter>>,
    progress: &'a Progress,
    done: Finished,
    /// Rows written by this process.
    pub written: usize,
    /// Every target load, in order (meta.json `model_loads`).
    pub loads: Vec<crate::run_folder::meta::ModelLoad>,
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
            loads: Vec::new(),
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
        let models = &self.grid.models;
        let keys: Vec<LoadKey> = models.iter().map(|m| LoadKey::of(m, self.info)).collect();
        // Entries over the same target run one after the other (in the order
        // their target first appears), on one load.
        let mut order: Vec<usize> = (0..models.len()).collect();
        order.sort_by_key(|&mi| keys.iter().position(|k| *k == keys[mi]));
        let groups_of = |mi: usize| -> Vec<usize> {
            pending
                .iter()
                .copied()
                .filter(|&g| self.grid.groups[g].model == mi)
                .collect()
        };
        let mut loaded: Option<Loaded> = None;
        for mi in order {
            let groups = groups_of(mi);
            if groups.is_empty() {
                continue;
            }
            let m = &models[mi];
            let reuse = loaded.as_ref().is_some_and(|l| l.key == keys[mi]);
            if reuse {
                self.progress.note(&format!(
                    "{}: the target {} is loaded already",
                    m.name,
                    m.target.display()
                ));
                if let Some(r) = self.loads.last_mut() {
                    r.models.push(m.name.clone());
                }
            } else {
                if let Some(l) = loaded.take() {
                    drop(l);
                }
                self.progress
                    .note(&format!("loading {}", m.target.display()));
                // KV room for the largest batch of every entry sharing the load.
                let slots = (0..models.len())
                    .filter(|&o| keys[o] == keys[mi])
                    .flat_map(groups_of)
                    .map(|g| self.grid.groups[g].batch_size)
                    .max()
                    .unwrap_or(1);
                // KV room for the longest prompt past a model's context (a
                // run with allow_past_context); the others fit the default.
                let longest_past = (0..models.len())
                    .filter(|&o| keys[o] == keys[mi])
                    .flat_map(|o| &self.grid.context[o])
                    .filter_map(|c| match c {
                        super::context_fit::ContextFit::Past(p) => Some(p.longest_prompt_tokens),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0);
                let l = Loaded::load(m, self.info, slots, longest_past, self.progress.quiet())?;
                self.loads.push(l.record.clone());
                loaded = Some(l);
            }
            let l = loaded.as_mut().expect("loaded above");
            self.warm_up(l, groups[0])?;
            for g in groups {
                self.run_group(l, g)?;
            }
        }
        Ok(())
    }

    fn params(
        &self,
        speculative: SpeculativeConfig,
        temperature: f64,
        repeat: usize,
    ) -> GenerateParams {
        GenerateParams {
            speculative,
            temperature: temperature as f32,
            max_new_tokens: self.info.max_new_tokens,
            seed: self.info.seed.wrapping_add(repeat as u64),
            sequence_seeds: None,
            ignore_eos: self.info.ignore_eos,
            synthetic: None,
            allow_past_context: self.info.allow_past_context,
            ..GenerateParams::default()
        }
    }

    /// Unrecorded calls on the first batch: the baseline, then the first draft config.
    fn warm_up(&self, l: &mut Loaded, group: usize) -> Result<(), SweepError> {
        let g = &self.grid.groups[group];
        for _ in 0..self.info.warmup {
            for &p in g.points.iter().take(2) {
                let point = &self.grid.points[p];
                let prompts = l.tokenized(self.grid, g.prompt_set, g.model)?.to_vec();
                let batch = &prompts[..g.batch_size.min(prompts.len())];
                self.call(l, point, batch, &mut NullRecorder)?;
            }
        }
        Ok(())
    }

    /// One `generate` call of row `p` on `batch`, added to `acc`; `record` = keep span samples.
    fn run_batch(
        &self,
        l: &mut Loaded,
        p: usize,
        batch: &[Vec<u32>],
        record: bool,
        acc: &mut RowCalls,
    ) -> Result<(), SweepError> {
        let point = &self.grid.points[p];
        if interrupt::requested() {
            return Err(SweepError::Interrupted(format!(
                "row `{}` was dropped",
                point.key
            )));
        }
        let t0 = acc.begin();
        let cpu0 = process_cpu_s();
        let start = t0.elapsed();
        let (gen, prefill_cpu_s) = if record && point.spans == SpanMode::On {
            let (out, log) = self.call_recorded(l, point, batch)?;
            acc.intervals.push(SpanInterval {
                start,
                duration: t0.elapsed() - start,
                log,
                client: Default::default(),
            });
            out
        } else {
            self.call(l, point, batch, &mut NullRecorder)?
        };
        acc.wall_s += (t0.elapsed() - start).as_secs_f64();
        acc.decode_cpu_s += process_cpu_s() - cpu0 - prefill_cpu_s;
        acc.gens.push(gen);
        if record {
            self.progress.tick();
        }
        Ok(())
    }

    /// Runs row `p` over the whole prompt set; `record` = keep span samples.
    fn run_point(&self, l: &mut Loaded, p: usize, record: bool) -> Result<Outcome, SweepError> {
        let g = &self.grid.groups[self.grid.points[p].group];
        let prompts = l.tokenized(self.grid, g.prompt_set, g.model)?.to_vec();
        self.progress.row(&self.grid.points[p].key);
        let mut acc = RowCalls::default();
        for batch in prompts.chunks(g.batch_size) {
            self.run_batch(l, p, batch, record, &mut acc)?;
        }
        let o = acc.finish(self.grid, self.info, p, prompts.len());
        Ok(self.on_device(l, o))
    }

    /// Runs rows `ps` of one group batch by batch in turn (baseline, config, ...,
    /// then the next batch), so that load from other jobs falls on every row alike.
    fn run_interleaved(
        &self,
        l: &mut Loaded,
        gi: usize,
        ps: &[usize],
    ) -> Result<HashMap<usize, Outcome>, SweepError> {
        let g = &self.grid.groups[gi];
        let prompts = l.tokenized(self.grid, g.prompt_set, g.model)?.to_vec();
        let mut accs: Vec<RowCalls> = ps.iter().map(|_| RowCalls::default()).collect();
        for batch in prompts.chunks(g.batch_size) {
            for (i, &p) in ps.iter().enumerate() {
                self.progress.row(&self.grid.points[p].key);
                self.run_batch(l, p, batch, true, &mut accs[i])?;
            }
        }
        Ok(ps
            .iter()
            .zip(accs)
            .map(|(&p, acc)| {
                let o = acc.finish(self.grid, self.info, p, prompts.len());
                (p, self.on_device(l, o))
            })
            .collect())
    }

    /// Row `p`'s outcome: measured ahead by [`Runner::run_interleaved`], or now.
    fn outcome(
        &self,
        l: &mut Loaded,
        p: usize,
        ahead: &mut HashMap<usize, Outcome>,
    ) -> Result<Outcome, SweepError> {
        match ahead.remove(&p) {
            Some(o) => Ok(o),
            None => self.run_point(l, p, true),
        }
    }

    fn write(&mut self, row: &Row) -> Result<(), SweepError> {
        for w in &mut self.writers {
            w.write(row)?;
        }
        self.done
            .throughput
            .insert(row.row_key.clone(), row.measures.throughput_tok_s);
        self.done
            .cpu_throughput
            .insert(row.row_key.clone(), row.measures.cpu_tok_s);
        self.written += 1;
        Ok(())
    }

    fn run_group(&mut self, l: &mut Loaded, gi: usize) -> Result<(), SweepError> {
        let g = self.grid.groups[gi].clone();
        let greedy = g.temperature == 0.0;
        // Baseline throughput per span mode, and the baseline's outputs.
        let mut base_tp: HashMap<SpanMode, f64> = HashMap::new();
        let mut base_cpu: HashMap<SpanMode, f64> = HashMap::new();
        let mut base_out: Option<Vec<Vec<u32>>> = None;
        let pending: Vec<usize> = g
            .points
            .iter()
            .copied()
            .filter(|p| !self.done.contains(&self.grid.points[*p].key))
            .collect();
        let mut ahead = if self.info.interleave && pending.len() > 1 {
            self.run_interleaved(l, gi, &pending)?
        } else {
            HashMap::new()
        };
        for &p in &g.points {
            let point = &self.grid.points[p];
            let finished = self.done.throughput.get(&point.key).copied();
            if point.config.is_none() {
                let tp = match finished {
                    Some(tp) => tp,
                    None => {
                        let o = self.outcome(l, p, &mut ahead)?;
                        let mut row = o.row;
                        row.measures.speedup = Some(1.0);
                        row.measures.cpu_speedup = Some(1.0);
                        row.measures.lossless = greedy.then_some(true);
                        self.write(&row)?;
                        base_out = Some(o.outputs);
                        row.measures.throughput_tok_s
                    }
                };
                base_tp.insert(point.spans, tp);
                if let Some(&c) = self.done.cpu_throughput.get(&point.key) {
                    base_cpu.insert(point.spans, c);
                }
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
            let o = self.outcome(l, p, &mut ahead)?;
            let mut row = o.row;
            let base = base_tp.get(&point.spans).copied().unwrap_or(0.0);
            row.measures.speedup = (base > 0.0).then(|| row.measures.throughput_tok_s / base);
            let base = base_cpu.get(&point.spans).copied().unwrap_or(0.0);
            let cpu = row.measures.cpu_tok_s;
            row.measures.cpu_speedup = (base > 0.0 && cpu > 0.0).then(|| cpu / base);
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
