//! CPU time of the decode phase. On cores shared with other jobs a row's
//! wall time swings with their load, but the CPU time the process itself
//! spends on the same work hardly moves; the gate's timed measure
//! (`cpu_speedup`) is built on it. Prefill (the target's and the drafter's)
//! is taken out through a recorder that reads the process CPU clock at the
//! boundaries of those spans only.

use specula_engine::timing::{Span, SpanRecorder};

/// CPU seconds this process has used so far, all threads together.
pub fn process_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Passes every span boundary on to `inner`, adding up the CPU time spent
/// inside `prefill` and `draft_prefill` spans ([`Span::per_call`]).
pub struct PrefillCpu<'a> {
    inner: &'a mut dyn SpanRecorder,
    started: Option<f64>,
    /// CPU seconds spent in prefill so far.
    pub prefill_cpu_s: f64,
}

impl<'a> PrefillCpu<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a mut dyn SpanRecorder) -> PrefillCpu<'a> {
        PrefillCpu {
            inner,
            started: None,
            prefill_cpu_s: 0.0,
        }
    }
}

impl SpanRecorder for PrefillCpu<'_> {
    fn begin(&mut self, span: Span) {
        if span.per_call() {
            self.started = Some(process_cpu_s());
        }
        self.inner.begin(span);
    }

    fn end(&mut self, span: Span) {
        self.inner.end(span);
        if span.per_call() {
            if let Some(t0) = self.started.take() {
                self.prefill_cpu_s += process_cpu_s() - t0;
            }
        }
    }

    fn finish_step(&mut self) {
        self.inner.finish_step();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use specula_engine::timing::NullRecorder;

    #[test]
    fn the_process_cpu_clock_advances_with_work() {
        let t0 = process_cpu_s();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_s() > t0);
    }

    #[test]
    fn only_prefill_time_is_counted_as_prefill() {
        let mut null = NullRecorder;
        let mut rec = PrefillCpu::new(&mut null);
        rec.begin(Span::Verify);
        rec.end(Span::Verify);
        assert_eq!(rec.prefill_cpu_s, 0.0);
        rec.begin(Span::Prefill);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        rec.end(Span::Prefill);
        assert!(rec.prefill_cpu_s > 0.0);
    }
}
