//! `specula`: benchmark and explain EAGLE-3 speculative decoding. The
//! binary parses arguments ([`cli`]), calls the `specula` library, and maps
//! what went wrong to an exit code, here and only here.

mod cli;

use clap::Parser;
use specula::Fault;
use std::io::Write;
use std::process::ExitCode;

/// 0 ok; 1 a regression, mismatch, failed point or failed write; 2 unusable
/// input; 3 a gate that could not decide; 130 interrupted (README, Exit codes).
fn exit_code(fault: Fault) -> u8 {
    match fault {
        Fault::Failed => 1,
        Fault::Input => 2,
        Fault::Inconclusive => 3,
        Fault::Interrupted => 130,
    }
}

fn main() -> ExitCode {
    match cli::run(cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A reader that closed stderr loses the line, not the exit code.
            let _ = writeln!(std::io::stderr().lock(), "error: {e}");
            ExitCode::from(exit_code(e.fault()))
        }
    }
}
