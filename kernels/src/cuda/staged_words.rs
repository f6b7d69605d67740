//! A forward's small inputs (tokens, positions, key lists, ...) staged as
//! one array of 32-bit words: the host fills it, one transfer moves it to
//! the device and one kernel (`scatter_words`, `copy.cu`) spreads it over
//! the inputs' own buffers, in place of a host-to-device copy per input
//! (each a driver call the GPU waits on between two steps).

use super::device::{Gpu, GpuError};
use super::launch::{cfg, launch, need, RawArg};
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr};

/// Threads of a `scatter_words` block.
const SCATTER_THREADS: u32 = 128;

/// One input buffer a [`StagedWords`] fills: its device address and length
/// in 32-bit words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WordField {
    to: u64,
    words: usize,
}

impl WordField {
    /// The whole of `s`, whose elements are 4 bytes wide.
    pub fn of<T: DeviceRepr>(gpu: &Gpu, s: &CudaSlice<T>) -> Result<WordField, GpuError> {
        need(std::mem::size_of::<T>() == 4, || {
            "a staged input's elements must be 32-bit words".into()
        })?;
        let (to, _sync) = s.device_ptr(&gpu.stream);
        Ok(WordField { to, words: s.len() })
    }
}

/// A 32-bit word of a staged input: a `u32`, or an `i32`'s bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word(pub u32);

impl From<u32> for Word {
    fn from(v: u32) -> Word {
        Word(v)
    }
}

impl From<i32> for Word {
    fn from(v: i32) -> Word {
        Word(v as u32)
    }
}

/// Input buffers staged as one word array (see the module's note).
pub struct StagedWords {
    host: Vec<u32>,
    /// Where each field starts in `host` (and `staged`), and one past the last.
    starts: Vec<usize>,
    staged: CudaSlice<u32>,
    /// `(address, first word, words)` per field, for the kernel.
    table: CudaSlice<u64>,
}

impl StagedWords {
    /// Staging for `fields`, in order (all zero until filled).
    ///
    /// # Safety
    /// Every field's buffer must stay allocated while this value is
    /// scattered: [`StagedWords::scatter`] writes them by address.
    pub unsafe fn new(gpu: &Gpu, fields: &[WordField]) -> Result<StagedWords, GpuError> {
        need(!fields.is_empty(), || "no fields to stage".into())?;
        let mut starts = vec![0usize];
        let mut table = Vec::with_capacity(3 * fields.len());
        for f in fields {
            let first = *starts.last().expect("starts holds 0");
            table.extend([f.to, first as u64, f.words as u64]);
            starts.push(first + f.words);
        }
        let total = *starts.last().expect("starts holds 0");
        let s = &gpu.stream;
        Ok(StagedWords {
            host: vec![0; total],
            starts,
            staged: s.alloc_zeros(total.max(1))?,
            table: s.clone_htod(&table)?,
        })
    }

    /// Fills field `i` with `values` (each a 32-bit word: `i32`s as their
    /// bits), zeros after them; more values than the field holds are an
    /// error.
    pub fn fill<V: Into<Word>>(
        &mut self,
        i: usize,
        values: impl ExactSizeIterator<Item = V>,
    ) -> Result<(), GpuError> {
        let field = &mut self.host[self.starts[i]..self.starts[i + 1]];
        let n = values.len();
        need(n <= field.len(), || {
            format!("staged input {i}: {n} words for a field of {}", field.len())
        })?;
        for (w, v) in field.iter_mut().zip(values) {
            *w = v.into().0;
        }
        field[n..].fill(0);
        Ok(())
    }

    /// Copies the host words to the device (stream-ordered, one transfer).
    pub fn upload(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        if self.host.is_empty() {
            return Ok(());
        }
        Ok(gpu.stream.memcpy_htod(&self.host, &mut self.staged)?)
    }

    /// Launches the kernel that writes every field from the device words
    /// (one block a field): what a captured graph replays.
    pub fn scatter(&self, gpu: &Gpu) -> Result<(), GpuError> {
        let args = [
            RawArg::slice(gpu, &self.staged),
            RawArg::slice(gpu, &self.table),
        ];
        let fields = (self.starts.len() - 1) as u32;
        // SAFETY: the kernel's parameters in order; the table's rows lie
        // within `staged` (laid out above) and the fields' buffers outlive
        // this value (the contract of `new`).
        unsafe {
            launch(
                gpu,
                "scatter_words",
                cfg((fields, 1), SCATTER_THREADS, 0),
                &args,
            )
        }
    }
}
