//! Reading Hugging Face checkpoints through candle: safetensors (one file or
//! sharded with `model.safetensors.index.json`), else PyTorch's
//! `pytorch_model.bin` (one file or sharded with
//! `pytorch_model.bin.index.json`), as [`TensorFile`]s: vectors as f32,
//! weight matrices as stored when bfloat16 ([`Weights`]), any other float
//! dtype as f32. Safetensors are read with positioned reads straight into
//! the vectors kept, so loading needs the weights' memory and no more
//! (a memory map would add the file's pages to the resident set).

use crate::config::read_json;
use crate::error::{EngineError, Result};
use crate::safetensors_file::{SafetensorsFile, StoredTensor};
use crate::tensor_file::TensorFile;
use crate::weights::Weights;
use candle_core::DType;
use safetensors::Dtype;
use specula_kernels::cpu::bf16_to_f32;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// An opened checkpoint folder: every tensor name mapped to the file holding it.
pub struct Checkpoint {
    dir: PathBuf,
    files: Vec<(PathBuf, TensorFile)>,
    index: HashMap<String, usize>,
}

#[derive(serde::Deserialize)]
struct ShardIndex {
    weight_map: BTreeMap<String, String>,
}

impl Checkpoint {
    /// Opens `dir`: safetensors first, as transformers prefers them
    /// (`model.safetensors.index.json`, else `model.safetensors`), then a
    /// PyTorch checkpoint (`pytorch_model.bin.index.json`, else
    /// `pytorch_model.bin`).
    pub fn open(dir: &Path) -> Result<Checkpoint> {
        let layouts = [
            ("model.safetensors.index.json", "model.safetensors"),
            ("pytorch_model.bin.index.json", "pytorch_model.bin"),
        ];
        let mut names: Option<Vec<PathBuf>> = None;
        for (index, single) in layouts {
            let (index_path, single) = (dir.join(index), dir.join(single));
            if index_path.exists() {
                let idx: ShardIndex = read_json(&index_path, "the shard index")?;
                let mut shards: Vec<String> = idx.weight_map.into_values().collect();
                shards.sort();
                shards.dedup();
                if shards.is_empty() {
                    return Err(EngineError::config(
                        &index_path,
                        "weight_map",
                        "names no shard",
                    ));
                }
                names = Some(shards.into_iter().map(|s| dir.join(s)).collect());
                break;
            } else if single.exists() {
                names = Some(vec![single]);
                break;
            }
        }
        let Some(names) = names else {
            return Err(EngineError::MissingFile {
                path: dir.join("model.safetensors"),
                what: "weights (model.safetensors or pytorch_model.bin, or shards with their \
                       .index.json)"
                    .into(),
            });
        };
        let mut files = Vec::new();
        let mut index = HashMap::new();
        for path in names {
            if !path.exists() {
                return Err(EngineError::MissingFile {
                    path,
                    what: "a weight shard named by the checkpoint's .index.json".into(),
                });
            }
            let file = TensorFile::open(&path)?;
            for name in file.names() {
                index.insert(name, files.len());
            }
            files.push((path, file));
        }
        Ok(Checkpoint {
            dir: dir.to_path_buf(),
            files,
            index,
        })
    }

    /// The folder it was opened from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The stored name of `name`, also accepting a `model.` prefix (SGLang drafts).
    fn stored_name(&self, name: &str) -> Option<String> {
        [name.to_string(), format!("model.{name}")]
            .into_iter()
            .find(|n| self.index.contains_key(n))
    }

