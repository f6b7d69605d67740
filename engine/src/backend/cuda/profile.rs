//! An opt-in breakdown of GPU forwards by operation (set
//! `SPECULA_GPU_PROFILE=1`): CUDA events between operations, summed per
//! operation name, plus the host time spent enqueuing. Off, it costs one
//! branch per mark. A profiled forward runs eagerly, and its host enqueues
//! launches slower than the GPU runs them, so the clock first holds the
//! stream ([`hold_stream`]) for longer than the last forward took to
//! enqueue: the spans are then the GPU's time, not the host's launch calls.
//! Totals are kept per forward size (rows), so that a bench's decode
//! forwards are not mixed with its prefill forwards.

use cudarc::driver::{sys, CudaEvent};
use specula_kernels::cuda::{hold_stream, Gpu};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Per forward size (rows): per operation, milliseconds summed and forwards.
type Totals = BTreeMap<usize, BTreeMap<&'static str, (f64, usize)>>;

static TOTALS: Mutex<Option<Totals>> = Mutex::new(None);

/// Nanoseconds the last profiled forward took to enqueue (0: none yet).
static LAST_ENQUEUE_NS: AtomicU64 = AtomicU64::new(0);

/// How long a profiled forward holds the stream before its first event:
/// twice the last forward's enqueue time and a millisecond (20 ms for the
/// first), at most 200 ms.
fn hold_ns() -> u64 {
    match LAST_ENQUEUE_NS.load(Ordering::Relaxed) {
        0 => 20_000_000,
        last => (2 * last + 1_000_000).min(200_000_000),
    }
}

/// Whether profiling is on (read once).
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SPECULA_GPU_PROFILE").is_some())
}

/// Marks of one forward.
pub(crate) struct OpClock {
    marks: Vec<(&'static str, CudaEvent)>,
    /// The first event, when the host passed it, and the hold before it (ms).
    start: Option<(CudaEvent, Instant, f64)>,
    enqueued_ms: f64,
    /// The forward's rows (its totals' key).
    rows: usize,
}

impl OpClock {
    /// Starts the clock of a forward of `rows` rows (inert when profiling
    /// is off).
    pub(crate) fn start(gpu: &Gpu, rows: usize) -> OpClock {
        let start = enabled().then(|| {
            let hold = hold_ns();
            hold_stream(gpu, hold).expect("profiling: hold_stream");
            let e = event(gpu);
            (e, Instant::now(), hold as f64 * 1e-6)
        });
        OpClock {
            marks: Vec::new(),
            start,
            enqueued_ms: 0.0,
            rows,
        }
    }

    /// A clock that records nothing.
    pub(crate) fn off() -> OpClock {
        OpClock {
            marks: Vec::new(),
            start: None,
            enqueued_ms: 0.0,
            rows: 0,
        }
    }

    /// Every launch of the forward is enqueued (before its first download).
    pub(crate) fn enqueued(&mut self) {
        if let Some((_, t0, _)) = &self.start {
            let took = t0.elapsed();
            self.enqueued_ms = took.as_secs_f64() * 1e3;
            LAST_ENQUEUE_NS.store(took.as_nanos() as u64, Ordering::Relaxed);
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
        let Some((first, t0, hold_ms)) = self.start else {
            return;
        };
        // The host waited out the hold too: what is left is the forward's.
        let host_ms = (t0.elapsed().as_secs_f64() * 1e3 - hold_ms).max(self.enqueued_ms);
        let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
        let map = totals
            .get_or_insert_with(BTreeMap::new)
            .entry(self.rows)
            .or_default();
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

/// The totals so far by forward size (rows): per operation, milliseconds
/// summed, with the number of forwards of that size; resets them.
pub fn take_profile() -> BTreeMap<usize, Vec<(&'static str, f64, usize)>> {
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let sizes = totals.take().unwrap_or_default();
    sizes
        .into_iter()
        .map(|(rows, map)| {
            let n = map.get("(host: whole forward)").map_or(0, |t| t.1);
            (rows, map.into_iter().map(|(k, v)| (k, v.0, n)).collect())
        })
        .collect()
}
