//! `specula`: benchmark and explain EAGLE-3 speculative decoding.

mod analyze;
mod backend;
mod cli;
mod compare;
mod doc;
mod export;
mod gate;
mod report;
mod runs;
mod serve;
mod stats;
mod sweep;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
