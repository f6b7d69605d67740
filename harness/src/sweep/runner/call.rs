//! One `generate` call of a sweep row ([`super::Runner`]): on the GPU when
//! the group's target loaded there, else on the CPU engine through the
//! sweep's test hooks (planted work, delayed verification), with its spans
//! recorded by the clock the run asks for.

use super::super::cpu_clock::PrefillCpu;
use super::super::grid::Point;
use super::super::hooks::{effective, DelayVerify};
use super::super::loaded::{drafter, planted_drafter, Loaded};
use super::super::planted::PlantedTarget;
use super::super::row_calls::Outcome;
use super::super::SweepError;
use super::Runner;
use specula_engine::generate::generate;
use specula_engine::speculative::Drafter;
use specula_engine::timing::{HostRecorder, SpanLog, SpanRecorder};

impl Runner<'_> {
    /// One `generate` call for row `point`, and the CPU seconds its prefill took.
    pub(super) fn call(
        &self,
        l: &mut Loaded,
        point: &Point,
        batch: &[Vec<u32>],
        rec: &mut dyn SpanRecorder,
    ) -> Result<(specula_engine::generation::Generation, f64), SweepError> {
        let g = &self.grid.groups[point.group];
        let speculative = effective(&self.info.hooks, self.grid.speculative_of(point));
        let params = self.params(speculative, g.temperature, g.repeat);
        let mut delayed;
        let rec: &mut dyn SpanRecorder = match self.info.hooks.verify_delay_pct {
            Some(pct) if point.config.is_some() => {
                delayed = DelayVerify::new(rec, pct);
                &mut delayed
            }
            _ => rec,
        };
        let mut rec = PrefillCpu::new(rec);
        let config = self.grid.config_of(point);
        #[cfg(feature = "cuda")]
        if let Some(gpu) = l.gpu.as_mut() {
            let index = match (config, &self.grid.models[g.model].draft_dir) {
                (Some(c), Some(dir)) => Some(gpu.drafter(dir, &c.capture)?),
                _ => None,
            };
            let gen = gpu.generate(index, batch, &params, &mut rec)?;
            return Ok((gen, rec.prefill_cpu_s));
        }
        let cpu = Loaded::cpu_target(&l.cpu)?;
        let drafter = match config {
            Some(c) => Some(drafter(
                &mut l.drafters,
                cpu,
                &self.grid.models[g.model],
                &c.capture,
            )?),
            None => None,
        };
        let hooks = &self.info.hooks;
        let drafter: Option<&mut dyn Drafter> = match (config, hooks.draft_work_pct) {
            (Some(c), Some(pct)) => {
                let d = planted_drafter(
                    &mut l.planted_drafters,
                    cpu,
                    &self.grid.models[g.model],
                    &c.capture,
                )?;
                // Counted over the drafter's life (the same share goes on counting).
                d.model().plant(Some(pct));
                Some(d)
            }
            _ => drafter.map(|d| d as &mut dyn Drafter),
        };
        let verify = hooks.verify_work_pct.filter(|_| config.is_some());
        let decode_pct = match (hooks.target_work_pct, verify) {
            (None, None) => None,
            (t, v) => Some(t.unwrap_or(0.0) + v.unwrap_or(0.0)),
        };
        let target = PlantedTarget::new(cpu, decode_pct, &l.planted_prefills);
        let gen = generate(&target, batch, &params, drafter, &mut rec)?;
        Ok((gen, rec.prefill_cpu_s))
    }

    /// One `generate` call with its spans recorded: CUDA events on the GPU,
    /// the host clock on the CPU.
    pub(super) fn call_recorded(
        &self,
        l: &mut Loaded,
        point: &Point,
        batch: &[Vec<u32>],
    ) -> Result<((specula_engine::generation::Generation, f64), SpanLog), SweepError> {
        #[cfg(feature = "cuda")]
        if let Some(mut rec) = l.gpu.as_ref().map(|g| g.recorder()) {
            let out = self.call(l, point, batch, &mut rec)?;
            if let Some(e) = rec.error {
                return Err(SweepError::Input(format!("GPU: CUDA events failed: {e}")));
            }
            return Ok((out, rec.log));
        }
        if crate::cost::recorder::probing() {
            let mut rec = crate::cost::recorder::CountingRecorder::new(&point.key);
            let out = self.call(l, point, batch, &mut rec)?;
            rec.finish();
            return Ok((out, SpanLog::default()));
        }
        if super::super::thread_clock::thread_cpu_clock() {
            let mut rec = super::super::thread_clock::ThreadCpuRecorder::default();
            let out = self.call(l, point, batch, &mut rec)?;
            return Ok((out, rec.log));
        }
        let mut rec = HostRecorder::default();
        let out = self.call(l, point, batch, &mut rec)?;
        Ok((out, rec.log))
    }

    /// The finished row with the `device` column of where it ran (the GPU's name on a GPU sweep).
    pub(super) fn on_device(&self, _l: &Loaded, o: Outcome) -> Outcome {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = _l.gpu.as_ref() {
            let mut o = o;
            o.row.device = gpu.device_name();
            return o;
        }
        o
    }
}
