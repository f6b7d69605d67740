//! A target and its EAGLE-3 drafter on the GPU, for either element type,
//! built from a CPU-loaded [`ModelPair`] or from config shapes with random
//! weights.

use super::{GpuDraft, GpuOptions, GpuTarget, GraphLaunches};
use crate::capture::{CaptureChoice, CaptureSource};
use crate::config::{DraftConfig, TargetConfig};
use crate::error::{EngineError, Result};
use crate::generate::{generate, GenerateParams};
use crate::generation::Generation;
use crate::model::{Eagle3Draft, TargetModel};
use crate::pair::ModelPair;
use crate::speculative::{Drafter, EagleDrafter};
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
    /// Drafters: the pair's own first, then any added with [`GpuModels::add_drafter`].
    pub drafters: Vec<EagleDrafter<GpuDraft<T>>>,
}

impl<T: GpuElement> GpuPair<T>
where
    CudaBlas: Gemm<T>,
{
    fn from_cpu(gpu: Arc<Gpu>, pair: &ModelPair, opts: &GpuOptions) -> Result<GpuPair<T>> {
        let target = GpuTarget::<T>::from_cpu(gpu, &pair.target, opts)?;
        let mut p = GpuPair {
            target,
            drafters: Vec::new(),
        };
        if let Some(d) = &pair.drafter {
            p.add_drafter(d, &pair.target, opts)?;
        }
        Ok(p)
    }

    fn add_drafter(
        &mut self,
        d: &EagleDrafter,
        cpu_target: &TargetModel,
        opts: &GpuOptions,
    ) -> Result<usize> {
        let cpu = gpu_draft_source(d)?;
        let shares = Arc::ptr_eq(&cpu.embed, &cpu_target.embed);
        let draft = GpuDraft::from_cpu(
            self.target.gpu().clone(),
            cpu,
            self.target.embedding(),
            shares,
            opts,
        )?;

        self.drafters
            .push(EagleDrafter::new(draft, d.capture().clone())?);
        Ok(self.drafters.len() - 1)
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
                let capture =
                    CaptureChoice::default().resolve(c.aux_layer_ids.as_deref(), layers)?;
                let d = GpuDraft::random(gpu, c, target.embedding(), &tcfg, seed, opts)?;
                Some(EagleDrafter::new(d, capture)?)
            }
        };
        Ok(GpuPair {
            target,
            drafters: drafter.into_iter().collect(),
        })
    }

    fn generate(
        &mut self,
        drafter: Option<usize>,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        let drafter =
            match drafter {
                Some(i) => Some(self.drafters.get_mut(i).ok_or_else(|| {
                    EngineError::setting("drafter", format!("no GPU drafter #{i}"))
                })?),
                None => None,
            };
        // The drafter gathers the target's aux states on the device: they
        // never travel to the host and back.
        if let Some(d) = &drafter {
            *d.model().target_aux.borrow_mut() = Some(self.target.aux_rows());
        }
        self.target.keep_aux_on_device(drafter.is_some());
        let drafter = drafter.map(|d| d as &mut dyn Drafter);
        let out = generate(&self.target, prompts, params, drafter, rec);
        self.target.keep_aux_on_device(false);
        out
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

    /// Generates on the GPU (see [`generate`]) with the first drafter, if any.
    pub fn generate(
        &mut self,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        let first = self.has_drafter().then_some(0);
        self.generate_with(first, prompts, params, rec)
    }

    /// Generates on the GPU with drafter `drafter` (an index from
    /// [`GpuModels::add_drafter`]; 0 = the pair's own), or none.
    pub fn generate_with(
        &mut self,
        drafter: Option<usize>,
        prompts: &[Vec<u32>],
        params: &GenerateParams,
        rec: &mut dyn SpanRecorder,
    ) -> Result<Generation> {
        match self {
            GpuModels::Bf16(p) => p.generate(drafter, prompts, params, rec),
            GpuModels::F32(p) => p.generate(drafter, prompts, params, rec),
        }
    }

    /// Uploads a CPU drafter (its weights and capture) and returns its index.
    pub fn add_drafter(
        &mut self,
        d: &EagleDrafter,
        cpu_target: &TargetModel,
        opts: &GpuOptions,
    ) -> Result<usize> {
        match self {
            GpuModels::Bf16(p) => p.add_drafter(d, cpu_target, opts),
            GpuModels::F32(p) => p.add_drafter(d, cpu_target, opts),
        }
    }

    fn has_drafter(&self) -> bool {
        match self {
            GpuModels::Bf16(p) => !p.drafters.is_empty(),
            GpuModels::F32(p) => !p.drafters.is_empty(),
        }
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        match self {
            GpuModels::Bf16(p) => p.target.gpu(),
            GpuModels::F32(p) => p.target.gpu(),
        }
    }

    /// Bytes of target weights every decode step reads (all but the routed experts).
    pub fn target_weight_bytes(&self) -> usize {
        match self {
            GpuModels::Bf16(p) => p.target.weight_bytes(),
            GpuModels::F32(p) => p.target.weight_bytes(),
        }
    }

    /// Bytes of one routed expert of the target (0 for a dense target).
    pub fn target_expert_bytes(&self) -> usize {
        match self {
            GpuModels::Bf16(p) => p.target.expert_bytes(),
            GpuModels::F32(p) => p.target.expert_bytes(),
        }
    }

    /// Bytes of the target's KV cache per token (every layer).
    pub fn target_kv_bytes_per_token(&self) -> usize {
        match self {
            GpuModels::Bf16(p) => p.target.kv_bytes_per_token(),
            GpuModels::F32(p) => p.target.kv_bytes_per_token(),
        }
    }

    /// Routed experts touched and expert-layer forwards since the last
    /// [`GpuModels::reset_expert_stats`] (decode and verify forwards).
    pub fn expert_stats(&self) -> Result<(u64, u64)> {
        match self {
            GpuModels::Bf16(p) => p.target.expert_stats(),
            GpuModels::F32(p) => p.target.expert_stats(),
        }
    }

    /// The launches of the target's captured greedy decode forward of
    /// `rows` sequences ([`GpuTarget::decode_graph`]).
    pub fn decode_graph(&self, rows: usize) -> Option<GraphLaunches> {
        match self {
            GpuModels::Bf16(p) => p.target.decode_graph(rows),
            GpuModels::F32(p) => p.target.decode_graph(rows),
        }
    }

    /// Zeroes the expert counters.
    pub fn reset_expert_stats(&self) -> Result<()> {
        match self {
            GpuModels::Bf16(p) => p.target.reset_expert_stats(),
            GpuModels::F32(p) => p.target.reset_expert_stats(),
        }
    }
}

/// The EAGLE-3 draft of `d` in a form the GPU backend runs, or one line
/// saying what it does not run yet (EAGLE-1/2 drafts, a draft served as
/// EAGLE, SpecForge `fc_norm` / `norm_output = false`, vLLM
/// `norm_before_residual`, a biased `fc`): those run on the CPU backend.
fn gpu_draft_source(d: &EagleDrafter) -> Result<&Eagle3Draft> {
    let c = d.model().config();
    let unsupported = |what: &str| {
        Err(EngineError::config(
            &c.path,
            "architectures",
            format!("{what}: not supported by the GPU backend yet (use device = \"cpu\")"),
        ))
    };
    let Some(cpu) = d.model().as_eagle3() else {
        return unsupported("an EAGLE-1/2 draft");
    };
    if d.capture().source == CaptureSource::LastHidden {
        return unsupported("an EAGLE-3 draft served as EAGLE (fed the last hidden state)");
    }
    if c.fc_norm || !c.norm_output || c.norm_before_residual || cpu.fc.bias.is_some() {
        return unsupported(
            "fc_norm, norm_output = false, norm_before_residual or a biased fc in the draft",
        );
    }
    Ok(cpu)
}
