//! The device KV cache: one pool per model holding every layer, split into
//! fixed-capacity sequence slots. A sequence's cache is a slot plus its
//! lengths; committing compacts the accepted entries on the device.

use super::super::SequenceCache;
use crate::error::{EngineError, Result};
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{kv_commit, Gpu, GpuElement};

/// A sequence's cache on the device: its slot and lengths.
#[derive(Debug)]
pub struct GpuCache {
    pub(crate) slot: usize,
    pub(crate) len: usize,
    pub(crate) committed: usize,
}

impl SequenceCache for GpuCache {
    fn len(&self) -> usize {
        self.len
    }
    fn committed(&self) -> usize {
        self.committed
    }
}

/// Keys and values of every layer and slot: `[layers][slots * capacity][width]`
/// (a latent-attention pool holds its compressed entries in `k` alone; `v`
/// is then one unused element).
pub(crate) struct KvPool<T> {
    pub(crate) k: CudaSlice<T>,
    pub(crate) v: CudaSlice<T>,
    keys_only: bool,
    layers: usize,
    slots: usize,
    pub(crate) capacity: usize,
    width: usize,
    free: Vec<usize>,
}

impl<T: GpuElement> KvPool<T> {
    /// A pool of `slots` sequences of up to `capacity` entries of `width` per
    /// layer, keys and values, or with `keys_only` one row per entry (latent attention).
    pub(crate) fn new(
        gpu: &Gpu,
        layers: usize,
        slots: usize,
        capacity: usize,
        width: usize,
        keys_only: bool,
    ) -> Result<KvPool<T>> {
        let n = layers * slots * capacity * width;
        Ok(KvPool {
            k: gpu.stream.alloc_zeros(n)?,
            v: gpu.stream.alloc_zeros(if keys_only { 1 } else { n })?,
            keys_only,
            layers,
            slots,
            capacity,
            width,
            free: (0..slots).rev().collect(),
        })
    }

    /// First element of `layer`'s pool.
    pub(crate) fn layer_offset(&self, layer: usize) -> usize {
        layer * self.slots * self.capacity * self.width
    }

    /// First pool row of `slot`.
    pub(crate) fn base(&self, slot: usize) -> usize {
        slot * self.capacity
    }

    /// Takes a free slot.
    pub(crate) fn take(&mut self) -> Result<GpuCache> {
        let slot = self.free.pop().ok_or_else(|| {
            EngineError::setting(
                "gpu kv slots",
                format!(
                    "all {} sequence slots of the GPU KV pool are in use (raise the slot count)",
                    self.slots
                ),
            )
        })?;
        Ok(GpuCache {
            slot,
            len: 0,
            committed: 0,
        })
    }

    /// Returns a slot.
    pub(crate) fn give_back(&mut self, cache: GpuCache) {
        debug_assert!(!self.free.contains(&cache.slot));
        self.free.push(cache.slot);
    }

    /// Refuses a forward that would overflow a slot.
    pub(crate) fn check_room(&self, cache: &GpuCache, adding: usize) -> Result<()> {
        if cache.len + adding > self.capacity {
            return Err(EngineError::setting(
                "gpu kv capacity",
                format!(
                    "a sequence needs {} KV entries, the GPU pool holds {} per sequence (raise the context capacity)",
                    cache.len + adding,
                    self.capacity
                ),
            ));
        }
        Ok(())
    }

    /// Keeps `keeps[i]` (ascending scratch entries) of `caches[i]` as its
    /// next committed entries, dropping the rest: one launch for all
    /// sequences, none when every kept entry is already in place.
    pub(crate) fn commit(
        &mut self,
        gpu: &Gpu,
        caches: &mut [&mut GpuCache],
        keeps: &[Vec<usize>],
    ) -> Result<()> {
        let (mut src, mut dst, mut off) = (Vec::new(), Vec::new(), vec![0i32]);
        for (c, keep) in caches.iter().zip(keeps) {
            if keep.iter().any(|&e| e < c.committed || e >= c.len)
                || keep.windows(2).any(|w| w[0] >= w[1])
            {
                return Err(EngineError::setting(
                    "kv commit",
                    format!("entries {keep:?} are not ascending scratch entries of a cache holding {} ({} committed)", c.len, c.committed),
                ));
            }
            let base = self.base(c.slot);
            for (i, &e) in keep.iter().enumerate() {
                if e != c.committed + i {
                    src.push((base + e) as i32);
                    dst.push((base + c.committed + i) as i32);
                }
            }
            off.push(src.len() as i32);
        }
        if !src.is_empty() {
            let s = &gpu.stream;
            let layer_stride = self.layer_offset(1);
            kv_commit(
                gpu,
                &mut self.k,
                (!self.keys_only).then_some(&mut self.v),
                &s.clone_htod(&src)?,
                &s.clone_htod(&dst)?,
                &s.clone_htod(&off)?,
                self.layers,
                self.width,
                layer_stride,
            )?;
        }
        for (c, keep) in caches.iter_mut().zip(keeps) {
            c.committed += keep.len();
            c.len = c.committed;
        }
        Ok(())
    }
}
