//! `specula capture`: the target's residual streams and greedy tokens on a
//! prompt set, written to a capture file (docs/DESIGN.md section 5.1) that
//! `specula audit --states` reads without the target.

use crate::Fault;
use specula_datasets::{DatasetError, PromptSetSpec};
use specula_engine::capture_file::{record_prompts, CaptureMeta, CaptureWriter, RecordSettings};
use specula_engine::config::read_json;
use specula_engine::model::TargetModel;
use specula_engine::tokenizer::TextTokenizer;
use specula_engine::EngineError;
use std::path::PathBuf;

/// Why a capture could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The target or a setting is unusable, or the file could not be written.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The prompt set is unusable.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// `--out` names a file that exists.
    #[error("{0}: exists; remove it or pick another --out")]
    OutExists(PathBuf),
}

impl CaptureError {
    /// Whose fault it is.
    pub fn fault(&self) -> Fault {
        match self {
            CaptureError::Engine(e) if e.is_write() => Fault::Failed,
            _ => Fault::Input,
        }
    }
}

/// What to capture and where.
#[derive(Debug, Clone)]
pub struct CapturePlan {
    /// The target model folder.
    pub target: PathBuf,
    /// The prompts (a file or the built-in set), sampled or whole.
    pub prompts: PromptSetSpec,
    /// Boundaries to store (`None`: all of `0..L`; 0 is always stored).
    pub boundaries: Option<Vec<usize>>,
    /// Tokens of greedy continuation per prompt.
    pub max_new_tokens: usize,
    /// The capture file to write (must not exist).
    pub out: PathBuf,
}

/// What a finished capture holds.
#[derive(Debug, Clone)]
pub struct CaptureSummary {
    /// Prompts written.
    pub prompts: usize,
    /// Tokens over all prompts (prompt + continuation).
    pub tokens: usize,
    /// Boundaries stored per prompt.
    pub boundaries: Vec<usize>,
    /// Bytes of the file.
    pub bytes: u64,
}

impl CapturePlan {
    /// Loads the target, records every prompt and writes the file, calling
    /// `progress(done, total, tokens)` after each prompt.
    pub fn run(
        &self,
        mut progress: impl FnMut(usize, usize, usize),
    ) -> Result<CaptureSummary, CaptureError> {
        if self.out.exists() {
            return Err(CaptureError::OutExists(self.out.clone()));
        }
        let set = self.prompts.load()?;
        let target = TargetModel::load(&self.target)?;
        let tokenizer = TextTokenizer::load(&self.target)?;
        let prompts: Vec<Vec<u32>> = set
            .prompts
            .iter()
            .map(|p| tokenizer.encode(p.text()))
            .collect::<Result<_, _>>()?;
        let config_path = self.target.join("config.json");
        let config: serde_json::Value =
            read_json(&config_path, "config.json (the target model config)")?;
        let meta = CaptureMeta::for_target(
            &config,
            format!("specula {} capture", env!("CARGO_PKG_VERSION")),
            "float32",
            self.boundaries.as_deref(),
            &config_path,
        )?;
        let settings = RecordSettings {
            max_new_tokens: self.max_new_tokens,
            boundaries: meta.boundaries.clone(),
        };
        let boundaries = meta.boundaries.clone();
        let mut writer = CaptureWriter::create(&self.out, meta)?;
        let mut tokens = 0;
        let total = prompts.len();
        record_prompts(&target, &prompts, &settings, |i, p| {
            tokens += p.tokens.len();
            writer.push(&p)?;
            progress(i + 1, total, p.tokens.len());
            Ok(())
        })?;
        let bytes = writer.finish()?;
        Ok(CaptureSummary {
            prompts: total,
            tokens,
            boundaries,
            bytes,
        })
    }
}