    /// Whether the checkpoint holds `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.stored_name(name).is_some()
    }

    /// All tensor names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.index.keys().cloned().collect();
        v.sort();
        v
    }

    /// Decoder layers the checkpoint holds: one past the highest `N` of a
    /// `model.layers.N.` tensor (0 when there is none).
    pub fn decoder_layers(&self) -> usize {
        self.index
            .keys()
            .filter_map(|n| {
                n.strip_prefix("model.layers.")?
                    .split('.')
                    .next()?
                    .parse()
                    .ok()
            })
            .map(|n: usize| n + 1)
            .max()
            .unwrap_or(0)
    }

    /// The shape of `name`, if present.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        let stored = self.stored_name(name)?;
        let (_, file) = &self.files[self.index[&stored]];
        file.shape(&stored)
    }

    /// The stored name of `name`, its file and path, once its shape is
    /// checked against `expected` (`why` names the config fields it comes from).
    fn checked(
        &self,
        name: &str,
        expected: &[usize],
        why: &str,
    ) -> Result<(String, &PathBuf, &TensorFile)> {
        let stored = self
            .stored_name(name)
            .ok_or_else(|| EngineError::MissingTensor {
                path: self.dir.clone(),
                name: name.to_string(),
            })?;
        let (path, file) = &self.files[self.index[&stored]];
        let shape = file.shape(&stored).unwrap_or_default();
        if shape != expected {
            return Err(EngineError::TensorShape {
                path: path.clone(),
                name: stored,
                expected: expected.to_vec(),
                found: shape,
                why: why.to_string(),
            });
        }
        Ok((stored, path, file))
    }

    /// Where `name` (of exactly `expected` shape) lies in a safetensors
    /// file, for reads straight into a caller's buffer (the GPU upload);
    /// `Ok(None)` when it is in a PyTorch file.
    pub fn stored(
        &self,
        name: &str,
        expected: &[usize],
        why: &str,
    ) -> Result<Option<(&SafetensorsFile, &StoredTensor)>> {
        let (stored, _, file) = self.checked(name, expected, why)?;
        Ok(file.stored(&stored))
    }

    fn load(
        &self,
        name: &str,
        expected: &[usize],
        why: &str,
        dtype: DType,
    ) -> Result<candle_core::Tensor> {
        let (stored, path, file) = self.checked(name, expected, why)?;
        let err = |e: candle_core::Error| EngineError::WeightFile {
            path: path.clone(),
            message: format!("tensor `{stored}`: {e}"),
        };
        file.load(&stored)
            .and_then(|t| t.to_dtype(dtype))
            .and_then(|t| t.flatten_all())
            .map_err(err)
    }

    /// Loads a float tensor of exactly `expected` shape as f32; `why` names
    /// the config fields the shape comes from, for the error message.
    pub fn f32(&self, name: &str, expected: &[usize], why: &str) -> Result<Vec<f32>> {
        let v = match self.stored(name, expected, why)? {
            // Read straight into the vector kept (f32), or widened from the
            // bits read (bf16): no whole-file copy on the way.
            Some((file, t)) if t.dtype == Dtype::F32 => file.read_f32(t)?,
            Some((file, t)) if t.dtype == Dtype::BF16 => {
                file.read_u16(t)?.into_iter().map(bf16_to_f32).collect()
            }
            _ => {
                let t = self.load(name, expected, why, DType::F32)?;
                t.to_vec1::<f32>().map_err(|e| EngineError::WeightFile {
                    path: self.dir.clone(),
                    message: format!("tensor `{name}`: {e}"),
                })?
            }
        };
        self.finite(name, v.iter().position(|x| !x.is_finite()), v.len())?;
        Ok(v)
    }

    /// Refuses a tensor with a NaN or infinity (at element `bad` of `len`):
    /// one such weight turns every logit after it into NaN, and a NaN
    /// argmax would otherwise pass for a token.
    fn finite(&self, name: &str, bad: Option<usize>, len: usize) -> Result<()> {
        match bad {
            None => Ok(()),
            Some(i) => Err(EngineError::WeightFile {
                path: self.file_of(name),
                message: format!(
                    "tensor `{name}` holds a non-finite value (NaN or infinity) at element {i} of {len}"
                ),
            }),
        }
    }

    /// Loads a weight matrix of exactly `expected` shape as it is stored:
    /// bfloat16 stays bfloat16 (half the bytes of f32; widened in registers
    /// by the kernels, exactly), any other float dtype becomes f32.
    pub fn weights(&self, name: &str, expected: &[usize], why: &str) -> Result<Weights> {
        let stored = self.stored_name(name);
        let is_bf16 = stored
            .as_ref()
            .is_some_and(|n| self.files[self.index[n]].1.is_bf16(n));
        if !is_bf16 {
            return self.f32(name, expected, why).map(Weights::F32);
        }
        let bits: Vec<u16> = match self.stored(name, expected, why)? {
            // Read straight into the vector kept.
            Some((file, t)) => file.read_u16(t)?,
            None => {
                let t = self.load(name, expected, why, DType::BF16)?;
                t.to_vec1::<half::bf16>()
                    .map(|v| v.into_iter().map(half::bf16::to_bits).collect())
                    .map_err(|e| EngineError::WeightFile {
                        path: self.dir.clone(),
                        message: format!("tensor `{name}`: {e}"),
                    })?
            }
        };
        // All exponent bits set: an infinity or a NaN.
        let bad = bits.iter().position(|b| b & 0x7F80 == 0x7F80);
        self.finite(name, bad, bits.len())?;
        Ok(Weights::Bf16(bits))
    }

    /// Loads an integer tensor of exactly `expected` shape as i64.
    pub fn i64(&self, name: &str, expected: &[usize], why: &str) -> Result<Vec<i64>> {
        let t = self.load(name, expected, why, DType::I64)?;
        t.to_vec1::<i64>().map_err(|e| EngineError::WeightFile {
            path: self.dir.clone(),
            message: format!("tensor `{name}`: {e}"),
        })
    }

    /// Bytes of every tensor in its safetensors files (what a full load
    /// reads; PyTorch files count 0).
    pub fn stored_bytes(&self) -> u64 {
        self.files
            .iter()
            .filter_map(|(_, f)| match f {
                TensorFile::Safetensors(st) => {
                    Some(st.tensors().values().map(|t| t.len).sum::<u64>())
                }
                TensorFile::Pytorch(_) => None,
            })
            .sum()
    }

    /// The file holding `name` (for messages).
    pub fn file_of(&self, name: &str) -> PathBuf {
        self.stored_name(name)
            .map(|n| self.files[self.index[&n]].0.clone())
            .unwrap_or_else(|| self.dir.clone())
    }
}
