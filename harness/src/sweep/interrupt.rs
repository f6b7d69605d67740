//! Ctrl-C and SIGTERM: the first asks the sweep to stop between batches (the
//! row in flight is dropped, finished rows stay); a second one exits at once,
//! which is also safe because every row is written with one append.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Process groups of started servers, killed before an immediate exit.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Records a started server's process group (killed on a second Ctrl-C).
pub fn register_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
}

/// Forgets a process group that was stopped.
pub fn unregister_group(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&g| g != pgid);
}

fn kill_groups() {
    if let Ok(groups) = GROUPS.try_lock() {
        for &g in groups.iter() {
            // SAFETY: kill(2) on a process group this process started.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
    }
}

/// Installs the handler (once per process; later calls do nothing).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            kill_groups();
            std::process::exit(130);
        }
        eprintln!("\ninterrupt: stopping after the current batch (press again to exit now)");
    });
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Resolves once a stop is asked for (looked at every 50 ms): the branch
/// of an async loop that drops the requests in flight on Ctrl-C.
pub async fn asked() {
    while !requested() {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
