//! One file of named tensors, in either format a checkpoint ships in:
//! safetensors (read with positioned reads, [`SafetensorsFile`]), or a PyTorch checkpoint (`pytorch_model.bin`:
//! a zip holding a pickled state dict and one raw storage per tensor), read
//! through candle's pickle interpreter ([`PytorchFile`]), which interprets
//! the pickle's opcodes itself and only builds tensor records from them:
//! nothing in the file is ever run, so a malicious pickle is at worst an
//! unreadable file.

use crate::error::{EngineError, Result};
use crate::pytorch_file::PytorchFile;
use crate::safetensors_file::{SafetensorsFile, StoredTensor};
use candle_core::safetensors::Load;
use candle_core::{DType, Device, Tensor};
use std::path::Path;

/// A file of tensors.
pub enum TensorFile {
    /// `*.safetensors`.
    Safetensors(SafetensorsFile),
    /// `*.bin`, `*.pt`, `*.pth`: PyTorch's zip format.
    Pytorch(PytorchFile),
}

/// Whether `path` names a PyTorch checkpoint rather than safetensors.
pub fn is_pytorch(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("bin" | "pt" | "pth")
    )
}

impl TensorFile {
    /// Opens `path` in the format its extension says; a file that is not
    /// one is an error naming it.
    pub fn open(path: &Path) -> Result<TensorFile> {
        let err = |what: &str, e: candle_core::Error| EngineError::WeightFile {
            path: path.to_path_buf(),
            message: format!("not a readable {what}: {e}"),
        };
        if is_pytorch(path) {
            let file = PytorchFile::open(path).map_err(|e| err("PyTorch checkpoint", e))?;
            if file.infos().is_empty() {
                return Err(EngineError::WeightFile {
                    path: path.to_path_buf(),
                    message: "a PyTorch checkpoint holding no tensor records (a state dict of \
                              name -> tensor is expected)"
                        .into(),
                });
            }
            return Ok(TensorFile::Pytorch(file));
        }
        SafetensorsFile::open(path).map(TensorFile::Safetensors)
    }

    /// The names of its tensors.
    pub fn names(&self) -> Vec<String> {
        match self {
            TensorFile::Safetensors(st) => st.tensors().keys().cloned().collect(),
            TensorFile::Pytorch(pt) => pt.infos().keys().cloned().collect(),
        }
    }

    /// The shape of `name`, if it holds it.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        match self {
            TensorFile::Safetensors(st) => st.get(name).map(|t| t.shape.clone()),
            TensorFile::Pytorch(pt) => pt
                .infos()
                .get(name)
                .map(|i| i.layout.shape().dims().to_vec()),
        }
    }

    /// Where `name` lies in a safetensors file (for reads straight into
    /// the caller's buffer); `None` for a PyTorch file or a missing name.
    pub fn stored(&self, name: &str) -> Option<(&SafetensorsFile, &StoredTensor)> {
        match self {
            TensorFile::Safetensors(st) => st.get(name).map(|t| (st, t)),
            TensorFile::Pytorch(_) => None,
        }
    }

    /// Whether `name` is stored as bfloat16.
    pub fn is_bf16(&self, name: &str) -> bool {
        match self {
            TensorFile::Safetensors(st) => st
                .get(name)
                .is_some_and(|t| t.dtype == safetensors::Dtype::BF16),
            TensorFile::Pytorch(pt) => pt.infos().get(name).is_some_and(|i| i.dtype == DType::BF16),
        }
    }

    /// Reads `name` onto the CPU as stored.
    pub fn load(&self, name: &str) -> candle_core::Result<Tensor> {
        match self {
            TensorFile::Safetensors(st) => {
                let t = st
                    .get(name)
                    .ok_or_else(|| candle_core::Error::Msg(format!("no tensor `{name}`")))?;
                let bytes = st
                    .bytes(t)
                    .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
                safetensors::tensor::TensorView::new(t.dtype, t.shape.clone(), &bytes)
                    .map_err(|e| candle_core::Error::Msg(e.to_string()))?
                    .load(&Device::Cpu)
            }
            TensorFile::Pytorch(pt) => pt
                .get(name)?
                .ok_or_else(|| candle_core::Error::Msg(format!("no tensor `{name}`"))),
        }
    }
}
