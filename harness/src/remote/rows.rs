//! Runs a sweep's rows against servers. Per model pair, per draft config
//! (the baseline first): start a server from the `[server]` command (or use
//! the attached `url`), wait for its health check, warm it up, run every
//! pending row of that config (all baseline groups), stop it. Speedup and
//! lossless use the group's baseline row, run earlier against the baseline
//! server.
//!
//! A point that fails (a server that never becomes healthy, exits, answers
//! malformed JSON or stalls past `request_timeout_s`) is printed as
//! `failed ROW_KEY: reason` and appended to `failures.csv`; the config's
//! later rows fail with it, its server is stopped, and the sweep goes on to
//! the next config. Finished rows are kept; `--resume` reruns failed points.

use super::plausible::{impossible, Asked};
use super::prompts::prompt_inputs;
use super::row::{run_row, RowResult};
use super::{EngineKind, PromptInput, RequestParams, ServerSpec};
use crate::run_folder::Finished;
use crate::run_folder::{AppendCsv, RowWriter};
use crate::sweep::grid::Grid;
use crate::sweep::progress::Progress;
use crate::sweep::row_calls::{grid_row, RowRan};
use crate::sweep::runner::RunInfo;
use crate::sweep::{interrupt, SweepError};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The header of `failures.csv`.
pub const FAILURES_HEADER: [&str; 4] = ["run_id", "row_key", "backend", "error"];

/// Runs the served rows of a sweep and writes them.
pub struct RemoteRunner<'a> {
    pub(super) grid: &'a Grid,
    info: &'a RunInfo,
    pub(super) kind: EngineKind,
    pub(super) server: ServerSpec,
    pub(super) base: PathBuf,
    writers: Vec<Box<dyn RowWriter>>,
    failures: AppendCsv,
    progress: &'a Progress,
    done: Finished,
    base_outputs: HashMap<usize, Vec<String>>,
    pub(super) log: PathBuf,
    /// Rows written by this process.
    pub written: usize,
    /// Points that failed.
    pub failed: usize,
    /// Distinct engine versions the servers reported (for meta.json).
    pub engine_versions: Vec<String>,
    /// Open-loop settings, when the spec has `[load]`.
    pub load: Option<crate::load::LoadSpec>,
    /// The clients' runtime: one thread polls every request in flight.
    pub(super) rt: tokio::runtime::Runtime,
}

