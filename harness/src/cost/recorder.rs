//! The span recorder of a cost probe (a sweep run under callgrind by
//! `specula cost`): instead of stamping a clock it asks callgrind to dump its
//! counters at every boundary of a prefill, draft prefill, draft or verify span and at the
//! end of every decode step. Each dump is one segment of one step of one
//! `generate` call, labelled `specula|ROW_KEY|CALL|STEP|SEGMENT` (CALL: the
//! call's number in the process; SEGMENT: a span's name, or `gap` for the
//! work between spans); [`super::dumps`] reads them back.

use super::client_request::{dump_stats_at, start_instrumentation, toggle_collect, zero_stats};
use specula_engine::timing::{Span, SpanRecorder};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The first word of every label this recorder writes.
pub const LABEL_TAG: &str = "specula";

/// Whether callgrind instruments yet (started at the first counted call, so
/// that loading the models runs at valgrind's plain speed).
static INSTRUMENTING: AtomicBool = AtomicBool::new(false);

/// Whether this process is a cost probe (`specula sweep --cost-probe`).
static PROBING: AtomicBool = AtomicBool::new(false);

/// `generate` calls counted so far.
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Makes this process a cost probe: recorded calls count through callgrind.
pub fn set_probing() {
    PROBING.store(true, Ordering::SeqCst);
}

/// Whether this process is a cost probe.
pub fn probing() -> bool {
    PROBING.load(Ordering::SeqCst)
}

/// Spans counted on their own; the rest is counted in the step's gaps.
fn own_segment(span: Span) -> bool {
    matches!(
        span,
        Span::Prefill | Span::DraftPrefill | Span::Draft | Span::Verify
    )
}

/// Counts one `generate` call's spans and steps through callgrind dumps.
pub struct CountingRecorder {
    row: String,
    call: usize,
    step: usize,
    collecting: bool,
}

impl CountingRecorder {
    /// A recorder for the next `generate` call, of row `row_key`.
    pub fn new(row_key: &str) -> CountingRecorder {
        CountingRecorder {
            row: row_key.to_string(),
            call: CALLS.fetch_add(1, Ordering::SeqCst),
            step: 0,
            collecting: false,
        }
    }

    fn dump(&self, segment: &str) {
        dump_stats_at(&format!(
            "{LABEL_TAG}|{}|{}|{}|{segment}",
            self.row, self.call, self.step
        ));
    }

    /// The call is over: the work after its last step is dumped as `tail`
    /// (not counted) and collection stops.
    pub fn finish(&mut self) {
        if self.collecting {
            self.dump("tail");
            toggle_collect();
            self.collecting = false;
        }
    }
}

impl Drop for CountingRecorder {
    fn drop(&mut self) {
        self.finish();
    }
}

impl SpanRecorder for CountingRecorder {
    fn begin(&mut self, span: Span) {
        if !self.collecting {
            if !INSTRUMENTING.swap(true, Ordering::SeqCst) {
                start_instrumentation();
            }
            zero_stats();
            toggle_collect();
            self.collecting = true;
        } else if own_segment(span) {
            self.dump("gap");
        }
    }

    fn end(&mut self, span: Span) {
        if own_segment(span) {
            self.dump(span.name());
        }
    }

    fn finish_step(&mut self) {
        self.dump("gap");
        self.step += 1;
    }
}
