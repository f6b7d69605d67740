//! Standard output for the command line, written so that a reader closing it
//! early (`specula datasets list | head -3`) stops the printing, not the
//! command: the work still finishes and the exit code still says how it
//! went. Any other write error (a full disk behind a redirect) is kept and
//! turned into a failed write at the end ([`finish`]). Lines to stderr
//! (`errln!`) are dropped likewise when stderr's reader has gone.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Whether stdout's reader went away: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// The first write error other than a closed pipe.
static FAILED: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes `args` to stdout (what `out!` and `outln!` call).
pub fn write(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert(e);
        }
    }
}

/// Writes `args` and a newline to stderr (what `errln!` calls); a reader
/// that closed stderr (`specula sweep ... 2>&1 | head -1`) loses the line,
/// the command goes on.
pub fn write_err(args: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// The error of a failed stdout write, if one failed for another reason
/// than its reader leaving.
pub fn finish() -> Result<(), super::CliError> {
    let failed = FAILED.lock().unwrap_or_else(|p| p.into_inner()).take();
    match failed {
        Some(e) => Err(super::CliError::write("standard output", e)),
        None => Ok(()),
    }
}

/// `print!` to stdout, surviving a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::write(format_args!($($arg)*))
    };
}

/// `println!` to stdout, surviving a closed pipe.
macro_rules! outln {
    () => {
        $crate::cli::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` to stderr, surviving a closed pipe.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::output::write_err(format_args!($($arg)*))
    };
}

pub(crate) use {errln, out, outln};
