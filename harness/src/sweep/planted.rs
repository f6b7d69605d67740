//! Planted extra work (test hooks, `--inject-*-work-pct`): a forward run a
//! second time on a fixed share of calls, its result and cache entries
//! discarded. The tokens are the same; the span does exactly that share
//! more of the same work, so instruction counts see it as well as clocks
//! (a busy wait, the older `--inject-verify-delay-pct`, is time, not work).
//!
//! - [`Share`]: which calls repeat (call n when floor(n * pct / 100) steps up);
//! - [`PlantedTarget`]: the target's forwards (decode forwards and prefills,
//!   each counted over the whole process);
//! - [`PlantedDraft`]: draft forwards of a drafter, repeated until the
//!   repeats' time is the share of the forwards' own time ([`TimedShare`],
//!   over the drafter's life): the draft's calls differ in size (a prompt's
//!   extend is many step forwards' work) and a repeat right after its
//!   forward finds the weights warm, so a share of calls fell short of the
//!   share of time (10% of calls measured +4% draft time, 20% +16%).
//!
//! Counting over the process, not per `generate` call, makes a row's share
//! the stated one: a call of 14 verify forwards has one repeat at 10% (7%)
//! and none at 5%, where 140 forwards over a row have 14 (at most one call
//! off in any stretch of calls).

use super::thread_clock::thread_cpu_ns;
use specula_engine::backend::{DraftBackend, LogitsWanted, SequenceCache, TargetBackend};
use specula_engine::config::{DraftConfig, TargetConfig};
use specula_engine::kv_cache::KvCache;
use specula_engine::model::{DraftModel, DraftOutput, ForwardBatch, HiddenInput, TargetOutput};
use specula_engine::Result;
use std::cell::Cell;
use std::sync::Mutex;

/// The decode forwards' share of the process: (percent in basis points, count).
static DECODE_SHARE: Mutex<Option<Share>> = Mutex::new(None);

/// The process-wide decode share for `pct`, continuing its count when the
/// share is the same as the last call's (a new share starts afresh).
fn decode_share(pct: Option<f64>) -> Option<Share> {
    let pct = pct?;
    let fresh = Share::new(pct);
    let guard = DECODE_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    match *guard {
        Some(s) if s.basis_points == fresh.basis_points => Some(s),
        _ => Some(fresh),
    }
}

/// Keeps the count of the decode share for the next call.
fn keep_decode_share(share: Option<Share>) {
    if let Some(s) = share {
        *DECODE_SHARE.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }
}

/// Which calls repeat their work so that `pct` percent of calls do: the
/// n-th call (from 1) repeats when `floor(n * pct / 100)` steps up (20%:
/// calls 5, 10, 15, ...; 10%: calls 10, 20, ...). Deterministic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// The share in hundredths of a percent (exact integer arithmetic).
    basis_points: u64,
    calls: u64,
}

impl Share {
    /// `pct` percent of calls (clamped to 0..=100).
    pub fn new(pct: f64) -> Share {
        Share {
            basis_points: (pct.clamp(0.0, 100.0) * 100.0).round() as u64,
            calls: 0,
        }
    }

    /// Counts a call; whether it repeats its work.
    pub fn due(&mut self) -> bool {
        self.calls += 1;
        let n = self.calls;
        n * self.basis_points / 10_000 > (n - 1) * self.basis_points / 10_000
    }
}

/// Counts a call on `share` (when there is one); whether it repeats.
fn due(share: &Cell<Option<Share>>) -> bool {
    match share.get() {
        Some(mut s) => {
            let d = s.due();
            share.set(Some(s));
            d
        }
        None => false,
    }
}

/// A target whose forwards repeat on a share of calls: decode forwards
/// (a cache already holds committed entries) on `decode`, prefills on `prefill`.
pub struct PlantedTarget<'a, B: TargetBackend + ?Sized> {
    inner: &'a B,
    decode: Cell<Option<Share>>,
    prefill: &'a Cell<Option<Share>>,
}

impl<'a, B: TargetBackend + ?Sized> PlantedTarget<'a, B> {
    /// Wraps `inner`: decode forwards repeat on `decode_pct` percent of the
    /// process's decode forwards (the count goes on from the last wrapper of
    /// the same share, so a row's share is the stated one however its
    /// forwards split into `generate` calls), prefills on the shared
    /// `prefill` share.
    pub fn new(inner: &'a B, decode_pct: Option<f64>, prefill: &'a Cell<Option<Share>>) -> Self {
        PlantedTarget {
            inner,
            decode: Cell::new(decode_share(decode_pct)),
            prefill,
        }
    }
}

impl<B: TargetBackend + ?Sized> Drop for PlantedTarget<'_, B> {
    fn drop(&mut self) {
        keep_decode_share(self.decode.get());
    }
}

