//! `specula merge DIR... --out DIR`: shards of one sweep (or runs with
//! distinct rows) into one run folder (see [`specula::run_folder::merge`]).

use super::output::{errln, outln};
use super::CliError;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `specula merge`.
#[derive(Args, Debug)]
#[command(after_help = "Example (the shards of a Slurm job array):
  specula merge results/runs/nightly/shard-* --out results/runs/nightly/all")]
pub struct MergeArgs {
    /// Run folders to merge (each with meta.json and runs.csv).
    #[arg(required = true, num_args = 1..)]
    dirs: Vec<PathBuf>,
    /// The merged run folder (must not exist).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Runs `specula merge`.
pub fn run(a: MergeArgs) -> Result<(), CliError> {
    let m = specula::run_folder::merge(&a.dirs, &a.out)?;
    for w in &m.warnings {
        errln!("warning: {w}");
    }
    outln!(
        "merged {} rows and {} histogram logs from {} folders into {}",
        m.rows,
        m.logs,
        a.dirs.len(),
        m.dir.display()
    );
    Ok(())
}
