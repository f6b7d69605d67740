//! A target and its EAGLE-3 drafter on the GPU, for either element type,
//! built from a CPU-loaded [`ModelPair`] or from config shapes with random
//! weights.

use super::{GpuDraft, GpuOptions, GpuTarget};
use crate::capture::{AuxCapture, IdConvention};
use crate::config::{DraftConfig, TargetConfig};
use crate::error::Result;
use crate::generate::{generate, GenerateParams};
use crate::pair::ModelPair;
use crate::spec::{Drafter, Eagle3Drafter};
use crate::stats::Generation;
use crate::timing::SpanRecorder;
use cudarc::cublas::{CudaBlas, Gemm};
use half::bf16;
use specula_kernels::cuda::{Gpu, GpuElement};
use std::sync::Arc;

/// Element type of the GPU models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuDtype {
    /// bfloat16 weights, activations and KV (f32 accumulation).
    Bf16,
    /// f32 throughout (for agreement checks with the CPU engine).
    F32,
}

impl GpuDtype {
    /// The name as CSV files and flags spell it.
    pub fn name(self) -> &'static str {
        match self {
            GpuDtype::Bf16 => "bf16",
            GpuDtype::F32 => "f32",
        }
    }
}

/// A target and optional drafter on the GPU with elements `T`.
pub struct GpuPair<T: GpuElement>
where
    CudaBlas: Gemm<T>,
{
    /// The target.
    pub target: GpuTarget<T>,
    /// The drafter, if a draft is loaded.
    pub drafter: Option<Eagle3Drafter<GpuDraft<T>>>,
}

impl<T: GpuElement> GpuPair<T>
where
    CudaBlas: Gemm<T>,
{
    fn from_cpu(gpu: Arc<Gpu>, pair: &ModelPair, opts: &GpuOptions) -> Result<GpuPair<T>> {
        let target = GpuTarget::<T>::from_cpu(gpu.clone(), &pair.target, opts)?;
        let drafter = match &pair.drafter {
            None => None,
            Some(d) => {
                let cpu = d.model();
                let shares = Arc::ptr_eq(&cpu.embed, &pair.target.embed);
                let draft = GpuDraft::from_cpu(
                    gpu,
                    cpu,
                    target.embedding(),
                    shares,
                    pair.target.config(),
                    opts,
                )?;
                Some(Eagle3Drafter::new(draft, d.capture().clone())?)
            }
        };
        Ok(GpuPair { target, drafter })
    }

    fn random(
        gpu: Arc<Gpu>,
        target: TargetConfig,
        draft: Option<DraftConfig>,
        seed: u64,
        opts: &GpuOptions,
    ) -> Result<GpuPair<T>> {
        let layers = target.num_hidden_layers;
        let tcfg = target.clone();
        let target = GpuTarget::<T>::random(gpu.clone(), target, seed, opts)?;
        let drafter = match draft {
            None => None,
            Some(c) => {
                let capture = AuxCapture::resolve(
                    None,
                    c.aux_layer_ids.as_deref(),
                    IdConvention::Boundary,
                    layers,
                )?;
                let d = GpuDraft::random(gpu, c, target.embedding(), &tcfg, seed, opts)?;
                Some(Eagle3Drafter::new(d, capture)?)
            }
        };
        Ok(GpuPair { target, drafter })
    }

    fn generate(
        &mut self,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        let drafter = self.drafter.as_mut().map(|d| d as &mut dyn Drafter);
        generate(&self.target, prompts, params, drafter, rec)
    }
}

/// GPU models of either element type.
pub enum GpuModels {
    /// bf16.
    Bf16(GpuPair<bf16>),
    /// f32.
    F32(GpuPair<f32>),
}

impl GpuModels {
    /// Uploads a CPU-loaded pair (same weights, same capture).
    pub fn from_cpu(
        gpu: Arc<Gpu>,
        pair: &ModelPair,
        dtype: GpuDtype,
        opts: &GpuOptions,
    ) -> Result<GpuModels> {
        Ok(match dtype {
            GpuDtype::Bf16 => GpuModels::Bf16(GpuPair::from_cpu(gpu, pair, opts)?),
            GpuDtype::F32 => GpuModels::F32(GpuPair::from_cpu(gpu, pair, opts)?),
        })
    }

    /// Random weights for the shapes (the draft's capture: its ids or the default).
    pub fn random(
        gpu: Arc<Gpu>,
        target: TargetConfig,
        draft: Option<DraftConfig>,
        dtype: GpuDtype,
        seed: u64,
        opts: &GpuOptions,
    ) -> Result<GpuModels> {
        Ok(match dtype {
            GpuDtype::Bf16 => GpuModels::Bf16(GpuPair::random(gpu, target, draft, seed, opts)?),
            GpuDtype::F32 => GpuModels::F32(GpuPair::random(gpu, target, draft, seed, opts)?),
        })
    }

    /// Generates on the GPU (see [`generate`]).
    pub fn generate(
        &mut self,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        match self {
            GpuModels::Bf16(p) => p.generate(prompts, params, rec),
            GpuModels::F32(p) => p.generate(prompts, params, rec),
        }
    }

    /// Bytes of target weights one decode step reads.
    pub fn target_weight_bytes(&self) -> usize {
        match self {
            GpuModels::Bf16(p) => p.target.weight_bytes(),
            GpuModels::F32(p) => p.target.weight_bytes(),
        }
    }

    /// The resolved capture of the drafter, if any.
    pub fn capture(&self) -> Option<&AuxCapture> {
        match self {
            GpuModels::Bf16(p) => p.drafter.as_ref().map(|d| d.capture()),
            GpuModels::F32(p) => p.drafter.as_ref().map(|d| d.capture()),
        }
    }
}
