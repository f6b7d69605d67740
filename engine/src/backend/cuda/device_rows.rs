//! Rows of states kept on the device between forwards: the target's
//! captured aux states, appended by each capturing forward and gathered by
//! id into the draft's input, so that they never travel to the host and
//! back (at prompt 8192 of an 8B target, 8192 x 3 x 4096 values each way).

use crate::error::{EngineError, Result};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{embedding_gather, Gpu, GpuElement};
use std::sync::{Arc, Mutex};

/// A growing buffer of `[rows, width]` states on the device. Appends after
/// a gather start it afresh: ids are valid from the first append after a
/// gather until the next gather (one decode step's states, or a prefill's).
pub(crate) struct DeviceRows<T> {
    buf: Option<CudaSlice<T>>,
    width: usize,
    rows: usize,
    /// Rows have been gathered since the last append.
    gathered: bool,
    /// Whether forwards keep their states here (else they go to the host).
    enabled: bool,
}

/// A store shared by a target (which appends) and its drafts (which gather).
pub(crate) type SharedRows<T> = Arc<Mutex<DeviceRows<T>>>;

impl<T: GpuElement> DeviceRows<T> {
    /// An empty, disabled store.
    pub(crate) fn shared() -> SharedRows<T> {
        Arc::new(Mutex::new(DeviceRows {
            buf: None,
            width: 0,
            rows: 0,
            gathered: false,
            enabled: false,
        }))
    }

    /// Whether capturing forwards keep their states here.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Turns keeping on or off; either way the store starts empty.
    pub(crate) fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
        self.rows = 0;
        self.gathered = false;
        if !on {
            self.buf = None;
        }
    }

    /// Appends the first `rows` rows of `src` (`width` wide) and returns the
    /// id of the first (queued on the stream; no host synchronisation).
    pub(crate) fn append(
        &mut self,
        gpu: &Gpu,
        src: &CudaSlice<T>,
        rows: usize,
        width: usize,
    ) -> Result<u32> {
        if self.gathered || self.width != width {
            self.rows = 0;
            self.gathered = false;
            self.width = width;
        }
        let (start, end) = (self.rows * width, (self.rows + rows) * width);
        let have = self.buf.as_ref().map_or(0, |b| b.len());
        if end > have {
            // Room for twice what is held, so that a prefill's chunks grow it rarely.
            let mut bigger = gpu.stream.alloc_zeros::<T>(end.max(2 * have))?;
            if let (Some(old), true) = (&self.buf, start > 0) {
                gpu.stream
                    .memcpy_dtod(&old.slice(0..start), &mut bigger.slice_mut(0..start))?;
            }
            self.buf = Some(bigger);
        }
        let buf = self.buf.as_mut().expect("allocated above");
        let n = rows * width;
        gpu.stream
            .memcpy_dtod(&src.slice(0..n), &mut buf.slice_mut(start..end))?;
        let first = u32::try_from(self.rows)
            .map_err(|_| EngineError::setting("device aux states", "more than 2^32 rows"))?;
        self.rows += rows;
        Ok(first)
    }

    /// Copies rows `ids` into the first `ids.len()` rows of `out` (rows as
    /// wide as the store's), queued on the stream.
    pub(crate) fn gather(&mut self, gpu: &Gpu, out: &mut CudaSlice<T>, ids: &[u32]) -> Result<()> {
        if let Some(&bad) = ids.iter().find(|&&i| i as usize >= self.rows) {
            return Err(EngineError::setting(
                "device aux states",
                format!(
                    "row {bad} asked for, {} held (states of an earlier step?)",
                    self.rows
                ),
            ));
        }
        if ids.is_empty() {
            return Ok(());
        }
        let (Some(buf), false) = (&self.buf, out.len() < ids.len() * self.width) else {
            return Err(EngineError::setting(
                "device aux states",
                format!("{} rows of {} do not fit", ids.len(), self.width),
            ));
        };
        let dev_ids = gpu.stream.clone_htod(ids)?;
        embedding_gather(gpu, out, buf, &dev_ids, self.width)?;
        self.gathered = true;
        Ok(())
    }

    /// Width of the rows held.
    pub(crate) fn width(&self) -> usize {
        self.width
    }
}
