//! A PyTorch checkpoint (`pytorch_model.bin`: a zip holding a pickled state
//! dict and one raw storage per tensor), read with candle's pickle
//! interpreter, which runs no code from the file: it interprets the
//! opcodes and builds tensor records from them. Records candle has no dtype
//! for (the bool `t2d` of EAGLE drafts) are skipped and named in
//! [`PytorchFile::skipped`], without the stderr line (and backtrace) that
//! candle's own reader prints for each.

use candle_core::pickle::{Object, Stack, TensorInfo};
use candle_core::{Device, Error, Result, Tensor};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The tensor records of one PyTorch checkpoint file.
pub struct PytorchFile {
    path: PathBuf,
    infos: HashMap<String, TensorInfo>,
    skipped: Vec<String>,
}

fn zip_error(e: zip::result::ZipError) -> Error {
    Error::Msg(format!("zip: {e}"))
}

/// The state dict inside a pickled object: the object itself, or the
/// arguments of a scripted `__torch__.Module`'s build.
fn state_dict(obj: Object) -> Option<Vec<(Object, Object)>> {
    let obj = match obj {
        Object::Build { callable, args } => match *callable {
            Object::Reduce { callable, .. } => match *callable {
                Object::Class {
                    module_name,
                    class_name,
                } if module_name == "__torch__" && class_name == "Module" => *args,
                _ => return None,
            },
            _ => return None,
        },
        obj => obj,
    };
    match obj {
        Object::Dict(kv) => Some(kv),
        _ => None,
    }
}

impl PytorchFile {
    /// Reads the tensor records of `path`.
    pub fn open(path: &Path) -> Result<PytorchFile> {
        let mut zip = zip::ZipArchive::new(BufReader::new(File::open(path)?)).map_err(zip_error)?;
        let mut pickles = Vec::new();
        for name in zip.file_names() {
            let name = name.map_err(zip_error)?;
            if name.ends_with("data.pkl") {
                pickles.push(name.into_owned());
            }
        }
        let (mut infos, mut skipped) = (HashMap::new(), Vec::new());
        for pickle in pickles {
            let dir = PathBuf::from(pickle.strip_suffix(".pkl").unwrap_or(&pickle));
            let mut reader = BufReader::new(zip.by_name(&pickle).map_err(zip_error)?);
            let mut stack = Stack::empty();
            stack.read_loop(&mut reader)?;
            let Some(records) = state_dict(stack.finalize()?) else {
                continue;
            };
            for (name, value) in records {
                let label = match &name {
                    Object::Unicode(s) => s.clone(),
                    other => format!("{other:?}"),
                };
                match value.into_tensor_info(name, &dir) {
                    Ok(Some(info)) => {
                        infos.insert(info.name.clone(), info);
                    }
                    Ok(None) => {}
                    Err(_) => skipped.push(label),
                }
            }
        }
        Ok(PytorchFile {
            path: path.to_path_buf(),
            infos,
            skipped,
        })
    }

    /// Its tensor records by name.
    pub fn infos(&self) -> &HashMap<String, TensorInfo> {
        &self.infos
    }

    /// Records that are not tensors candle can read (bool storages).
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Reads `name` onto the CPU as stored (`None` when it holds no such tensor).
    pub fn get(&self, name: &str) -> Result<Option<Tensor>> {
        let Some(info) = self.infos.get(name) else {
            return Ok(None);
        };
        let mut zip =
            zip::ZipArchive::new(BufReader::new(File::open(&self.path)?)).map_err(zip_error)?;
        let mut reader = zip.by_name(&info.path).map_err(zip_error)?;
        let layout = &info.layout;
        let fortran = layout.is_fortran_contiguous();
        if !layout.is_contiguous() && !fortran {
            return Err(Error::Msg(format!(
                "tensor `{name}` is stored strided ({layout:?}); only contiguous storages are read"
            )));
        }
        let skip = layout.start_offset() as u64;
        std::io::copy(&mut reader.by_ref().take(skip), &mut std::io::sink())?;
        let rank = layout.shape().rank();
        let dims: Vec<usize> = if rank > 1 && fortran {
            layout.dims().iter().rev().copied().collect()
        } else {
            layout.dims().to_vec()
        };
        let count: usize = dims.iter().product();
        let mut bytes = vec![0u8; count * info.dtype.size_in_bytes()];
        reader.read_exact(&mut bytes)?;
        let t = Tensor::from_raw_buffer(&bytes, info.dtype, &dims, &Device::Cpu)?;
        if rank > 1 && fortran {
            let order: Vec<usize> = (0..rank).rev().collect();
            return Ok(Some(t.permute(order)?));
        }
        Ok(Some(t))
    }
}
