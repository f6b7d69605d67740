//! Test hooks: deliberate, clearly named regressions a sweep can plant so
//! that the gate's tests (and anyone checking the gate) can see it catch
//! them. Off unless a hidden `--inject-*` flag of `specula sweep` is given;
//! a run that used one records it in meta.json under `test_hooks`.

use crate::run_folder::TestHooks;
use specula_engine::speculative::SpeculativeConfig;
use specula_engine::timing::{Span, SpanRecorder};
use std::time::{Duration, Instant};

/// The config the engine actually runs for a row configured as `configured`
/// under `hooks` (a `draft_steps` hook caps the depth).
pub fn effective(hooks: &TestHooks, configured: SpeculativeConfig) -> SpeculativeConfig {
    match hooks.draft_steps {
        Some(cap) if configured.steps > cap && cap > 0 => {
            let n = configured.num_draft_tokens.min(cap * configured.topk + 1);
            SpeculativeConfig::new(cap, configured.topk, n).unwrap_or(configured)
        }
        _ => configured,
    }
}

/// A recorder that stretches every `verify` span by `pct` percent (busy
/// waiting, so the time is spent inside the span like real work), then
/// passes every boundary on to `inner`.
pub struct DelayVerify<'a> {
    inner: &'a mut dyn SpanRecorder,
    pct: f64,
    started: Option<Instant>,
}

impl<'a> DelayVerify<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a mut dyn SpanRecorder, pct: f64) -> DelayVerify<'a> {
        DelayVerify {
            inner,
            pct,
            started: None,
        }
    }
}

impl SpanRecorder for DelayVerify<'_> {
    fn begin(&mut self, span: Span) {
        self.inner.begin(span);
        if span == Span::Verify {
            self.started = Some(Instant::now());
        }
    }

    fn end(&mut self, span: Span) {
        if let (Span::Verify, Some(t0)) = (span, self.started.take()) {
            let extra = Duration::from_secs_f64(t0.elapsed().as_secs_f64() * self.pct / 100.0);
            let until = Instant::now() + extra;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        self.inner.end(span);
    }

    fn finish_step(&mut self) {
        self.inner.finish_step();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use specula_engine::timing::HostRecorder;

    #[test]
    fn a_draft_step_cap_makes_deep_configs_shallower_and_leaves_others() {
        let hooks = TestHooks {
            draft_steps: Some(2),
            ..TestHooks::default()
        };
        let deep = SpeculativeConfig::new(4, 2, 8).unwrap();
        let got = effective(&hooks, deep);
        assert_eq!((got.steps, got.topk, got.num_draft_tokens), (2, 2, 5));
        assert_eq!(
            effective(&hooks, SpeculativeConfig::chain(1)),
            SpeculativeConfig::chain(1)
        );
        assert_eq!(
            effective(&hooks, SpeculativeConfig::BASELINE),
            SpeculativeConfig::BASELINE
        );
    }

    #[test]
    fn the_verify_delay_stretches_the_verify_span() {
        let mut host = HostRecorder::default();
        let mut rec = DelayVerify::new(&mut host, 100.0);
        for span in [Span::Draft, Span::Verify] {
            rec.begin(span);
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(2) {}
            rec.end(span);
        }
        let verify = host.log.total(Span::Verify).as_secs_f64();
        // A lower bound that holds by construction, whatever the machine's load.
        assert!(verify >= 0.004, "verify at least doubled: {verify}");
        assert_eq!(host.log.count(Span::Draft), 1);
    }
}
