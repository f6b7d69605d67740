//! What one GPU forward shares across layers: the batch's tokens,
//! positions, KV entries, key lists and logit rows, as host arrays
//! ([`HostBatch`]) and on the device ([`BatchOnDevice`]).

use super::kv_pool::{GpuCache, KvPool};
use crate::error::Result;
use crate::model::ForwardBatch;
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{
    AttentionPlan, Gpu, GpuElement, KeyLists, PlanRow, StagedWords, WordField,
};
use specula_kernels::switch::Switch;

/// A forward batch as plain arrays, ready to copy to the device.
pub(crate) struct HostBatch {
    pub(crate) rows: usize,
    tokens: Vec<u32>,
    positions: Vec<i32>,
    entries: Vec<i32>,
    base: Vec<i32>,
    prefix: Vec<i32>,
    extra_off: Vec<i32>,
    pub(crate) extra: Vec<i32>,
    logit_rows: Vec<u32>,
    pub(crate) n_logits: usize,
    pub(crate) max_keys: usize,
    /// Which attention kernel runs each row (prefill tiles, tree groups).
    pub(crate) plan: AttentionPlan,
}

impl HostBatch {
    /// Lays out `batch`, whose row `r` appends to `caches[batch.rows[r].cache]`,
    /// checking that every cache has room, and advances the caches' lengths.
    pub(crate) fn new<T: GpuElement>(
        batch: &ForwardBatch,
        caches: &mut [GpuCache],
        pool: &KvPool<T>,
    ) -> Result<HostBatch> {
        let mut adding = vec![0usize; caches.len()];
        for r in &batch.rows {
            adding[r.cache] += 1;
        }
        for (c, &a) in caches.iter().zip(&adding) {
            pool.check_room(c, a)?;
        }
        let n = batch.len();
        let mut h = HostBatch {
            rows: n,
            tokens: Vec::with_capacity(n),
            positions: Vec::with_capacity(n),
            entries: Vec::with_capacity(n),
            base: Vec::with_capacity(n),
            prefix: Vec::with_capacity(n),
            extra_off: vec![0],
            extra: Vec::new(),
            logit_rows: batch.logit_rows.iter().map(|&r| r as u32).collect(),
            n_logits: batch.logit_rows.len(),
            max_keys: 0,
            plan: AttentionPlan::default(),
        };
        for r in &batch.rows {
            let c = &mut caches[r.cache];
            let base = pool.base(c.slot);
            h.tokens.push(r.token);
            h.positions.push(r.position as i32);
            h.entries.push((base + c.len) as i32);
            c.len += 1;
            h.base.push(base as i32);
            h.prefix.push(r.visible.prefix as i32);
            h.extra.extend(r.visible.extra.iter().map(|&e| e as i32));
            h.extra_off.push(h.extra.len() as i32);
            h.max_keys = h.max_keys.max(r.visible.prefix + r.visible.extra.len());
        }
        h.plan = AttentionPlan::new(batch.rows.iter().zip(&h.base).map(|(r, &base)| PlanRow {
            base: base as usize,
            prefix: r.visible.prefix,
            extra: r.visible.extra.len(),
        }));
        Ok(h)
    }

    /// Whether the batch has (causal rows, tree rows): part of a graph's
    /// shape, since each kind launches its own attention kernel.
    pub(crate) fn attention_kinds(&self) -> (bool, bool) {
        (self.plan.causal_rows > 0, self.plan.tree_rows > 0)
    }
}

/// Device buffers of a batch's inputs: sized once, rewritten every forward
/// (so a captured CUDA graph reads each step's inputs from the same places).
pub(crate) struct BatchOnDevice {
    pub(crate) rows: usize,
    pub(crate) tokens: CudaSlice<u32>,
    pub(crate) positions: CudaSlice<i32>,
    /// Pool row each row's key and value go to.
    pub(crate) entries: CudaSlice<i32>,
    pub(crate) keys: KeyLists,
    /// Rows whose logits are wanted.
    pub(crate) logit_rows: CudaSlice<u32>,
    pub(crate) n_logits: usize,
    /// The fields above staged as one word array (none with
    /// `SPECULA_INPUTS=apart`: a copy per field).
    staged: Option<StagedWords>,
}

