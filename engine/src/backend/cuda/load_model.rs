//! A target and its EAGLE-3 drafts loaded from their folders straight to
//! the GPU ([`GpuModels::load`], [`GpuModels::load_drafter`]): tensors go
//! from the safetensors files to the device in their stored dtype through
//! the bounded staging of [`Uploader`], so host memory stays a few hundred
//! megabytes whatever the model's size. Dense targets (Llama, Qwen2,
//! Qwen3) load this way; latent-attention and expert targets still go
//! through the CPU model ([`GpuModels::from_cpu`]) until their device
//! weights have loaders of their own.

use super::layers::{LayerAttention, LayerFfn, TargetLayer};
use super::load::Part;
use super::target::TargetWeights;
use super::upload::{LoadOptions, LoadStats, Uploader};
use super::weights::{DeviceBlock, DeviceGqa, DeviceLinear, DeviceMlp, DeviceNorm};
use super::{GpuDraft, GpuDtype, GpuModels, GpuOptions, GpuPair, GpuTarget};
use crate::backend::{cuda_supports, TargetBackend};
use crate::capture::{CaptureChoice, CaptureSource, AUX_STATES};
use crate::checkpoint::Checkpoint;
use crate::config::{DraftConfig, DraftKind, TargetConfig};
use crate::error::{EngineError, Result};
use crate::model::blocks::AttentionDims;
use crate::model::draft_layout::{check_eagle3_fits, draft_to_target, layer_prefix, settle_kind};
use crate::model::TargetModel;
use crate::speculative::EagleDrafter;
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use specula_kernels::cpu::AttentionShape;
use specula_kernels::cuda::{Gpu, GpuElement};
use std::path::Path;
use std::sync::Arc;

impl<T: GpuElement> TargetLayer<T>
where
    CudaBlas: Gemm<T>,
{
    /// Dense layer `i` of `c` (grouped-query attention and the gated MLP).
    fn load(up: &mut Uploader<'_>, ck: &Checkpoint, c: &TargetConfig, i: usize) -> Result<Self> {
        let h = c.hidden_size;
        let eps = c.rms_norm_eps;
        let p = format!("{}model.layers.{i}", c.weight_prefix);
        let dims = AttentionDims {
            in_dim: h,
            out_dim: h,
            shape: AttentionShape {
                n_heads: c.num_attention_heads,
                n_kv_heads: c.num_key_value_heads,
                head_dim: c.head_dim,
            },
            qkv_bias: c.qkv_bias,
            qk_norm_eps: c.family.has_qk_norm().then_some(eps),
        };
        let why = "hidden_size, num_attention_heads, num_key_value_heads, head_dim";
        let norm = |up: &mut Uploader<'_>, n: &str| {
            DeviceNorm::load(up, ck, &format!("{p}.{n}"), h, eps, "hidden_size")
        };
        Ok(TargetLayer {
            input_norm: norm(up, "input_layernorm")?,
            attn: LayerAttention::Gqa(DeviceGqa::load(
                up,
                ck,
                &format!("{p}.self_attn"),
                &dims,
                why,
            )?),
            post_norm: norm(up, "post_attention_layernorm")?,
            ffn: LayerFfn::Dense(DeviceMlp::load(
                up,
                ck,
                &format!("{p}.mlp"),
                h,
                c.intermediate_size,
                "hidden_size, intermediate_size",
            )?),
        })
    }
}

/// Whether `c` loads straight to the device (a dense target).
pub(crate) fn loads_direct(c: &TargetConfig) -> bool {
    c.mla.is_none() && c.moe.is_none()
}

