//! The progress bar on stderr: one tick per `generate` call, with the row in
//! flight and an ETA. Hidden by `--quiet` and when stderr is not a terminal;
//! notes still go to stderr unless quiet.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;

/// Writes `line` to stderr; a reader that closed it (`specula sweep ... 2>&1
/// | head -1`) stops the line, not the sweep.
pub fn stderr_line(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// What the user sees while a sweep runs.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
}

impl Progress {
    /// A bar of `total` `generate` calls (hidden when `quiet`).
    pub fn new(total: u64, quiet: bool) -> Progress {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} batches, ETA {eta}  {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        Progress { bar, quiet }
    }

    /// Sets the number of `generate` calls to come.
    pub fn set_total(&self, total: u64) {
        self.bar.set_length(total);
    }

    /// Shows the row in flight.
    pub fn row(&self, key: &str) {
        self.bar.set_message(key.to_string());
    }

    /// One `generate` call done.
    pub fn tick(&self) {
        self.bar.inc(1);
    }

    /// Whether it was asked to be quiet (no progress lines of any kind).
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// A line above the bar (nothing when quiet).
    pub fn note(&self, line: &str) {
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            stderr_line(line);
        } else {
            self.bar.println(line);
        }
    }

    /// A line above the bar, shown even when quiet (failures, skipped rows).
    pub fn warn(&self, line: &str) {
        if self.bar.is_hidden() {
            stderr_line(line);
        } else {
            self.bar.println(line);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