impl BatchOnDevice {
    /// Buffers for `rows` rows, `extra_cap` tree entries in all, `n_logits`
    /// logit rows, and key lists up to `max_keys` long (sizes the attention
    /// splits; any row may be a tree row).
    pub(crate) fn new(
        gpu: &Gpu,
        rows: usize,
        extra_cap: usize,
        n_logits: usize,
        max_keys: usize,
    ) -> Result<BatchOnDevice> {
        Self::with_plan_caps(
            gpu,
            rows,
            extra_cap,
            n_logits,
            max_keys,
            max_keys,
            (rows, rows),
        )
    }

    /// As [`BatchOnDevice::new`], with tree key lists up to `max_tree_keys`
    /// and room for `caps` (prefill tiles, tree groups).
    fn with_plan_caps(
        gpu: &Gpu,
        rows: usize,
        extra_cap: usize,
        n_logits: usize,
        max_keys: usize,
        max_tree_keys: usize,
        caps: (usize, usize),
    ) -> Result<BatchOnDevice> {
        let s = &gpu.stream;
        let mut b = BatchOnDevice {
            rows,
            tokens: s.alloc_zeros(rows)?,
            positions: s.alloc_zeros(rows)?,
            entries: s.alloc_zeros(rows)?,
            keys: KeyLists {
                base: s.alloc_zeros(rows)?,
                prefix: s.alloc_zeros(rows)?,
                extra_off: s.alloc_zeros(rows + 1)?,
                extra: s.alloc_zeros(extra_cap.max(1))?,
                max_keys,
                longest: 0,
                tiles: s.alloc_zeros(2 * caps.0.max(1))?,
                groups: s.alloc_zeros(3 * caps.1.max(1))?,
                max_tree_keys,
                has_causal: false,
                has_tree: false,
            },
            logit_rows: s.alloc_zeros(n_logits.max(1))?,
            n_logits,
            staged: None,
        };
        if inputs_staged() {
            let fields = Input::ALL
                .iter()
                .map(|&i| b.field(gpu, i))
                .collect::<Result<Vec<_>>>()?;
            // SAFETY: the staging lives in `b` beside the buffers it fills,
            // which are never reallocated (moving `b` keeps their addresses).
            b.staged = Some(unsafe { StagedWords::new(gpu, &fields)? });
        }
        Ok(b)
    }

    /// Buffers exactly the size of `h`.
    pub(crate) fn exact(gpu: &Gpu, h: &HostBatch) -> Result<BatchOnDevice> {
        let caps = (h.plan.n_tiles(), h.plan.n_groups());
        let (max, tree) = (h.max_keys, h.plan.max_tree_keys);
        Self::with_plan_caps(gpu, h.rows, h.extra.len(), h.n_logits, max, tree, caps)
    }

    /// Whether `h` fits these buffers.
    pub(crate) fn fits(&self, h: &HostBatch) -> bool {
        h.rows == self.rows
            && h.n_logits == self.n_logits
            && h.extra.len() <= self.keys.extra.len()
            && h.max_keys <= self.keys.max_keys
            && h.plan.max_tree_keys <= self.keys.max_tree_keys
            && 2 * h.plan.n_tiles() <= self.keys.tiles.len()
            && 3 * h.plan.n_groups() <= self.keys.groups.len()
    }