impl<B: TargetBackend + ?Sized> TargetBackend for PlantedTarget<'_, B> {
    type Cache = B::Cache;

    fn config(&self) -> &TargetConfig {
        self.inner.config()
    }

    fn new_cache(&self) -> Result<Self::Cache> {
        self.inner.new_cache()
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        caches: &mut [Self::Cache],
        capture: &[usize],
        wanted: LogitsWanted,
    ) -> Result<TargetOutput> {
        let decode = caches.iter().any(|c| c.committed() > 0);
        let repeat = due(if decode { &self.decode } else { self.prefill });
        // The decode loop forwards on caches without scratch: dropping all
        // scratch after the extra forward restores them exactly.
        if repeat && caches.iter().all(|c| c.len() == c.committed()) {
            self.inner.forward(batch, caches, capture, wanted)?;
            let mut refs: Vec<&mut Self::Cache> = caches.iter_mut().collect();
            let keeps = vec![Vec::new(); refs.len()];
            self.inner.commit(&mut refs, &keeps)?;
        }
        self.inner.forward(batch, caches, capture, wanted)
    }

    /// The inner backend's forward without its head, repeated on the same
    /// share of calls as [`PlantedTarget::forward`]; a call the inner
    /// backend does not defer counts nothing (its `forward` counts it).
    fn forward_trunk(
        &self,
        batch: &ForwardBatch,
        caches: &mut [Self::Cache],
        capture: &[usize],
    ) -> Result<Option<(TargetOutput, Vec<f32>)>> {
        let decode = caches.iter().any(|c| c.committed() > 0);
        let share = if decode { &self.decode } else { self.prefill };
        let before = share.get();
        let repeat = due(share);
        if repeat && caches.iter().all(|c| c.len() == c.committed()) {
            if self.inner.forward_trunk(batch, caches, capture)?.is_none() {
                share.set(before);
                return Ok(None);
            }
            let mut refs: Vec<&mut Self::Cache> = caches.iter_mut().collect();
            let keeps = vec![Vec::new(); refs.len()];
            self.inner.commit(&mut refs, &keeps)?;
        }
        let out = self.inner.forward_trunk(batch, caches, capture)?;
        if out.is_none() {
            share.set(before);
        }
        Ok(out)
    }

    fn head_argmax(&self, finals: &[f32], rows: &[usize]) -> Result<Vec<u32>> {
        self.inner.head_argmax(finals, rows)
    }

    fn commit(&self, caches: &mut [&mut Self::Cache], keeps: &[Vec<usize>]) -> Result<()> {
        self.inner.commit(caches, keeps)
    }

    fn commit_all(&self, cache: &mut Self::Cache) -> Result<()> {
        self.inner.commit_all(cache)
    }

    fn release(&self, cache: Self::Cache) {
        self.inner.release(cache)
    }
}

/// Repeats calls until the repeats' time is a share of the calls' own time:
/// a call repeats when the repeats so far took less than `pct` percent of
/// the calls so far (so the repeats' total is within one call of the share,
/// however the calls differ in size or the repeats in speed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedShare {
    /// The share in hundredths of a percent (what identifies it).
    basis_points: u64,
    /// The calls' own time so far (nanoseconds, the thread's CPU clock).
    own_ns: u64,
    /// The repeats' time so far.
    repeated_ns: u64,
}

impl TimedShare {
    /// `pct` percent of the calls' time (clamped to 0..=100).
    pub fn new(pct: f64) -> TimedShare {
        TimedShare {
            basis_points: Share::new(pct).basis_points,
            own_ns: 0,
            repeated_ns: 0,
        }
    }

    /// Whether the next call repeats its work.
    pub fn due(&self) -> bool {
        u128::from(self.repeated_ns) * 10_000
            < u128::from(self.own_ns) * u128::from(self.basis_points)
    }

    /// Counts a call that took `own_ns` and whose repeat took `repeated_ns` (0: none).
    pub fn count(&mut self, own_ns: u64, repeated_ns: u64) {
        self.own_ns += own_ns;
        self.repeated_ns += repeated_ns;
    }
}

/// A CPU draft whose forwards repeat on a share of their time.
pub struct PlantedDraft {
    model: DraftModel,
    share: Cell<Option<TimedShare>>,
}

impl PlantedDraft {
    /// Wraps `model`, planting nothing until [`PlantedDraft::plant`].
    pub fn new(model: DraftModel) -> PlantedDraft {
        PlantedDraft {
            model,
            share: Cell::new(None),
        }
    }

    /// From now on, forwards repeat for `pct` percent of their time; the
    /// count goes on when the share is the one already planted (counted
    /// afresh otherwise).
    pub fn plant(&self, pct: Option<f64>) {
        let fresh = pct.map(TimedShare::new);
        match (self.share.get(), fresh) {
            (Some(old), Some(new)) if old.basis_points == new.basis_points => {}
            _ => self.share.set(fresh),
        }
    }
}

