//! Ctrl-C and SIGTERM: the first asks the sweep to stop between batches (the
//! row in flight is dropped, finished rows stay); a second one exits at once,
//! which is also safe because every row is written with one append.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once per process; later calls do nothing).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(130);
        }
        eprintln!("\ninterrupt: stopping after the current batch (press again to exit now)");
    });
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}