impl<'a> RemoteRunner<'a> {
    /// A runner writing rows to `writers` (runs.csv last), failures to
    /// `dir/failures.csv` and the servers' output to `dir/servers.log`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        grid: &'a Grid,
        info: &'a RunInfo,
        kind: EngineKind,
        server: ServerSpec,
        base: &Path,
        writers: Vec<Box<dyn RowWriter>>,
        dir: &Path,
        progress: &'a Progress,
        done: Finished,
    ) -> Result<RemoteRunner<'a>, SweepError> {
        Ok(RemoteRunner {
            grid,
            info,
            kind,
            server,
            base: base.to_path_buf(),
            writers,
            failures: AppendCsv::open(&dir.join("failures.csv"), &FAILURES_HEADER)?,
            log: dir.join("servers.log"),
            progress,
            done,
            base_outputs: HashMap::new(),
            written: 0,
            failed: 0,
            engine_versions: Vec::new(),
            load: None,
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    SweepError::Input(format!("starting the HTTP client's runtime: {e}"))
                })?,
        })
    }

    fn pending(&self, model: usize, config: Option<usize>) -> Vec<usize> {
        (0..self.grid.points.len())
            .filter(|&p| {
                let pt = &self.grid.points[p];
                let g = &self.grid.groups[pt.group];
                g.model == model
                    && pt.config == config
                    && self.info.shard.owns(pt.group)
                    && !self.done.contains(&pt.key)
            })
            .collect()
    }

    /// Requests still to send (for the progress bar: one tick per row here).
    pub fn pending_rows(&self) -> u64 {
        (0..self.grid.models.len())
            .flat_map(|m| {
                std::iter::once(None)
                    .chain((0..self.grid.configs[m].len()).map(Some))
                    .map(move |c| (m, c))
            })
            .map(|(m, c)| self.pending(m, c).len() as u64)
            .sum()
    }

    /// Which configs of model `m` run: every one, or (attached) the server's one.
    fn configs(&self, m: usize) -> Result<Vec<Option<usize>>, SweepError> {
        let n = self.grid.configs[m].len();
        if self.server.url.is_none() {
            return Ok(std::iter::once(None).chain((0..n).map(Some)).collect());
        }
        match n {
            0 => Ok(vec![None]),
            1 => {
                let skipped = self.pending(m, None).len();
                if skipped > 0 {
                    self.progress.warn(&format!(
                        "note: {skipped} baseline rows not run: an attached server runs one config (give `command` to start a baseline server)"
                    ));
                }
                Ok(vec![Some(0)])
            }
            _ => Err(SweepError::Input(format!(
                "[server] `url`: an attached server runs one draft config, but the spec gives {n} for model `{}`",
                self.grid.models[m].name
            ))),
        }
    }

    /// Runs every pending row of this shard.
    pub fn run(&mut self) -> Result<(), SweepError> {
        for m in 0..self.grid.models.len() {
            let mut prompts: HashMap<usize, Vec<PromptInput>> = HashMap::new();
            for c in self.configs(m)? {
                let rows = self.pending(m, c);
                if rows.is_empty() {
                    continue;
                }
                for &p in &rows {
                    let s = self.grid.groups[self.grid.points[p].group].prompt_set;
                    if let Entry::Vacant(e) = prompts.entry(s) {
                        e.insert(prompt_inputs(&self.grid.models[m], &self.grid.sets[s])?);
                    }
                }
                self.run_config(m, c, &rows, &prompts)?;
            }
        }
        Ok(())
    }

    fn fail(&mut self, p: usize, reason: &str) -> Result<(), SweepError> {
        let key = self.grid.points[p].key.clone();
        self.progress.warn(&format!("failed {key}: {reason}"));
        self.failures.append(&[vec![
            self.info.run_id.clone(),
            key,
            self.kind.name().to_string(),
            reason.to_string(),
        ]])?;
        self.failed += 1;
        Ok(())
    }

    fn run_config(
        &mut self,
        m: usize,
        c: Option<usize>,
        rows: &[usize],
        prompts: &HashMap<usize, Vec<PromptInput>>,
    ) -> Result<(), SweepError> {
        let label = c.map_or("base".to_string(), |c| {
            self.grid.configs[m][c].label.clone()
        });
        self.progress.note(&format!(
            "{} server for {} {label}",
            self.kind.name(),
            self.grid.models[m].name
        ));
        let mut live = match self.connect(m, c) {
            Ok(l) => l,
            Err(e) if interrupt::requested() => return Err(SweepError::Interrupted(e.0)),
            Err(e) => {
                let mut reason = e.0;
                if self.server.command.is_some() {
                    reason.push_str(" (the servers' output is in servers.log)");
                }
                for &p in rows {
                    self.fail(p, &reason)?;
                }
                return Ok(());
            }
        };
        if let Some(p) = &live.process {
            self.progress.note(&format!(
                "{} server pid {} at {}: {}",
                live.client.name(),
                p.pid(),
                live.url,
                p.command
            ));
        }
        if let Some(v) = self.rt.block_on(live.client.engine_version()) {
            if !self.engine_versions.contains(&v) {
                self.engine_versions.push(v);
            }
        }
        if let Some(why) = self.served_mismatch(m, c, &*live.client) {
            for &p in rows {
                self.fail(p, &format!("served config differs from the spec: {why}"))?;
            }
            return Ok(());
        }
        // Unrecorded warm-up batches on the first row's prompts.
        let first = &self.grid.groups[self.grid.points[rows[0]].group];
        let steps = c.map_or(0, |c| self.grid.configs[m][c].speculative.steps);
        for _ in 0..self.info.warmup {
            let batch: Vec<PromptInput> = prompts[&first.prompt_set]
                .iter()
                .take(first.batch_size)
                .cloned()
                .collect();
            let params = self.params(first.temperature, first.repeat);
            let sent = super::row::send_all(&*live.client, &batch, &params, first.batch_size);
            if let Err(e) = self.rt.block_on(sent) {
                if interrupt::requested() {
                    return Err(SweepError::Interrupted(e.0));
                }
                for &p in rows {
                    self.fail(p, &format!("warm-up: {}", e.0))?;
                }
                return Ok(());
            }
        }
        let mut broken: Option<String> = None;
        for &p in rows {
            if interrupt::requested() {
                return Err(SweepError::Interrupted(format!(
                    "row `{}` was dropped",
                    self.grid.points[p].key
                )));
            }
            if let Some(reason) = &broken {
                self.fail(
                    p,
                    &format!("not run: an earlier row of this server failed ({reason})"),
                )?;
                continue;
            }
            let point = &self.grid.points[p];
            let g = &self.grid.groups[point.group];
            let speculative = self.grid.speculative_of(point);
            self.progress.row(&point.key);
            let start_time = SystemTime::now();
            let params = self.params(g.temperature, g.repeat);
            let schedule = self.schedule(g.request_rate, prompts[&g.prompt_set].len(), g.repeat);
            let result = self.rt.block_on(run_row(
                &mut *live.client,
                &prompts[&g.prompt_set],
                &params,
                g.batch_size,
                (steps, speculative.num_draft_tokens),
                schedule.as_deref(),
            ));
            self.progress.tick();
            match result {
                Ok(r) => self.finish(p, r, start_time, &live.url)?,
                Err(_) if interrupt::requested() => {
                    return Err(SweepError::Interrupted(format!(
                        "row `{}` was dropped",
                        point.key
                    )))
                }
                Err(e) => {
                    let mut reason = e.0;
                    if let Some(process) = live.process.as_mut() {
                        // A server that died may take a moment to be seen exited.
                        for _ in 0..10 {
                            if let Some(exit) = process.exited() {
                                reason = format!("{reason} ({exit})");
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                    self.fail(p, &reason)?;
                    broken = Some(reason);
                }
            }
        }
        drop(live);
        Ok(())
    }

    /// The arrival times of an open-loop point (`None`: closed loop).
    fn schedule(&self, rate: Option<f64>, prompts: usize, repeat: usize) -> Option<Vec<f64>> {
        let (rate, load) = (rate?, self.load.as_ref()?);
        let seed = load
            .seed
            .unwrap_or(self.info.seed)
            .wrapping_add(repeat as u64);
        Some(crate::load::arrivals::schedule(
            rate,
            load.num_requests.unwrap_or(prompts),
            load.arrival,
            seed,
            load.duration_s,
        ))
    }

    fn params(&self, temperature: f64, repeat: usize) -> RequestParams {
        RequestParams {
            max_new_tokens: self.info.max_new_tokens,
            temperature,
            seed: self.info.seed.wrapping_add(repeat as u64),
            ignore_eos: self.info.ignore_eos,
        }
    }

    fn finish(
        &mut self,
        p: usize,
        r: RowResult,
        start_time: SystemTime,
        url: &str,
    ) -> Result<(), SweepError> {
        let point = &self.grid.points[p];
        let g = &self.grid.groups[point.group];
        let config = self.grid.config_of(point);
        let speculative = self.grid.speculative_of(point);
        let asked = Asked {
            steps: speculative.steps,
            num_draft_tokens: speculative.num_draft_tokens,
            max_new_tokens: self.info.max_new_tokens,
            requests: r.requests.len(),
        };
        if let Some(why) = impossible(&r, asked) {
            return self.fail(p, &format!("the server's figures are impossible: {why}"));
        }
        let mut measures = r.measures;
        let greedy = g.temperature == 0.0;
        if config.is_none() {
            measures.speedup = Some(1.0);
            measures.lossless = greedy.then_some(true);
            self.base_outputs.insert(point.group, r.outputs.clone());
        } else {
            let base = g
                .points
                .iter()
                .map(|&b| &self.grid.points[b])
                .find(|b| b.config.is_none() && b.spans == point.spans)
                .and_then(|b| self.done.throughput.get(&b.key).copied())
                .unwrap_or(0.0);
            measures.speedup = (base > 0.0).then(|| measures.throughput_tok_s / base);
            if greedy {
                measures.lossless = self.base_outputs.get(&point.group).map(|b| *b == r.outputs);
                if measures.lossless == Some(false) {
                    self.progress.note(&format!(
                        "warning: row `{}` is not lossless: its text differs from the baseline's",
                        point.key
                    ));
                }
            }
        }
        if let (Some(server), true) = (r.server_tau, speculative.steps > 0) {
            // The server's figure is a running average since it started (warm-up
            // included): close to the row's tau, not equal; far off means the
            // two count different things.
            let line = format!(
                "{}: tau {:.4}, server's running avg_spec_accept_length {server:.4}",
                point.key, measures.tau
            );
            if (server - measures.tau).abs() > 0.1 * measures.tau {
                self.progress
                    .warn(&format!("warning: {line} (differ by more than 10%)"));
            } else {
                self.progress.note(&line);
            }
        }
        let row = grid_row(
            self.grid,
            self.info,
            p,
            RowRan {
                start_time,
                backend: self.kind.name().to_string(),
                device: url.to_string(),
                prompts: r.requests.len(),
                measures,
                positions: r.positions,
                intervals: if point.spans == crate::run_folder::SpanMode::On {
                    vec![r.interval]
                } else {
                    Vec::new()
                },
                requests: super::records::records(self.grid, p, &r.requests, self.kind),
            },
        );
        for w in &mut self.writers {
            w.write(&row)?;
        }
        self.done
            .throughput
            .insert(row.row_key.clone(), row.measures.throughput_tok_s);
        self.written += 1;
        Ok(())
    }
}
