//! A safetensors file read with positioned reads (`pread`), never mapped:
//! its header is parsed once, and each tensor's bytes are read straight
//! into the buffer that keeps them (a weight vector, a pinned staging
//! buffer on the way to the GPU). Nothing of the file stays in the
//! process's memory but what the caller keeps: a mapped file's touched
//! pages count in the resident set, so a mapped checkpoint costs its whole
//! size on top of the weights loaded from it.

use crate::error::{EngineError, Result};
use safetensors::tensor::TensorInfo;
use safetensors::Dtype;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The largest header accepted (the format's own limit is 100 MB).
const MAX_HEADER: u64 = 100_000_000;

/// Where one tensor lies in its file.
#[derive(Debug, Clone)]
pub struct StoredTensor {
    /// Element type as stored.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<usize>,
    /// Offset of its first byte in the file.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

impl StoredTensor {
    /// Elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// An opened safetensors file: the tensor table and the open file.
pub struct SafetensorsFile {
    path: PathBuf,
    file: File,
    tensors: HashMap<String, StoredTensor>,
}

impl SafetensorsFile {
    /// Opens `path` and reads its header; a file that is not safetensors
    /// (short, a header that is not the JSON table, offsets outside the
    /// file, sizes that disagree with shape and dtype) is an error naming it.
    pub fn open(path: &Path) -> Result<SafetensorsFile> {
        let bad = |message: String| EngineError::WeightFile {
            path: path.to_path_buf(),
            message: format!("not a readable safetensors file: {message}"),
        };
        let file = File::open(path).map_err(|e| bad(e.to_string()))?;
        let size = file.metadata().map_err(|e| bad(e.to_string()))?.len();
        let mut len8 = [0u8; 8];
        file.read_exact_at(&mut len8, 0).map_err(|_| {
            bad(format!(
                "{size} bytes, shorter than the 8-byte header length"
            ))
        })?;
        let n = u64::from_le_bytes(len8);
        if n > MAX_HEADER || 8 + n > size {
            return Err(bad(format!(
                "a header of {n} bytes in a file of {size} bytes"
            )));
        }
        let mut header = vec![0u8; n as usize];
        file.read_exact_at(&mut header, 8)
            .map_err(|e| bad(e.to_string()))?;
        let table: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&header).map_err(|e| bad(format!("header: {e}")))?;
        let data_start = 8 + n;
        let mut tensors = HashMap::new();
        for (name, value) in table {
            if name == "__metadata__" {
                continue;
            }
            let info: TensorInfo =
                serde_json::from_value(value).map_err(|e| bad(format!("tensor `{name}`: {e}")))?;
            let (start, end) = info.data_offsets;
            // In u128: shapes and offsets come from the file and may be absurd.
            let numel: u128 = info.shape.iter().map(|&d| d as u128).product();
            let want = (numel * info.dtype.bitsize() as u128).div_ceil(8);
            if end < start
                || (end - start) as u128 != want
                || u128::from(data_start) + end as u128 > u128::from(size)
            {
                return Err(bad(format!(
                    "tensor `{name}`: bytes {start}..{end} for {numel} {:?} elements in a data section of {} bytes",
                    info.dtype,
                    size - data_start
                )));
            }
            tensors.insert(
                name,
                StoredTensor {
                    dtype: info.dtype,
                    shape: info.shape,
                    offset: data_start + start as u64,
                    len: (end - start) as u64,
                },
            );
        }
        Ok(SafetensorsFile {
            path: path.to_path_buf(),
            file,
            tensors,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its tensors by name.
    pub fn tensors(&self) -> &HashMap<String, StoredTensor> {
        &self.tensors
    }

    /// Where `name` lies, if the file holds it.
    pub fn get(&self, name: &str) -> Option<&StoredTensor> {
        self.tensors.get(name)
    }

    /// Reads `buf.len()` bytes of `t` from byte `at` of the tensor
    /// (positioned reads: callable from several threads at once).
    pub fn read(&self, t: &StoredTensor, at: u64, buf: &mut [u8]) -> Result<()> {
        if at + buf.len() as u64 > t.len {
            return Err(EngineError::WeightFile {
                path: self.path.clone(),
                message: format!(
                    "a read of bytes {at}..{} of a {}-byte tensor",
                    at + buf.len() as u64,
                    t.len
                ),
            });
        }
        self.file
            .read_exact_at(buf, t.offset + at)
            .map_err(|e| EngineError::WeightFile {
                path: self.path.clone(),
                message: format!("read of {} bytes at {}: {e}", buf.len(), t.offset + at),
            })
    }

    /// The whole of `t` as bytes.
    pub fn bytes(&self, t: &StoredTensor) -> Result<Vec<u8>> {
        let mut v = vec![0u8; t.len as usize];
        self.read(t, 0, &mut v)?;
        Ok(v)
    }

    /// `t` read into a vector of 2-byte elements (bf16 or f16 bit
    /// patterns), with no copy in between.
    pub fn read_u16(&self, t: &StoredTensor) -> Result<Vec<u16>> {
        let mut v = vec![0u16; t.len as usize / 2];
        self.read(t, 0, as_bytes_mut(&mut v))?;
        Ok(v)
    }

    /// `t` read into a vector of f32 (stored as f32), with no copy in between.
    pub fn read_f32(&self, t: &StoredTensor) -> Result<Vec<f32>> {
        let mut v = vec![0f32; t.len as usize / 4];
        self.read(t, 0, as_bytes_mut(&mut v))?;
        Ok(v)
    }
}

/// Numbers with no invalid bit pattern and no padding.
trait Plain: Copy {}
impl Plain for u16 {}
impl Plain for f32 {}

/// The bytes of a slice of plain numbers (little-endian machines: the
/// safetensors byte order).
fn as_bytes_mut<T: Plain>(v: &mut [T]) -> &mut [u8] {
    let n = std::mem::size_of_val(v);
    // SAFETY: u16 and f32 have no invalid bit patterns and no padding; the
    // byte view covers exactly the slice's memory and borrows it mutably.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), n) }
}
