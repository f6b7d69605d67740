//! `specula datasets list|export`: the prompt sets compiled into specula.

use super::output::outln;
use super::CliError;
use clap::Subcommand;
use specula_datasets::{builtin, embedded, EmbeddedSet, EMBEDDED};
use std::path::{Path, PathBuf};

/// Datasets subcommands.
#[derive(Subcommand, Debug)]
#[command(
    after_help = "A sweep spec names a compiled-in set by its name, optionally with one category:
  [[prompt_sets]]
  source = \"spec-bench:translation\"
  sample = 32

Examples:
  specula datasets list
  specula datasets export gsm8k --out gsm8k_test.jsonl"
)]
pub enum DatasetsCommand {
    /// The compiled-in prompt sets: prompts, categories, licence and where each file comes from.
    List,
    /// Writes a compiled-in set's file out verbatim, its licence text beside it (FILE.LICENSE).
    Export {
        /// The set: mt-bench, spec-bench, gsm8k, humaneval or builtin.
        name: String,
        /// The file to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// Runs a datasets subcommand.
pub fn run(c: DatasetsCommand) -> Result<(), CliError> {
    match c {
        DatasetsCommand::List => list(),
        DatasetsCommand::Export { name, out } => export(&name, &out),
    }
}

fn list() -> Result<(), CliError> {
    outln!(
        "{:<11} {:>7}  {:<10}  categories",
        "name",
        "prompts",
        "licence"
    );
    for set in &EMBEDDED {
        let prompts = set.prompt_set()?;
        outln!(
            "{:<11} {:>7}  {:<10}  {}",
            set.name,
            prompts.len(),
            set.licence,
            prompts.categories().join(", ")
        );
    }
    let own = builtin::prompt_set()?;
    outln!(
        "{:<11} {:>7}  {:<10}  {}",
        builtin::NAME,
        own.len(),
        "Apache-2.0",
        own.categories().join(", ")
    );
    outln!();
    for set in &EMBEDDED {
        outln!(
            "{}: {} at {}, sha256 {}",
            set.name,
            set.upstream,
            set.commit,
            set.sha256
        );
    }
    outln!("{}: written for specula", builtin::NAME);
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| CliError::write(path, e))
}

fn export(name: &str, out: &Path) -> Result<(), CliError> {
    if name == builtin::NAME {
        write(out, builtin::JSONL)?;
        outln!("wrote {}", out.display());
        return Ok(());
    }
    let set = embedded(name).ok_or_else(|| {
        CliError::Usage(format!(
            "no compiled-in prompt set `{name}`; there are {} and {}",
            EmbeddedSet::names(),
            builtin::NAME
        ))
    })?;
    write(out, set.text)?;
    let mut licence = out.as_os_str().to_owned();
    licence.push(".LICENSE");
    let licence = PathBuf::from(licence);
    write(&licence, set.licence_text)?;
    outln!(
        "wrote {} ({} prompts, {}; licence text in {})",
        out.display(),
        set.prompts,
        set.licence,
        licence.display()
    );
    Ok(())
}
