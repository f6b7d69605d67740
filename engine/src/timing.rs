//! Named time spans of a decode step, recorded through one small interface
//! so that a CUDA backend can implement it with events.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The spans of a step (docs/DESIGN.md, 7.10 Spans).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Span {
    /// Target forward over the prompts.
    Prefill,
    /// One draft forward of the drafter's catch-up over the prompts, after
    /// the target's prefill ([`crate::speculative::Drafter::prefill`]).
    DraftPrefill,
    /// One draft forward (extend or tree expansion).
    Draft,
    /// Choosing the draft tree's nodes and building its mask.
    TreeBuild,
    /// Target forward over the draft tree (the whole decode forward for the baseline).
    Verify,
    /// Walking the tree against the target's choices.
    Accept,
    /// Committing accepted keys/values and dropping the rest.
    KvCommit,
    /// Turning target logits into token choices or probabilities.
    Sample,
}

impl Span {
    /// Every span, in step order.
    pub const ALL: [Span; 8] = [
        Span::Prefill,
        Span::DraftPrefill,
        Span::Draft,
        Span::TreeBuild,
        Span::Verify,
        Span::Accept,
        Span::KvCommit,
        Span::Sample,
    ];

    /// The span's name in CSV files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Span::Prefill => "prefill",
            Span::DraftPrefill => "draft_prefill",
            Span::Draft => "draft",
            Span::TreeBuild => "tree_build",
            Span::Verify => "verify",
            Span::Accept => "accept",
            Span::KvCommit => "kv_commit",
            Span::Sample => "sample",
        }
    }

    /// Whether the span runs once a call, over the prompts, rather than in
    /// every decode step (a step's share leaves it out).
    pub fn per_call(self) -> bool {
        matches!(self, Span::Prefill | Span::DraftPrefill)
    }
}

/// Receives span boundaries. A host implementation stamps a clock; a CUDA
/// implementation records events on the stream and resolves them in
/// [`SpanRecorder::finish_step`].
pub trait SpanRecorder {
    /// `span` starts now (spans do not nest).
    fn begin(&mut self, span: Span);
    /// `span` ends now.
    fn end(&mut self, span: Span);
    /// A decode step is over: resolve whatever is pending.
    fn finish_step(&mut self) {}
    /// Sequence `sequence` of the call emitted `tokens` in the step just run
    /// (the prefill's first token, or a verify step's accepted drafts and the
    /// target's token, cut at EOS or the length limit): what a server
    /// streams as one event.
    fn emitted(&mut self, _sequence: usize, _tokens: &[u32]) {}
}

/// Runs `f` inside `span`.
pub fn timed<T>(rec: &mut dyn SpanRecorder, span: Span, f: impl FnOnce() -> T) -> T {
    rec.begin(span);
    let out = f();
    rec.end(span);
    out
}

/// Records nothing (the "spans off" mode).
#[derive(Debug, Default)]
pub struct NullRecorder;

impl SpanRecorder for NullRecorder {
    fn begin(&mut self, _: Span) {}
    fn end(&mut self, _: Span) {}
}

/// Durations per span, in nanoseconds, in recording order.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SpanLog {
    /// Every recorded duration of each span.
    pub samples: BTreeMap<Span, Vec<u64>>,
}

impl SpanLog {
    /// Total time in `span`.
    pub fn total(&self, span: Span) -> Duration {
        Duration::from_nanos(self.samples.get(&span).map_or(0, |v| v.iter().sum()))
    }

    /// Number of recordings of `span`.
    pub fn count(&self, span: Span) -> usize {
        self.samples.get(&span).map_or(0, Vec::len)
    }

    /// Adds another log's samples.
    pub fn merge(&mut self, other: &SpanLog) {
        for (s, v) in &other.samples {
            self.samples.entry(*s).or_default().extend_from_slice(v);
        }
    }
}

/// Host-clock recorder (the CPU backend's): monotonic `Instant`s.
#[derive(Debug, Default)]
pub struct HostRecorder {
    open: Option<(Span, Instant)>,
    /// What was recorded.
    pub log: SpanLog,
}

impl SpanRecorder for HostRecorder {
    fn begin(&mut self, span: Span) {
        debug_assert!(
            self.open.is_none(),
            "span {span:?} begins inside {:?}",
            self.open
        );
        self.open = Some((span, Instant::now()));
    }

    fn end(&mut self, span: Span) {
        if let Some((s, t0)) = self.open.take() {
            debug_assert_eq!(s, span, "span ended out of order");
            self.log
                .samples
                .entry(span)
                .or_default()
                .push(t0.elapsed().as_nanos() as u64);
        }
    }
}
