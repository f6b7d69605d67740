//! Checkpoint tensors straight to the device, for any model's weight
//! names: each tensor is read from its safetensors file with positioned
//! reads (several threads per chunk) into one of two pinned staging
//! buffers, copied to the device asynchronously while the next chunk is
//! read, and, when its stored type is not the model's or its rows go to a
//! fused layout's slot (q|k|v stacked, gate|up interleaved), converted and
//! placed by a kernel ([`place_rows`]). Host memory is the staging buffers
//! whatever the model's size; nothing of the checkpoint passes through an
//! f32 copy on the host.

use crate::checkpoint::Checkpoint;
use crate::error::{EngineError, Result};
use crate::safetensors_file::{SafetensorsFile, StoredTensor};
use cudarc::driver::{sys, CudaEvent, CudaSlice, DevicePtr, PinnedHostSlice};
use safetensors::Dtype;
use specula_kernels::cuda::{place_rows, Gpu, GpuElement, RowPlacement, StoredFloat};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Bytes of one pinned staging buffer (and of the device staging buffer).
const STAGING_BYTES: usize = 64 << 20;
/// Pinned staging buffers: one is read into while the other is copied.
const STAGING_BUFFERS: usize = 2;
/// Chunks smaller than this are read by one thread.
const PARALLEL_READ_MIN: usize = 4 << 20;

/// What a load moved, and how fast.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadStats {
    /// Tensors uploaded.
    pub tensors: usize,
    /// Bytes read from the checkpoint files.
    pub bytes: u64,
    /// Seconds from the first read to the last upload's completion.
    pub seconds: f64,
}

impl LoadStats {
    /// Read-and-upload throughput in GB/s (10^9 bytes).
    pub fn gb_s(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-9) / 1e9
    }

    /// The sum of two loads (a target and its draft).
    pub fn plus(self, o: LoadStats) -> LoadStats {
        LoadStats {
            tensors: self.tensors + o.tensors,
            bytes: self.bytes + o.bytes,
            seconds: self.seconds + o.seconds,
        }
    }
}

/// How a load reports itself on stderr.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// No progress line.
    pub quiet: bool,
}

/// One pinned staging buffer and the event after its last copy.
struct Slot {
    /// Owns the memory `ptr` points into.
    _host: PinnedHostSlice<u8>,
    ptr: *mut u8,
    copied: CudaEvent,
}

/// Where one tensor's bytes come from.
enum Source<'a> {
    /// A safetensors file.
    File(&'a SafetensorsFile, &'a StoredTensor),
    /// Host memory (a PyTorch checkpoint's tensor read by candle, as f32).
    Host(&'a [u8]),
}

impl Source<'_> {
    fn read(&self, at: usize, buf: &mut [u8]) -> Result<()> {
        match self {
            Source::File(f, t) => f.read(t, at as u64, buf),
            Source::Host(b) => {
                buf.copy_from_slice(&b[at..at + buf.len()]);
                Ok(())
            }
        }
    }
}

/// Uploads checkpoint tensors to one GPU through bounded staging buffers.
pub(crate) struct Uploader<'g> {
    gpu: &'g Gpu,
    slots: Vec<Slot>,
    next: usize,
    device_staging: CudaSlice<u8>,
    readers: usize,
    stats: LoadStats,
    started: Instant,
    progress: Progress,
}

