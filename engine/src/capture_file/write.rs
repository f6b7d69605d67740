//! Writing a capture file with memory bounded by one boundary of one prompt:
//! tensors go to a data file beside the output as they come; `finish` writes
//! the safetensors header (now that every size is known), appends the data
//! and renames the result into place.

use super::{argmax_name, hidden_name, tokens_name, CaptureMeta, PromptStates};
use crate::error::{EngineError, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One tensor's header entry.
struct Entry {
    name: String,
    dtype: &'static str,
    shape: Vec<usize>,
    begin: u64,
    end: u64,
}

/// A prompt being written: its length and the boundaries still to come.
struct Open {
    tokens: usize,
    next: usize,
}

/// Streams prompts into a capture file (see the module documentation of
/// `capture_file`): `begin_prompt`, one `boundary` per stored boundary in
/// ascending order, then the next prompt; `finish` at the end.
pub struct CaptureWriter {
    out: PathBuf,
    data_path: PathBuf,
    data: BufWriter<File>,
    meta: CaptureMeta,
    entries: Vec<Entry>,
    offset: u64,
    open: Option<Open>,
}

impl CaptureWriter {
    /// Starts `out` (written only by `finish`; a data file `out.data.tmp` holds the tensors until then).
    pub fn create(out: &Path, meta: CaptureMeta) -> Result<CaptureWriter> {
        let mut name = out.as_os_str().to_owned();
        name.push(".data.tmp");
        let data_path = PathBuf::from(name);
        let file = File::create(&data_path).map_err(|e| EngineError::write(&data_path, e))?;
        Ok(CaptureWriter {
            out: out.to_path_buf(),
            data_path,
            data: BufWriter::with_capacity(1 << 20, file),
            meta: CaptureMeta {
                prompt_lengths: Vec::new(),
                ..meta
            },
            entries: Vec::new(),
            offset: 0,
            open: None,
        })
    }

    /// The metadata being written.
    pub fn meta(&self) -> &CaptureMeta {
        &self.meta
    }

    fn append(
        &mut self,
        name: String,
        dtype: &'static str,
        shape: Vec<usize>,
        bytes: &[u8],
    ) -> Result<()> {
        self.data
            .write_all(bytes)
            .map_err(|e| EngineError::write(&self.data_path, e))?;
        let begin = self.offset;
        self.offset += bytes.len() as u64;
        self.entries.push(Entry {
            name,
            dtype,
            shape,
            begin,
            end: self.offset,
        });
        Ok(())
    }

    fn ids(&mut self, name: String, ids: &[u32]) -> Result<()> {
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&t| i64::from(t).to_le_bytes())
            .collect();
        self.append(name, "I64", vec![ids.len()], &bytes)
    }

    /// Starts the next prompt: its tokens (prompt then continuation), the
    /// target's greedy choice after each, and how many are the prompt's.
    pub fn begin_prompt(
        &mut self,
        prompt_len: usize,
        tokens: &[u32],
        argmax: &[u32],
    ) -> Result<()> {
        self.check_closed()?;
        if tokens.is_empty() || argmax.len() != tokens.len() || prompt_len > tokens.len() {
            return Err(EngineError::setting(
                "capture",
                format!(
                    "a prompt of {} tokens with {} greedy choices and prompt length {prompt_len}",
                    tokens.len(),
                    argmax.len()
                ),
            ));
        }
        let i = self.meta.prompt_lengths.len();
        self.ids(tokens_name(i), tokens)?;
        self.ids(argmax_name(i), argmax)?;
        self.meta.prompt_lengths.push(prompt_len);
        self.open = Some(Open {
            tokens: tokens.len(),
            next: 0,
        });
        Ok(())
    }

    /// Writes the open prompt's residual stream at `boundary`
    /// (`[tokens, hidden]`, stored as bfloat16); boundaries come in the order of
    /// the metadata's list.
    pub fn boundary(&mut self, boundary: usize, states: &[f32]) -> Result<()> {
        let (t, next) = match &self.open {
            Some(o) => (o.tokens, o.next),
            None => {
                return Err(EngineError::setting(
                    "capture",
                    "a boundary written before begin_prompt",
                ))
            }
        };
        let want = self.meta.boundaries.get(next).copied();
        let h = self.meta.hidden_size;
        if want != Some(boundary) || states.len() != t * h {
            return Err(EngineError::setting(
                "capture",
                format!(
                    "boundary {boundary} with {} values; expected boundary {want:?} with {t} x {h}",
                    states.len()
                ),
            ));
        }
        let bytes: Vec<u8> = states
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect();
        let i = self.meta.prompt_lengths.len() - 1;
        self.append(hidden_name(i, boundary), "BF16", vec![t, h], &bytes)?;
        let open = self.open.as_mut().expect("open");
        open.next += 1;
        if open.next == self.meta.boundaries.len() {
            self.open = None;
        }
        Ok(())
    }

    /// Writes a whole prompt (every stored boundary must be in `p.hidden`).
    pub fn push(&mut self, p: &PromptStates) -> Result<()> {
        self.begin_prompt(p.prompt_len, &p.tokens, &p.argmax)?;
        for b in self.meta.boundaries.clone() {
            let states = p.hidden.get(&b).ok_or_else(|| {
                EngineError::setting("capture", format!("prompt without boundary {b}"))
            })?;
            self.boundary(b, states)?;
        }
        Ok(())
    }

    fn check_closed(&self) -> Result<()> {
        match &self.open {
            Some(o) => Err(EngineError::setting(
                "capture",
                format!(
                    "the prompt before has {} of {} boundaries",
                    o.next,
                    self.meta.boundaries.len()
                ),
            )),
            None => Ok(()),
        }
    }

    /// Writes the header and the data into the output file; returns its size in bytes.
    pub fn finish(mut self) -> Result<u64> {
        self.check_closed()?;
        if self.entries.is_empty() {
            return Err(EngineError::setting("capture", "no prompt was written"));
        }
        self.data
            .flush()
            .map_err(|e| EngineError::write(&self.data_path, e))?;
        let mut header = serde_json::Map::new();
        header.insert(
            "__metadata__".into(),
            serde_json::to_value(self.meta.to_map()).expect("strings"),
        );
        for e in &self.entries {
            header.insert(
                e.name.clone(),
                serde_json::json!({"dtype": e.dtype, "shape": e.shape, "data_offsets": [e.begin, e.end]}),
            );
        }
        let mut text = serde_json::to_vec(&header).expect("header serialises");
        // Pad with spaces so the data starts 8-byte aligned, as safetensors writers do.
        while !text.len().is_multiple_of(8) {
            text.push(b' ');
        }
        let tmp = {
            let mut n = self.out.as_os_str().to_owned();
            n.push(".tmp");
            PathBuf::from(n)
        };
        let write = |e: std::io::Error| EngineError::write(&tmp, e);
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(write)?);
        out.write_all(&(text.len() as u64).to_le_bytes())
            .map_err(write)?;
        out.write_all(&text).map_err(write)?;
        let mut data =
            File::open(&self.data_path).map_err(|e| EngineError::write(&self.data_path, e))?;
        std::io::copy(&mut data, &mut out).map_err(write)?;
        out.flush().map_err(write)?;
        drop(out);
        std::fs::rename(&tmp, &self.out).map_err(|e| EngineError::write(&self.out, e))?;
        let _ = std::fs::remove_file(&self.data_path);
        Ok(8 + text.len() as u64 + self.offset)
    }
}

impl Drop for CaptureWriter {
    fn drop(&mut self) {
        // The data file is scratch, finished or not.
        let _ = std::fs::remove_file(&self.data_path);
    }
}
