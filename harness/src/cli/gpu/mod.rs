//! `specula gpu`: the engine on an NVIDIA GPU (built with `--features cuda`).
//! `agree` checks the GPU forward against the CPU engine and speculative
//! decoding on the GPU for losslessness; `bench` measures decode bandwidth
//! and synthetic-acceptance speedups on a config's shape with random weights.

mod agree;
mod bench;
mod bench_case;
mod bench_memory;
mod bench_rows;
mod spans;
mod stamp_shares;

use super::CliError;
use clap::Subcommand;
use specula_engine::backend::cuda::Gpu;
use std::path::Path;
use std::sync::Arc;

/// GPU subcommands.
#[derive(Subcommand, Debug)]
pub enum GpuCommand {
    /// The GPU engine against the CPU engine (same greedy tokens) and speculative
    /// decoding on the GPU against the GPU baseline (lossless), on a target/draft
    /// pair (default: the trained tiny-llama).
    Agree(agree::AgreeArgs),
    /// Decode bandwidth and synthetic-acceptance speedup, on a checkpoint or on a
    /// config.json shape with random weights drawn on the device (no download).
    Bench(bench::BenchArgs),
}

/// Runs a GPU subcommand.
pub fn run(c: GpuCommand) -> Result<(), CliError> {
    match c {
        GpuCommand::Agree(a) => agree::run(a),
        GpuCommand::Bench(a) => bench::run(a),
    }
}

/// Opens GPU 0 (one clear line when there is none).
fn open_gpu() -> Result<Arc<Gpu>, CliError> {
    let gpu = Gpu::new(0).map_err(|e| CliError::Gpu(e.to_string()))?;
    eprintln!("device: {} ({}), {}", gpu.name, gpu.arch, gpu.kernels);
    Ok(Arc::new(gpu))
}

/// Writes `text` to `dir/name`.
fn write(dir: &Path, name: &str, text: &str) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(dir.join(name), text))
        .map_err(|e| CliError::write(dir.join(name), e))
}