impl<'g> Uploader<'g> {
    /// Staging for a load of about `total` bytes (for the progress line),
    /// named `what` on it.
    pub(crate) fn new(
        gpu: &'g Gpu,
        what: &str,
        total: u64,
        opts: &LoadOptions,
    ) -> Result<Uploader<'g>> {
        let mut slots = Vec::with_capacity(STAGING_BUFFERS);
        for _ in 0..STAGING_BUFFERS {
            // Plain page-locked memory (not write-combined: the reads write it
            // through the kernel's copy, which write-combining slows).
            let mut host = unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(STAGING_BYTES, 0) }?;
            let ptr = host.as_mut_ptr()?;
            let copied = gpu
                .ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
            slots.push(Slot {
                _host: host,
                ptr,
                copied,
            });
        }
        let readers = std::thread::available_parallelism()
            .map_or(4, |n| n.get())
            .clamp(1, 8);
        Ok(Uploader {
            gpu,
            slots,
            next: 0,
            device_staging: unsafe { gpu.stream.alloc::<u8>(STAGING_BYTES) }?,
            readers,
            stats: LoadStats::default(),
            started: Instant::now(),
            progress: Progress::new(what, total, opts.quiet),
        })
    }

    /// A device buffer of `n` elements (every element is written by the
    /// placements that follow).
    pub(crate) fn alloc<T: GpuElement>(&self, n: usize) -> Result<CudaSlice<T>> {
        Ok(unsafe { self.gpu.stream.alloc::<T>(n.max(1)) }?)
    }

    /// Tensor `name` of `ck`, of exactly `shape`, as a new device buffer.
    pub(crate) fn tensor<T: GpuElement>(
        &mut self,
        ck: &Checkpoint,
        name: &str,
        shape: &[usize],
        why: &str,
    ) -> Result<CudaSlice<T>> {
        let mut dst = self.alloc::<T>(shape.iter().product())?;
        let cols = shape.last().copied().unwrap_or(1);
        self.place(ck, name, shape, why, &mut dst, cols, 0)?;
        Ok(dst)
    }

    /// Writes tensor `name` (exactly `shape`; rows = all but the last
    /// dimension) into `dst`: its row `r` at element `offset + r * stride`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn place<T: GpuElement>(
        &mut self,
        ck: &Checkpoint,
        name: &str,
        shape: &[usize],
        why: &str,
        dst: &mut CudaSlice<T>,
        stride: usize,
        offset: usize,
    ) -> Result<()> {
        let host;
        let (source, dtype) = match ck.stored(name, shape, why)? {
            Some((file, t)) => (Source::File(file, t), stored_float(file, name, t)?),
            None => {
                host = ck.f32(name, shape, why)?;
                (Source::Host(f32_bytes(&host)), StoredFloat::F32)
            }
        };
        let cols = shape.last().copied().unwrap_or(1);
        let rows = shape.iter().product::<usize>() / cols.max(1);
        let layout = RowPlacement {
            rows,
            cols,
            stride,
            offset,
        };
        self.upload(&source, dtype, layout, dst)
            .map_err(|e| match e {
                EngineError::Device(g) => EngineError::WeightFile {
                    path: ck.file_of(name),
                    message: format!("tensor `{name}`: upload to the GPU: {g}"),
                },
                e => e,
            })?;
        self.stats.tensors += 1;
        Ok(())
    }

    /// Moves `source` (rows x cols elements of `dtype`) into `dst` at `p`,
    /// chunk by chunk through the staging buffers.
    fn upload<T: GpuElement>(
        &mut self,
        source: &Source<'_>,
        dtype: StoredFloat,
        p: RowPlacement,
        dst: &mut CudaSlice<T>,
    ) -> Result<()> {
        let es = dtype.bytes();
        let contiguous = p.rows <= 1 || p.stride == p.cols;
        // Chunks of whole rows, or of any run of elements when contiguous.
        let chunks: Vec<(usize, RowPlacement)> = if contiguous {
            let n = p.rows * p.cols;
            let per = STAGING_BYTES / es;
            (0..n)
                .step_by(per.max(1))
                .map(|e| {
                    let len = per.min(n - e);
                    let at = RowPlacement {
                        rows: 1,
                        cols: len,
                        stride: len,
                        offset: p.offset + e,
                    };
                    (e * es, at)
                })
                .collect()
        } else {
            let per = (STAGING_BYTES / (p.cols * es)).max(1);
            (0..p.rows)
                .step_by(per)
                .map(|r| {
                    let at = RowPlacement {
                        rows: per.min(p.rows - r),
                        offset: p.offset + r * p.stride,
                        ..p
                    };
                    (r * p.cols * es, at)
                })
                .collect()
        };
        for (byte0, at) in chunks {
            let n = at.rows * at.cols * es;
            if n > STAGING_BYTES {
                return Err(EngineError::Device(format!(
                    "a row of {} bytes is larger than the {STAGING_BYTES}-byte staging buffer",
                    at.cols * es
                )));
            }
            let i = self.next;
            self.next = (i + 1) % self.slots.len();
            let slot = &mut self.slots[i];
            // The copy out of this buffer two chunks ago must be done.
            slot.copied.synchronize()?;
            // SAFETY: the buffer holds STAGING_BYTES >= n bytes, and no copy
            // reads it any more (synchronized above).
            let buf = unsafe { std::slice::from_raw_parts_mut(slot.ptr, n) };
            read_parallel(source, byte0, buf, self.readers)?;
            let stream = &self.gpu.stream;
            if contiguous && dtype.is::<T>() {
                let (base, _sync) = dst.device_ptr(stream);
                let to = base + (at.offset * T::BYTES) as u64;
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(to, &*buf, stream.cu_stream())
                }?;
            } else {
                let (base, _sync) = self.device_staging.device_ptr(stream);
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(base, &*buf, stream.cu_stream())
                }?;
                place_rows(self.gpu, dst, &self.device_staging, dtype, at)?;
            }
            slot.copied.record(stream)?;
            self.stats.bytes += n as u64;
            self.progress.show(self.stats.bytes, self.started);
        }
        Ok(())
    }

    /// Waits for the last upload and returns what was moved.
    pub(crate) fn finish(mut self) -> Result<LoadStats> {
        self.gpu.stream.synchronize()?;
        self.stats.seconds = self.started.elapsed().as_secs_f64();
        self.progress.done(&self.stats);
        Ok(self.stats)
    }
}