impl<T: GpuElement> GpuTarget<T>
where
    CudaBlas: Gemm<T>,
{
    /// Loads the dense target in `dir` straight to the device.
    pub fn load(
        gpu: Arc<Gpu>,
        dir: &Path,
        opts: &GpuOptions,
        load: &LoadOptions,
    ) -> Result<(GpuTarget<T>, LoadStats)> {
        let c = TargetConfig::load(dir)?;
        cuda_supports(&c)?;
        if !loads_direct(&c) {
            return Err(EngineError::config(
                &c.path,
                "architectures",
                "latent attention or experts: loaded through the CPU model (GpuModels::load)",
            ));
        }
        let ck = Checkpoint::open(dir)?;
        let mut up = Uploader::new(&gpu, &dir.display().to_string(), ck.stored_bytes(), load)?;
        let h = c.hidden_size;
        let pre = &c.weight_prefix;
        let why_h = "hidden_size, vocab_size";
        let embed: CudaSlice<T> = up.tensor(
            &ck,
            &format!("{pre}model.embed_tokens.weight"),
            &[c.vocab_size, h],
            why_h,
        )?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| TargetLayer::load(&mut up, &ck, &c, i))
            .collect::<Result<Vec<_>>>()?;
        let norm = DeviceNorm::load(
            &mut up,
            &ck,
            &format!("{pre}model.norm"),
            h,
            c.rms_norm_eps,
            "hidden_size",
        )?;
        let head = format!("{pre}lm_head");
        let lm_head = if c.tie_word_embeddings && !ck.contains(&format!("{head}.weight")) {
            DeviceLinear {
                w: gpu.stream.clone_dtod(&embed)?,
                bias: None,
                out_dim: c.vocab_size,
                in_dim: h,
            }
        } else {
            let part = Part {
                name: &head,
                out: c.vocab_size,
            };
            DeviceLinear::load(&mut up, &ck, &[part], h, false, why_h)?
        };
        let stats = up.finish()?;
        let weights = TargetWeights {
            embed: Arc::new(embed),
            layers,
            norm,
            lm_head,
        };
        Ok((Self::assemble(gpu, c, weights, opts)?, stats))
    }
}

impl<T: GpuElement> GpuDraft<T>
where
    CudaBlas: Gemm<T>,
{
    /// Loads the EAGLE-3 draft in `dir` for `target` straight to the device
    /// (sharing `target_embed` when it has no embedding of its own), with
    /// the CPU loader's checks; what the GPU backend does not run yet is
    /// refused in one line.
    pub fn load(
        gpu: Arc<Gpu>,
        dir: &Path,
        target: &TargetConfig,
        target_embed: Arc<CudaSlice<T>>,
        opts: &GpuOptions,
        load: &LoadOptions,
    ) -> Result<(GpuDraft<T>, LoadStats)> {
        let mut c = DraftConfig::load(dir)?;
        let ck = Checkpoint::open(dir)?;
        let unsupported = |c: &DraftConfig, what: &str| {
            Err(EngineError::config(
                &c.path,
                "architectures",
                format!("{what}: not supported by the GPU backend yet (use device = \"cpu\")"),
            ))
        };
        if settle_kind(&mut c, &ck)? == DraftKind::Eagle {
            return unsupported(&c, "an EAGLE-1/2 draft");
        }
        if c.fc_norm || !c.norm_output || c.norm_before_residual || ck.contains("fc.bias") {
            return unsupported(
                &c,
                "fc_norm, norm_output = false, norm_before_residual or a biased fc in the draft",
            );
        }
        check_eagle3_fits(&c, target)?;
        let mut up = Uploader::new(&gpu, &dir.display().to_string(), ck.stored_bytes(), load)?;
        let h = c.hidden_size;
        let eps = c.rms_norm_eps;
        let embed = if ck.contains("embed_tokens.weight") {
            let why = "vocab_size, hidden_size";
            Arc::new(up.tensor(&ck, "embed_tokens.weight", &[c.vocab_size, h], why)?)
        } else if h == target.hidden_size {
            target_embed
        } else {
            return Err(EngineError::MissingTensor {
                path: ck.dir().to_path_buf(),
                name:
                    "embed_tokens.weight (needed: the draft hidden_size differs from the target's)"
                        .into(),
            });
        };
        let fc = Part { name: "fc", out: h };
        let fc_why = "fc input = 3 x target hidden_size, output = hidden_size";
        let fc = DeviceLinear::load(
            &mut up,
            &ck,
            &[fc],
            AUX_STATES * c.target_hidden_size,
            false,
            fc_why,
        )?;
        let layer = layer_prefix(&ck);
        let dims = AttentionDims {
            in_dim: 2 * h,
            out_dim: h,
            shape: AttentionShape {
                n_heads: c.num_attention_heads,
                n_kv_heads: c.num_key_value_heads,
                head_dim: c.head_dim,
            },
            qkv_bias: ck.contains(&format!("{layer}.self_attn.q_proj.bias")),
            qk_norm_eps: None,
        };
        let l = |n: &str| format!("{layer}.{n}");
        let input_norm =
            DeviceNorm::load(&mut up, &ck, &l("input_layernorm"), h, eps, "hidden_size")?;
        let hidden_norm = DeviceNorm::load(&mut up, &ck, &l("hidden_norm"), h, eps, "hidden_size")?;
        let block = DeviceBlock::load(&mut up, &ck, layer, &dims, c.intermediate_size, eps)?;
        let norm = DeviceNorm::load(&mut up, &ck, "norm", h, eps, "hidden_size")?;
        let head = Part {
            name: "lm_head",
            out: c.draft_vocab_size,
        };
        let lm_head = DeviceLinear::load(
            &mut up,
            &ck,
            &[head],
            h,
            false,
            "draft_vocab_size, hidden_size",
        )?;
        let d2t = draft_to_target(&ck, &c)?;
        let stats = up.finish()?;
        let parts = (fc, input_norm, hidden_norm, block, norm, lm_head);
        Ok((Self::from_device(gpu, c, embed, parts, d2t, opts)?, stats))
    }
}

