//! Command-line interface: one module per subcommand.

mod fixtures;
mod generate;

use clap::{Parser, Subcommand};
use specula_engine::EngineError;

/// Exit code for unusable input (bad files, fields, settings).
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error of a subcommand, with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad model files or settings.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Anything else the user supplied that cannot be used.
    #[error("{0}")]
    Input(String),
}

impl CliError {
    /// The process exit code: 2 for unusable input.
    pub fn exit_code(&self) -> u8 {
        EXIT_BAD_INPUT
    }
}

/// specula: benchmark EAGLE-3 speculative decoding and explain a bad draft.
#[derive(Parser, Debug)]
#[command(name = "specula", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write model checkpoints for tests and quick starts.
    #[command(subcommand)]
    Fixtures(fixtures::FixturesCommand),
    /// Generate text from one prompt, speculatively or not, and report tau and span times.
    Generate(generate::GenerateArgs),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Fixtures(c) => fixtures::run(c),
        Command::Generate(a) => generate::run(a),
    }
}
