//! An opt-in breakdown of GPU forwards by operation (set
//! `SPECULA_GPU_PROFILE=1`): CUDA events between operations, summed per
//! operation name, plus the host time spent enqueuing. Off, it costs one
//! branch per mark.

use cudarc::driver::{sys, CudaEvent};
use specula_kernels::cuda::Gpu;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

static TOTALS: Mutex<Option<BTreeMap<&'static str, (f64, usize)>>> = Mutex::new(None);

/// Whether profiling is on (read once).
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SPECULA_GPU_PROFILE").is_some())
}

/// Marks of one forward.
pub(crate) struct OpClock {
    marks: Vec<(&'static str, CudaEvent)>,
    start: Option<(CudaEvent, Instant)>,
    enqueued_ms: f64,
}

impl OpClock {
    /// Starts a forward's clock (inert when profiling is off).
    pub(crate) fn start(gpu: &Gpu) -> OpClock {
        let start = enabled().then(|| {
            let e = event(gpu);
            (e, Instant::now())
        });
        OpClock {
            marks: Vec::new(),
            start,
            enqueued_ms: 0.0,
        }
    }

    /// A clock that records nothing.
    pub(crate) fn off() -> OpClock {
        OpClock {
            marks: Vec::new(),
            start: None,
            enqueued_ms: 0.0,
        }
    }

    /// Every launch of the forward is enqueued (before its first download).
    pub(crate) fn enqueued(&mut self) {
        if let Some((_, t0)) = &self.start {
            self.enqueued_ms = t0.elapsed().as_secs_f64() * 1e3;
        }
    }

    /// Whether the clock records spans (launches then stay on the main
    /// stream, in order, so that each span times its own kernels).
    pub(crate) fn running(&self) -> bool {
        self.start.is_some()
    }

    /// The operation `name` ends here.
    pub(crate) fn mark(&mut self, gpu: &Gpu, name: &'static str) {
        if self.start.is_some() {
            self.marks.push((name, event(gpu)));
        }
    }

    /// Adds this forward's times to the totals (waits for the GPU).
    pub(crate) fn finish(self) {
        let Some((first, t0)) = self.start else {
            return;
        };
        let host_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
        let map = totals.get_or_insert_with(BTreeMap::new);
        let mut prev = &first;
        for (name, e) in &self.marks {
            let ms = prev.elapsed_ms(e).unwrap_or(f32::NAN) as f64;
            let t = map.entry(name).or_insert((0.0, 0));
            t.0 += ms;
            prev = e;
        }
        let t = map.entry("(host: enqueue)").or_insert((0.0, 0));
        t.0 += self.enqueued_ms;
        let t = map.entry("(host: whole forward)").or_insert((0.0, 0));
        t.0 += host_ms;
        t.1 += 1;
    }
}

fn event(gpu: &Gpu) -> CudaEvent {
    let e = gpu
        .ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .expect("profiling: CUDA event");
    e.record(&gpu.stream).expect("profiling: CUDA event record");
    e
}

/// The totals so far, in milliseconds, with the number of forwards; resets them.
pub fn take_profile() -> Vec<(&'static str, f64, usize)> {
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let map = totals.take().unwrap_or_default();
    let n = map.get("(host: whole forward)").map_or(0, |t| t.1);
    map.into_iter().map(|(k, v)| (k, v.0, n)).collect()
}
