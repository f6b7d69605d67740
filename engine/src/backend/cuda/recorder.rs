//! Spans timed with CUDA events: `begin`/`end` record events on the stream
//! (no host synchronisation), `finish_step` waits once and reads every
//! elapsed time of the step into the same [`SpanLog`] the CPU fills.

use crate::timing::{Span, SpanLog, SpanRecorder};
use cudarc::driver::{sys, CudaEvent};
use specula_kernels::cuda::Gpu;
use std::sync::Arc;

/// A [`SpanRecorder`] over CUDA events.
pub struct GpuRecorder {
    gpu: Arc<Gpu>,
    spare: Vec<CudaEvent>,
    open: Option<(Span, CudaEvent)>,
    pending: Vec<(Span, CudaEvent, CudaEvent)>,
    /// What was recorded (nanoseconds).
    pub log: SpanLog,
    /// The first event error, if any (spans after it are dropped).
    pub error: Option<String>,
}

impl GpuRecorder {
    /// A recorder on `gpu`'s stream.
    pub fn new(gpu: Arc<Gpu>) -> GpuRecorder {
        GpuRecorder {
            gpu,
            spare: Vec::new(),
            open: None,
            pending: Vec::new(),
            log: SpanLog::default(),
            error: None,
        }
    }

    fn event(&mut self) -> Option<CudaEvent> {
        if let Some(e) = self.spare.pop() {
            return Some(e);
        }
        match self
            .gpu
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        {
            Ok(e) => Some(e),
            Err(e) => {
                self.error.get_or_insert(e.to_string());
                None
            }
        }
    }

    fn record(&mut self) -> Option<CudaEvent> {
        let e = self.event()?;
        match e.record(&self.gpu.stream) {
            Ok(()) => Some(e),
            Err(err) => {
                self.error.get_or_insert(err.to_string());
                None
            }
        }
    }
}

impl SpanRecorder for GpuRecorder {
    fn begin(&mut self, span: Span) {
        self.open = self.record().map(|e| (span, e));
    }

    fn end(&mut self, span: Span) {
        if let Some((s, start)) = self.open.take() {
            debug_assert_eq!(s, span, "span ended out of order");
            if let Some(stop) = self.record() {
                self.pending.push((span, start, stop));
            }
        }
    }

    fn finish_step(&mut self) {
        for (span, start, stop) in std::mem::take(&mut self.pending) {
            match start.elapsed_ms(&stop) {
                Ok(ms) => self
                    .log
                    .samples
                    .entry(span)
                    .or_default()
                    .push((ms as f64 * 1e6) as u64),
                Err(e) => {
                    self.error.get_or_insert(e.to_string());
                }
            }
            self.spare.push(start);
            self.spare.push(stop);
        }
    }
}
