//! `specula fixtures`: write model checkpoints.

use super::output::outln;
use super::CliError;
use clap::{Args, Subcommand, ValueEnum};
use specula_engine::fixtures::{
    write_draft_layouts, write_random_pair, StoreDtype, TargetShape, LAYOUTS,
};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum FixturesCommand {
    /// Write a random-initialised target (OUT/target) and EAGLE-3 draft (OUT/draft) in the
    /// Hugging Face / SGLang layout, with a byte-level tokenizer.json, from a fixed seed.
    Random(RandomArgs),
    /// Write EAGLE drafts in every published layout (the EAGLE authors', SGLang's, vLLM's,
    /// SpecForge's; EAGLE-3 and EAGLE-1/2) for one small target (OUT/target), each in
    /// OUT/<layout>, from the key names those loaders read. Layouts that ship as
    /// pytorch_model.bin are written as safetensors: tools/pytorch_fixtures/write_layouts.py
    /// turns them into .bin files with torch.
    DraftLayouts(LayoutsArgs),
}

#[derive(Args, Debug)]
pub struct LayoutsArgs {
    /// Output folder (created).
    #[arg(long)]
    out: PathBuf,
    /// Seed of the random weights.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum Dtype {
    F32,
    Bf16,
}

#[derive(Args, Debug)]
pub struct RandomArgs {
    /// A built-in shape (tiny, tiny-llama3, tiny-qwen2, tiny-qwen3; latent attention and experts:
    /// tiny-deepseek-v3, tiny-kimi-k25, tiny-deepseek-v2, tiny-qwen3-moe) or the path of a
    /// config.json to copy the shape of.
    #[arg(long, default_value = "tiny")]
    shape: String,
    /// Output folder (created).
    #[arg(long)]
    out: PathBuf,
    /// Seed of the random weights.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Storage dtype of the weights.
    #[arg(long, value_enum, default_value = "f32")]
    dtype: Dtype,
    /// Aux-layer ids to record in the draft's eagle_config (comma-separated; -1 = embeddings). Default: none.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    aux_layers: Option<Vec<i64>>,
}

/// Runs `specula fixtures ...`.
pub fn run(cmd: FixturesCommand) -> Result<(), CliError> {
    let a = match cmd {
        FixturesCommand::Random(a) => a,
        FixturesCommand::DraftLayouts(a) => {
            for dir in write_draft_layouts(&a.out, a.seed)? {
                outln!("{}", dir.display());
            }
            let bins: Vec<&str> = LAYOUTS
                .iter()
                .filter(|l| l.pytorch_bin)
                .map(|l| l.name)
                .collect();
            outln!(
                "as pytorch_model.bin (run where torch is installed): python3 tools/pytorch_fixtures/write_layouts.py {} {}",
                a.out.display(),
                bins.join(" ")
            );
            return Ok(());
        }
    };
    let shape = match TargetShape::named(&a.shape) {
        Some(s) => s,
        None => {
            let path = PathBuf::from(&a.shape);
            if !path.exists() {
                return Err(CliError::Usage(format!(
                    "--shape {:?}: neither a built-in shape ({}) nor an existing config.json",
                    a.shape,
                    TargetShape::NAMES.join(", ")
                )));
            }
            TargetShape::from_config_file(&path)?
        }
    };
    let params = shape.parameters();
    if params > 200_000_000 {
        // 4 bytes a parameter, in GB (a division: the count may be usize::MAX).
        let gb = params / 250_000_000;
        return Err(CliError::Usage(format!("--shape {}: {params} parameters would write {gb} GB of random weights; fixtures are for small shapes", a.shape)));
    }
    let dtype = match a.dtype {
        Dtype::F32 => StoreDtype::F32,
        Dtype::Bf16 => StoreDtype::Bf16,
    };
    let paths = write_random_pair(&a.out, &shape, a.seed, dtype, a.aux_layers)?;
    outln!(
        "target: {} ({params} parameters, {})",
        paths.target.display(),
        shape.family.architecture()
    );
    outln!("draft:  {}", paths.draft.display());
    Ok(())
}