    /// Copies `h` in (stream-ordered): staged, one transfer, which
    /// [`BatchOnDevice::unpack`] spreads over the fields; apart, a copy per
    /// field.
    pub(crate) fn write(&mut self, gpu: &Gpu, h: &HostBatch) -> Result<()> {
        debug_assert!(self.fits(h));
        let k = &mut self.keys;
        (k.has_causal, k.has_tree) = h.attention_kinds();
        k.longest = h.max_keys;
        if let Some(st) = &mut self.staged {
            use Input::*;
            st.fill(Tokens as usize, h.tokens.iter().copied())?;
            st.fill(Positions as usize, h.positions.iter().copied())?;
            st.fill(Entries as usize, h.entries.iter().copied())?;
            st.fill(Base as usize, h.base.iter().copied())?;
            st.fill(Prefix as usize, h.prefix.iter().copied())?;
            st.fill(ExtraOff as usize, h.extra_off.iter().copied())?;
            st.fill(Extra as usize, h.extra.iter().copied())?;
            st.fill(LogitRows as usize, h.logit_rows.iter().copied())?;
            // Unused tiles and groups are zeros: empty, as the padded lists.
            st.fill(Tiles as usize, h.plan.tiles.iter().copied())?;
            st.fill(Groups as usize, h.plan.groups.iter().copied())?;
            st.upload(gpu)?;
            return Ok(());
        }
        let s = &gpu.stream;
        s.memcpy_htod(&h.tokens, &mut self.tokens)?;
        s.memcpy_htod(&h.positions, &mut self.positions)?;
        s.memcpy_htod(&h.entries, &mut self.entries)?;
        s.memcpy_htod(&h.base, &mut k.base)?;
        s.memcpy_htod(&h.prefix, &mut k.prefix)?;
        s.memcpy_htod(&h.extra_off, &mut k.extra_off)?;
        if !h.extra.is_empty() {
            s.memcpy_htod(&h.extra, &mut k.extra.slice_mut(0..h.extra.len()))?;
        }
        if !h.logit_rows.is_empty() {
            s.memcpy_htod(&h.logit_rows, &mut self.logit_rows)?;
        }
        s.memcpy_htod(&h.plan.tiles_padded(k.tiles.len() / 2), &mut k.tiles)?;
        s.memcpy_htod(&h.plan.groups_padded(k.groups.len() / 3), &mut k.groups)?;
        Ok(())
    }

    /// Where input `i` lives on the device.
    fn field(&self, gpu: &Gpu, i: Input) -> Result<WordField> {
        let k = &self.keys;
        Ok(match i {
            Input::Tokens => WordField::of(gpu, &self.tokens),
            Input::Positions => WordField::of(gpu, &self.positions),
            Input::Entries => WordField::of(gpu, &self.entries),
            Input::Base => WordField::of(gpu, &k.base),
            Input::Prefix => WordField::of(gpu, &k.prefix),
            Input::ExtraOff => WordField::of(gpu, &k.extra_off),
            Input::Extra => WordField::of(gpu, &k.extra),
            Input::LogitRows => WordField::of(gpu, &self.logit_rows),
            Input::Tiles => WordField::of(gpu, &k.tiles),
            Input::Groups => WordField::of(gpu, &k.groups),
        }?)
    }

    /// Spreads the staged inputs over their fields: a forward's first
    /// launch (inside its graph), after [`BatchOnDevice::write`]; nothing
    /// when the inputs were copied apart.
    pub(crate) fn unpack(&self, gpu: &Gpu) -> Result<()> {
        match &self.staged {
            Some(st) => Ok(st.scatter(gpu)?),
            None => Ok(()),
        }
    }
}

/// A batch's inputs, as staged: `i as usize` is input `i`'s field in the
/// [`StagedWords`] (the order of [`Input::ALL`]).
#[derive(Debug, Clone, Copy)]
enum Input {
    Tokens,
    Positions,
    Entries,
    Base,
    Prefix,
    ExtraOff,
    Extra,
    LogitRows,
    Tiles,
    Groups,
}

impl Input {
    /// Every input, in field order.
    const ALL: [Input; 10] = [
        Input::Tokens,
        Input::Positions,
        Input::Entries,
        Input::Base,
        Input::Prefix,
        Input::ExtraOff,
        Input::Extra,
        Input::LogitRows,
        Input::Tiles,
        Input::Groups,
    ];
}

/// Whether a forward's inputs go to the device staged as one transfer and
/// one scatter kernel (`SPECULA_INPUTS=staged`, the default) or as a copy
/// per input (`apart`); read once.
fn inputs_staged() -> bool {
    static STAGED: Switch<bool> = Switch::new(
        "SPECULA_INPUTS",
        &[("staged", true), ("apart", false)],
        true,
        "staged",
    );
    STAGED.get()
}

#[cfg(test)]
mod tests {
    use super::Input;

    #[test]
    fn every_input_is_listed_once_at_its_own_field() {
        for (field, &i) in Input::ALL.iter().enumerate() {
            assert_eq!(i as usize, field, "{i:?}");
        }
    }
}