/// Reads `buf.len()` bytes of `source` from `at`, split over up to `threads`.
fn read_parallel(source: &Source<'_>, at: usize, buf: &mut [u8], threads: usize) -> Result<()> {
    if buf.len() < PARALLEL_READ_MIN || threads < 2 {
        return source.read(at, buf);
    }
    let part = buf.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = buf
            .chunks_mut(part)
            .enumerate()
            .map(|(i, b)| s.spawn(move || source.read(at + i * part, b)))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("a reader thread panicked"))
    })
}

/// The float type `t` is stored in, or an error naming the tensor.
fn stored_float(file: &SafetensorsFile, name: &str, t: &StoredTensor) -> Result<StoredFloat> {
    match t.dtype {
        Dtype::F32 => Ok(StoredFloat::F32),
        Dtype::BF16 => Ok(StoredFloat::Bf16),
        Dtype::F16 => Ok(StoredFloat::F16),
        other => Err(EngineError::WeightFile {
            path: file.path().to_path_buf(),
            message: format!(
                "tensor `{name}` is stored as {other:?}: the GPU loader reads f32, bf16 and f16 weights"
            ),
        }),
    }
}

/// The bytes of host floats.
fn f32_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding; the view covers exactly the slice.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The progress line on stderr: updated in place on a terminal, one line
/// at the end otherwise; nothing when quiet.
struct Progress {
    what: String,
    total: u64,
    quiet: bool,
    live: bool,
    last: Option<Instant>,
}

impl Progress {
    fn new(what: &str, total: u64, quiet: bool) -> Progress {
        Progress {
            what: what.to_string(),
            total,
            quiet,
            live: !quiet && std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn show(&mut self, done: u64, started: Instant) {
        if !self.live || self.last.is_some_and(|t| t.elapsed().as_secs_f64() < 0.2) {
            return;
        }
        self.last = Some(Instant::now());
        let s = started.elapsed().as_secs_f64().max(1e-9);
        let _ = write!(
            std::io::stderr().lock(),
            "\rloading {}: {:.2} / {:.2} GB, {:.1} GB/s ",
            self.what,
            done as f64 / 1e9,
            self.total as f64 / 1e9,
            done as f64 / s / 1e9
        );
    }

    fn done(&self, st: &LoadStats) {
        if self.quiet {
            return;
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}loaded {}: {:.2} GB ({} tensors) in {:.2} s, {:.1} GB/s",
            if self.live { "\r" } else { "" },
            self.what,
            st.bytes as f64 / 1e9,
            st.tensors,
            st.seconds,
            st.gb_s()
        );
    }
}
