//! Where a sweep's in-process engine runs: the CPU (default) or, in a build
//! with `--features cuda`, the GPU (bf16, the same weights uploaded from the
//! CPU-loaded pair, spans timed with CUDA events).

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
    use super::super::SweepError;
    use specula_engine::backend::cuda::{Gpu, GpuDtype, GpuModels, GpuOptions, GpuRecorder};
    use specula_engine::capture::CaptureChoice;
    use specula_engine::generate::GenerateParams;
    use specula_engine::generation::Generation;
    use specula_engine::model::TargetModel;
    use specula_engine::pair::ModelPair;
    use specula_engine::speculative::EagleDrafter;
    use specula_engine::timing::SpanRecorder;
    use std::sync::Arc;

    /// The GPU half of a loaded model pair: the target and one drafter per capture choice.
    pub struct GpuSide {
        models: GpuModels,
        opts: GpuOptions,
        drafters: Vec<(CaptureChoice, usize)>,
    }

    impl GpuSide {
        /// Uploads `pair`'s target to GPU 0, with KV room for `slots` sequences of `capacity` entries.
        pub fn load(
            pair: &ModelPair,
            slots: usize,
            capacity: usize,
        ) -> Result<GpuSide, SweepError> {
            let gpu = Gpu::new(0).map_err(|e| SweepError::Input(format!("GPU: {e}")))?;
            let opts = GpuOptions {
                slots,
                capacity,
                graphs: true,
            };
            let models = GpuModels::from_cpu(Arc::new(gpu), pair, GpuDtype::Bf16, &opts)?;
            Ok(GpuSide {
                models,
                opts,
                drafters: Vec::new(),
            })
        }

        /// The device's name (the `device` column).
        pub fn device_name(&self) -> String {
            self.models.gpu().name.clone()
        }

        /// The GPU drafter of `key`, uploaded from the CPU drafter on first use.
        pub fn drafter(
            &mut self,
            key: &CaptureChoice,
            cpu: &EagleDrafter,
            target: &TargetModel,
        ) -> Result<usize, SweepError> {
            if let Some((_, i)) = self.drafters.iter().find(|(k, _)| k == key) {
                return Ok(*i);
            }
            let i = self.models.add_drafter(cpu, target, &self.opts)?;
            self.drafters.push((key.clone(), i));
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