impl<T: GpuElement> GpuPair<T>
where
    CudaBlas: Gemm<T>,
{
    fn load(
        gpu: Arc<Gpu>,
        target_dir: &Path,
        opts: &GpuOptions,
        load: &LoadOptions,
    ) -> Result<(GpuPair<T>, LoadStats)> {
        let (target, stats) = GpuTarget::load(gpu, target_dir, opts, load)?;
        let pair = GpuPair {
            target,
            drafters: Vec::new(),
        };
        Ok((pair, stats))
    }

    fn load_drafter(
        &mut self,
        dir: &Path,
        choice: &CaptureChoice,
        opts: &GpuOptions,
        load: &LoadOptions,
    ) -> Result<(usize, LoadStats)> {
        let target = self.target.config().clone();
        let gpu = self.target.gpu().clone();
        let (draft, stats) =
            GpuDraft::load(gpu, dir, &target, self.target.embedding(), opts, load)?;
        let c = &draft.config;
        let capture = choice.resolve_for(
            c.kind(),
            c.aux_layer_ids.as_deref(),
            target.num_hidden_layers,
        )?;
        if capture.source == CaptureSource::LastHidden {
            return Err(EngineError::config(
                &c.path,
                "architectures",
                "an EAGLE-3 draft served as EAGLE (fed the last hidden state): not supported by the GPU backend yet (use device = \"cpu\")",
            ));
        }
        self.drafters.push(EagleDrafter::new(draft, capture)?);
        Ok((self.drafters.len() - 1, stats))
    }
}

impl GpuModels {
    /// Loads the target in `target_dir` onto `gpu` as `dtype`: a dense
    /// target straight from its files (host memory bounded by the staging
    /// buffers), a latent-attention or expert target through the CPU
    /// model; returns what the load moved.
    pub fn load(
        gpu: Arc<Gpu>,
        target_dir: &Path,
        dtype: GpuDtype,
        opts: &GpuOptions,
        load: &LoadOptions,
    ) -> Result<(GpuModels, LoadStats)> {
        let c = TargetConfig::load(target_dir)?;
        if !loads_direct(&c) {
            let t0 = std::time::Instant::now();
            let cpu = TargetModel::load(target_dir)?;
            let models = match dtype {
                GpuDtype::Bf16 => GpuModels::Bf16(GpuPair {
                    target: GpuTarget::from_cpu(gpu, &cpu, opts)?,
                    drafters: Vec::new(),
                }),
                GpuDtype::F32 => GpuModels::F32(GpuPair {
                    target: GpuTarget::from_cpu(gpu, &cpu, opts)?,
                    drafters: Vec::new(),
                }),
            };
            let stats = LoadStats {
                tensors: 0,
                bytes: Checkpoint::open(target_dir)?.stored_bytes(),
                seconds: t0.elapsed().as_secs_f64(),
            };
            return Ok((models, stats));
        }
        Ok(match dtype {
            GpuDtype::Bf16 => {
                let (p, s) = GpuPair::load(gpu, target_dir, opts, load)?;
                (GpuModels::Bf16(p), s)
            }
            GpuDtype::F32 => {
                let (p, s) = GpuPair::load(gpu, target_dir, opts, load)?;
                (GpuModels::F32(p), s)
            }
        })
    }

    /// Loads the EAGLE-3 draft in `dir` straight to the device, fed the
    /// streams `choice` resolves to, and returns its drafter index (for
    /// [`GpuModels::generate_with`]) with what the load moved.
    pub fn load_drafter(
        &mut self,
        dir: &Path,
        choice: &CaptureChoice,
        opts: &GpuOptions,
        load: &LoadOptions,
    ) -> Result<(usize, LoadStats)> {
        match self {
            GpuModels::Bf16(p) => p.load_drafter(dir, choice, opts, load),
            GpuModels::F32(p) => p.load_drafter(dir, choice, opts, load),
        }
    }
}
