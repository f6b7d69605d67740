//! Spans timed with CUDA events: `begin`/`end` record events on the stream
//! (no host synchronisation), `finish_step` waits once and reads every
//! elapsed time of the step into the same [`SpanLog`] the CPU fills. With
//! `SPECULA_STAMPS=1` each span's begin and end and each step's finish also
//! leave a host mark in the stamps (`host_mark`), so that a step's timeline
//! shows where the GPU waits for the host.

use crate::timing::{Span, SpanLog, SpanRecorder};
use cudarc::driver::{sys, CudaEvent};
use specula_kernels::cuda::stamps::{host_mark, stamps_on};
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

    /// Leaves a host mark (`code`: 2 x the span's place in [`Span::ALL`],
    /// + 1 at its end; 100 a step's finish) in the stamps.
    fn mark(&mut self, code: u32, label: &str) {
        if let Err(e) = host_mark(&self.gpu, code, label) {
            self.error.get_or_insert(e.to_string());
        }
    }

    fn mark_span(&mut self, span: Span, end: bool) {
        if !stamps_on() {
            return;
        }
        let place = Span::ALL.iter().position(|&s| s == span).unwrap_or(0) as u32;
        let label = format!("mark:{}:{}", span.name(), if end { "end" } else { "begin" });
        self.mark(2 * place + end as u32, &label);
    }
}

impl SpanRecorder for GpuRecorder {
    fn begin(&mut self, span: Span) {
        self.mark_span(span, false);
        self.open = self.record().map(|e| (span, e));
    }

    fn end(&mut self, span: Span) {
        self.mark_span(span, true);
        if let Some((s, start)) = self.open.take() {
            debug_assert_eq!(s, span, "span ended out of order");
            if let Some(stop) = self.record() {
                self.pending.push((span, start, stop));
            }
        }
    }

    fn finish_step(&mut self) {
        self.mark(100, "mark:finish_step");
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