/// The same hidden input again.
fn again<'a>(h: &HiddenInput<'a>) -> HiddenInput<'a> {
    match h {
        HiddenInput::Aux(x) => HiddenInput::Aux(x),
        HiddenInput::Own(x) => HiddenInput::Own(x),
        HiddenInput::AuxRows(x) => HiddenInput::AuxRows(x),
    }
}

impl DraftBackend for PlantedDraft {
    type Cache = KvCache;

    fn config(&self) -> &DraftConfig {
        self.model.config()
    }

    fn draft_to_target(&self) -> &[u32] {
        self.model.draft_to_target()
    }

    fn new_cache(&self) -> Result<KvCache> {
        DraftBackend::new_cache(&self.model)
    }

    fn forward(
        &self,
        batch: &ForwardBatch,
        hidden: HiddenInput<'_>,
        caches: &mut [KvCache],
        top_k: Option<usize>,
    ) -> Result<DraftOutput> {
        let Some(mut share) = self.share.get() else {
            return DraftBackend::forward(&self.model, batch, hidden, caches, top_k);
        };
        let t0 = thread_cpu_ns();
        if share.due() {
            let lens: Vec<usize> = caches.iter().map(KvCache::len).collect();
            DraftBackend::forward(&self.model, batch, again(&hidden), caches, top_k)?;
            for (c, len) in caches.iter_mut().zip(lens) {
                c.truncate(len);
            }
        }
        let t1 = thread_cpu_ns();
        let out = DraftBackend::forward(&self.model, batch, hidden, caches, top_k);
        share.count(thread_cpu_ns() - t1, t1 - t0);
        self.share.set(Some(share));
        out
    }

    fn commit_all(&self, cache: &mut KvCache) {
        cache.commit_all();
    }

    fn rollback(&self, cache: &mut KvCache) {
        cache.rollback();
    }

    fn truncate(&self, cache: &mut KvCache, len: usize) {
        cache.truncate(len);
    }

    fn extend_pad_rows(&self) -> Option<usize> {
        DraftBackend::extend_pad_rows(&self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeating(pct: f64, calls: u64) -> Vec<u64> {
        let mut s = Share::new(pct);
        (1..=calls).filter(|_| s.due()).collect()
    }

    #[test]
    fn twenty_percent_repeats_every_fifth_call_and_ten_percent_every_tenth() {
        assert_eq!(repeating(20.0, 20), vec![5, 10, 15, 20]);
        assert_eq!(repeating(10.0, 30), vec![10, 20, 30]);
        assert_eq!(repeating(0.0, 30), Vec::<u64>::new());
        assert_eq!(repeating(100.0, 3), vec![1, 2, 3]);
        assert_eq!(repeating(25.0, 400).len(), 100, "exactly the share");
    }

    #[test]
    fn a_timed_share_repeats_until_the_repeats_take_its_share_of_the_calls_time() {
        // Calls of 1 and 10 units (a prompt's extend among step forwards), whose
        // repeats run at 60% of a call's time (warm weights).
        let mut s = TimedShare::new(10.0);
        let (mut own, mut repeated) = (0u64, 0u64);
        for i in 0..1000u64 {
            let cost = if i % 25 == 0 { 10_000 } else { 1_000 };
            let r = if s.due() { cost * 6 / 10 } else { 0 };
            s.count(cost, r);
            own += cost;
            repeated += r;
        }
        let share = repeated as f64 / own as f64;
        assert!((share - 0.10).abs() < 0.01, "{share}");
        assert!(
            !TimedShare::new(10.0).due(),
            "nothing repeats before a call was timed"
        );
        let mut none = TimedShare::new(0.0);
        none.count(5_000, 0);
        assert!(!none.due());
    }

    #[test]
    fn a_share_counted_on_across_calls_repeats_its_share_of_all_calls() {
        // 10 calls of 14 forwards at 10%: 14 repeats when the count goes on,
        // 10 (one per call, 7%) when every call starts afresh.
        let mut s = Share::new(10.0);
        let on: usize = (0..10).map(|_| (0..14).filter(|_| s.due()).count()).sum();
        assert_eq!(on, 14);
        let afresh: usize = (0..10).map(|_| repeating(10.0, 14).len()).sum();
        assert_eq!(afresh, 10);
        // the process-wide decode share continues for the same percent only
        keep_decode_share(Some(s));
        assert_eq!(decode_share(Some(10.0)), Some(s));
        assert_eq!(decode_share(Some(20.0)), Some(Share::new(20.0)));
        assert_eq!(decode_share(None), None);
    }
}
