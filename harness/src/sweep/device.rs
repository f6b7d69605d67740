//! Where a sweep's in-process engine runs: the CPU (default) or, in a build
//! with `--features cuda`, the GPU (bf16, the weights loaded straight from
//! the checkpoint to the device, spans timed with CUDA events).

use serde::{Deserialize, Serialize};

/// The spec's `device` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineDevice {
    /// The CPU backend.
    #[default]
    Cpu,
    /// The GPU backend (NVIDIA, CUDA).
    Cuda,
}

impl EngineDevice {
    /// The name in specs and in the `backend` column.
    pub fn name(self) -> &'static str {
        match self {
            EngineDevice::Cpu => "cpu",
            EngineDevice::Cuda => "cuda",
        }
    }

    /// Whether this build can run on it.
    pub fn available(self) -> bool {
        match self {
            EngineDevice::Cpu => true,
            EngineDevice::Cuda => cfg!(feature = "cuda"),
        }
    }
}

#[cfg(feature = "cuda")]
pub use gpu::GpuSide;

#[cfg(feature = "cuda")]
mod gpu {
    use super::super::loaded::DrafterKey;
    use super::super::SweepError;
    use specula_engine::backend::cuda::{
        Gpu, GpuDtype, GpuModels, GpuOptions, GpuRecorder, LoadOptions, LoadStats,
    };
    use specula_engine::capture::CaptureChoice;
    use specula_engine::generate::GenerateParams;
    use specula_engine::generation::Generation;
    use specula_engine::timing::SpanRecorder;
    use std::path::Path;
    use std::sync::Arc;

    /// A target on the GPU, loaded straight from its checkpoint, and one
    /// drafter per draft folder and capture choice.
    pub struct GpuSide {
        models: GpuModels,
        opts: GpuOptions,
        load: LoadOptions,
        drafters: Vec<(DrafterKey, usize)>,
    }

    impl GpuSide {
        /// Loads the target in `dir` onto GPU 0 in bf16, with KV room for
        /// `slots` sequences of `capacity` entries.
        pub fn load(
            dir: &Path,
            slots: usize,
            capacity: usize,
            quiet: bool,
        ) -> Result<(GpuSide, LoadStats), SweepError> {
            let gpu = Gpu::new(0).map_err(|e| SweepError::Input(format!("GPU: {e}")))?;
            let opts = GpuOptions {
                slots,
                capacity,
                graphs: true,
            };
            let load = LoadOptions { quiet };
            let (models, stats) =
                GpuModels::load(Arc::new(gpu), dir, GpuDtype::Bf16, &opts, &load)?;
            let side = GpuSide {
                models,
                opts,
                load,
                drafters: Vec::new(),
            };
            Ok((side, stats))
        }

        /// The device's name (the `device` column).
        pub fn device_name(&self) -> String {
            self.models.gpu().name.clone()
        }

        /// The GPU drafter of the draft in `dir` fed as `choice`, loaded
        /// straight from its checkpoint on first use.
        pub fn drafter(&mut self, dir: &Path, choice: &CaptureChoice) -> Result<usize, SweepError> {
            let key = (Some(dir.to_path_buf()), choice.clone());
            if let Some((_, i)) = self.drafters.iter().find(|(k, _)| *k == key) {
                return Ok(*i);
            }
            let (i, _) = self
                .models
                .load_drafter(dir, choice, &self.opts, &self.load)?;
            self.drafters.push((key, i));
            Ok(i)
        }

        /// Generates on the GPU.
        pub fn generate(
            &mut self,
            drafter: Option<usize>,
            prompts: &[Vec<u32>],
            params: &GenerateParams,
            rec: &mut dyn SpanRecorder,
        ) -> Result<Generation, SweepError> {
            Ok(self.models.generate_with(drafter, prompts, params, rec)?)
        }

        /// A span recorder on CUDA events.
        pub fn recorder(&self) -> GpuRecorder {
            GpuRecorder::new(self.models.gpu().clone())
        }
    }
}
