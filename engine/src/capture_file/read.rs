//! Reading a capture file: the header is checked whole when the file is
//! opened (every tensor present, shaped and inside the file), and tensors are
//! read one prompt and boundary at a time by positioned reads. (Not a memory
//! map: the pages of a map stay resident once touched, so reading every
//! boundary of a large capture would hold the whole file.)

use super::{argmax_name, hidden_name, tokens_name, CaptureMeta, PromptStates, StatesSource};
use crate::error::{EngineError, Result};
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The largest header read (a corrupt length must not allocate gigabytes);
/// a capture's header takes about 100 bytes per tensor.
const MAX_HEADER: u64 = 256 << 20;

/// One tensor's place in the file.
#[derive(Debug, Clone)]
struct Slot {
    dtype: String,
    shape: Vec<usize>,
    begin: usize,
    end: usize,
}

/// An opened capture file.
pub struct CaptureFile {
    path: PathBuf,
    file: std::fs::File,
    meta: CaptureMeta,
    data_start: usize,
    slots: HashMap<String, Slot>,
}

impl CaptureFile {
    /// Opens `path`, refusing (naming the file and the field or tensor) a
    /// file that is not a capture, is truncated, or lacks or misshapes a tensor.
    pub fn open(path: &Path) -> Result<CaptureFile> {
        let file = std::fs::File::open(path).map_err(|e| EngineError::io(path, e))?;
        let bad = |m: String| EngineError::WeightFile {
            path: path.to_path_buf(),
            message: m,
        };
        let len = file.metadata().map_err(|e| EngineError::io(path, e))?.len() as usize;
        if len < 8 {
            return Err(bad(format!(
                "truncated: {len} bytes, not even the 8-byte header length"
            )));
        }
        let mut n8 = [0u8; 8];
        file.read_exact_at(&mut n8, 0)
            .map_err(|e| EngineError::io(path, e))?;
        let n = u64::from_le_bytes(n8);
        if n > (len - 8) as u64 {
            return Err(bad(format!(
                "truncated: the header says it is {n} bytes, the file has {} after the length",
                len - 8
            )));
        }
        if n > MAX_HEADER {
            return Err(bad(format!(
                "header: {n} bytes, more than any capture's ({MAX_HEADER})"
            )));
        }
        let data_start = 8 + n as usize;
        let mut head = vec![0u8; n as usize];
        file.read_exact_at(&mut head, 8)
            .map_err(|e| EngineError::io(path, e))?;
        let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&head)
            .map_err(|e| bad(format!("header: not a safetensors JSON header: {e}")))?;
        let metadata: BTreeMap<String, String> = header
            .get("__metadata__")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| bad(format!("header: __metadata__ is not a map of strings: {e}")))?
            .ok_or_else(|| bad("header: no __metadata__: not a capture file (write one with `specula capture` or tools/capture/capture_hf.py)".into()))?;
        let meta = CaptureMeta::from_map(path, &metadata)?;
        let mut slots = HashMap::new();
        for (name, v) in header.iter().filter(|(k, _)| *k != "__metadata__") {
            let slot = parse_slot(v).ok_or_else(|| {
                bad(format!(
                    "tensor `{name}`: header entry without dtype, shape and data_offsets"
                ))
            })?;
            if slot.end < slot.begin || data_start + slot.end > len {
                return Err(bad(format!(
                    "truncated: tensor `{name}` ends at byte {} of the data, which holds {} bytes",
                    slot.end,
                    len - data_start
                )));
            }
            slots.insert(name.clone(), slot);
        }
        let f = CaptureFile {
            path: path.to_path_buf(),
            file,
            meta,
            data_start,
            slots,
        };
        f.check_tensors()?;
        Ok(f)
    }

    fn bad(&self, m: String) -> EngineError {
        EngineError::WeightFile {
            path: self.path.clone(),
            message: m,
        }
    }

    fn slot(&self, name: &str, dtype: &str, shape: &[usize]) -> Result<&Slot> {
        let s = self
            .slots
            .get(name)
            .ok_or_else(|| self.bad(format!("tensor `{name}`: missing")))?;
        let width = match dtype {
            "BF16" => 2,
            _ => 8,
        };
        if s.dtype != dtype
            || s.shape != shape
            || s.end - s.begin != width * shape.iter().product::<usize>()
        {
            return Err(self.bad(format!(
                "tensor `{name}`: {} {:?} over {} bytes, expected {dtype} {shape:?}",
                s.dtype,
                s.shape,
                s.end - s.begin
            )));
        }
        Ok(s)
    }

    /// Every prompt has its tokens, greedy choices and each stored boundary, shaped alike.
    fn check_tensors(&self) -> Result<()> {
        let h = self.meta.hidden_size;
        if self.meta.prompt_lengths.is_empty() {
            return Err(self.bad("field `__metadata__.prompt_lengths`: no prompt".into()));
        }
        for (i, &plen) in self.meta.prompt_lengths.iter().enumerate() {
            let t = self
                .slots
                .get(&tokens_name(i))
                .and_then(|s| s.shape.first().copied())
                .ok_or_else(|| self.bad(format!("tensor `{}`: missing", tokens_name(i))))?;
            if t == 0 || plen > t {
                return Err(self.bad(format!("field `__metadata__.prompt_lengths`: prompt {i} has {plen} prompt tokens of {t}")));
            }
            self.slot(&tokens_name(i), "I64", &[t])?;
            self.slot(&argmax_name(i), "I64", &[t])?;
            for &b in &self.meta.boundaries {
                self.slot(&hidden_name(i, b), "BF16", &[t, h])?;
            }
        }
        Ok(())
    }

    fn bytes(&self, name: &str, s: &Slot) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; s.end - s.begin];
        self.file
            .read_exact_at(&mut buf, (self.data_start + s.begin) as u64)
            .map_err(|e| self.bad(format!("tensor `{name}`: {e}")))?;
        Ok(buf)
    }

    /// Token ids of a `[t]` I64 tensor, each below the vocabulary.
    fn ids(&self, name: &str) -> Result<Vec<u32>> {
        let s = self
            .slots
            .get(name)
            .ok_or_else(|| self.bad(format!("tensor `{name}`: missing")))?;
        let v = self.meta.vocab_size;
        self.bytes(name, s)?
            .chunks_exact(8)
            .enumerate()
            .map(|(k, b)| {
                let id = i64::from_le_bytes(b.try_into().expect("8 bytes"));
                u32::try_from(id).ok().filter(|&t| (t as usize) < v).ok_or_else(|| {
                    self.bad(format!("tensor `{name}`: token {id} at position {k} is outside the vocabulary of {v}"))
                })
            })
            .collect()
    }

    /// Tokens of prompt `i` (prompt and continuation).
    pub fn tokens(&self, i: usize) -> Result<Vec<u32>> {
        self.ids(&tokens_name(i))
    }

    /// The residual stream of prompt `i` at boundary `b`, `[t, hidden]` as f32,
    /// refusing NaN and infinities.
    pub fn hidden(&self, i: usize, b: usize) -> Result<Vec<f32>> {
        let name = hidden_name(i, b);
        let s = self.slots.get(&name).ok_or_else(|| {
            self.bad(format!(
                "tensor `{name}`: missing: the capture holds boundaries {:?}",
                self.meta.boundaries
            ))
        })?;
        let h = self.meta.hidden_size;
        let out: Vec<f32> = self
            .bytes(&name, s)?
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect();
        if let Some(k) = out.iter().position(|x| !x.is_finite()) {
            return Err(self.bad(format!(
                "tensor `{name}`: {} at position {}, element {}",
                out[k],
                k / h,
                k % h
            )));
        }
        Ok(out)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn parse_slot(v: &serde_json::Value) -> Option<Slot> {
    let shape = v
        .get("shape")?
        .as_array()?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize))
        .collect::<Option<Vec<_>>>()?;
    let offs = v.get("data_offsets")?.as_array()?;
    Some(Slot {
        dtype: v.get("dtype")?.as_str()?.to_string(),
        shape,
        begin: usize::try_from(offs.first()?.as_u64()?).ok()?,
        end: usize::try_from(offs.get(1)?.as_u64()?).ok()?,
    })
}

impl StatesSource for CaptureFile {
    fn meta(&self) -> &CaptureMeta {
        &self.meta
    }
    fn prompt_count(&self) -> usize {
        self.meta.prompt_lengths.len()
    }
    fn prompt(&self, i: usize, boundaries: &[usize]) -> Result<PromptStates> {
        let mut hidden = BTreeMap::new();
        for &b in boundaries {
            hidden.insert(b, self.hidden(i, b)?);
        }
        Ok(PromptStates {
            prompt_len: self.meta.prompt_lengths[i],
            tokens: self.tokens(i)?,
            argmax: self.ids(&argmax_name(i))?,
            hidden,
        })
    }
    fn origin(&self) -> String {
        self.path.display().to_string()
    }
}
