//! A span recorder on the calling thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`), for timing on cores shared with other jobs:
//! time the thread spent preempted is left out, where the host clock counts
//! it into whichever span it fell in (a 3 ms time slice lands on a 0.6 ms
//! draft forward). Chosen for a whole process by `specula sweep
//! --span-clock thread-cpu` (`specula ab` uses it).

use specula_engine::timing::{Span, SpanLog, SpanRecorder};
use std::sync::atomic::{AtomicBool, Ordering};

static THREAD_CPU: AtomicBool = AtomicBool::new(false);

/// From now on, recorded spans of this process use the thread CPU clock.
pub fn use_thread_cpu_clock() {
    THREAD_CPU.store(true, Ordering::SeqCst);
}

/// Whether recorded spans use the thread CPU clock.
pub fn thread_cpu_clock() -> bool {
    THREAD_CPU.load(Ordering::SeqCst)
}

/// This thread's CPU time in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Records span durations in thread CPU nanoseconds.
#[derive(Debug, Default)]
pub struct ThreadCpuRecorder {
    open: Option<(Span, u64)>,
    /// What was recorded.
    pub log: SpanLog,
}

impl SpanRecorder for ThreadCpuRecorder {
    fn begin(&mut self, span: Span) {
        self.open = Some((span, thread_cpu_ns()));
    }

    fn end(&mut self, span: Span) {
        if let Some((s, t0)) = self.open.take() {
            if s == span {
                let d = thread_cpu_ns().saturating_sub(t0);
                self.log.samples.entry(span).or_default().push(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_shows_as_cpu_time_in_its_span() {
        let mut r = ThreadCpuRecorder::default();
        r.begin(Span::Verify);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        r.end(Span::Verify);
        assert_eq!(r.log.count(Span::Verify), 1);
        assert!(r.log.total(Span::Verify).as_nanos() > 0, "{x}");
    }
}
