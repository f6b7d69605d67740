//! The attention launch: causal rows through the flash prefill kernels
//! (`flash_prefill.cu`), tree rows (decode, verification) through the
//! tree kernel in bf16 (`tree_attention.cu`: each sequence's cache read once
//! for all its rows) or, in f32 and other head sizes, the split-K kernel of
//! `attention.cu` (flash decoding over each row's key list, the last block
//! of each (row, head) merging the splits). See `attention_plan.rs`.

use super::attention_plan::{AttentionPlan, PlanRow};
use super::device::{Gpu, GpuElement, GpuError};
use super::flash_attention::{
    flash_prefill, tree_attention, uses_tree_kernel, TreeForm, TreeStages, TREE_SPLIT_TILES,
    TREE_SPLIT_TILES_MAX,
};
use super::launch::{launch, name, need, RawArg};
use crate::cpu::AttentionShape;
use crate::switch::Switch;
use cudarc::driver::{CudaSlice, LaunchConfig};

/// What each query row of an attention launch sees (device copies of the
/// engine's key lists): pool entries `base[r] + j` for `j < prefix[r]`, then
/// `base[r] + extra[k]` for `k` in `extra_off[r]..extra_off[r + 1]`.
pub struct KeyLists {
    /// Pool offset of each row's sequence.
    pub base: CudaSlice<i32>,
    /// Visible prefix length per row.
    pub prefix: CudaSlice<i32>,
    /// Offsets into `extra`, rows + 1 of them.
    pub extra_off: CudaSlice<i32>,
    /// Further visible entries (relative to `base`).
    pub extra: CudaSlice<i32>,
    /// The longest key list of any row these buffers are sized for (sizes
    /// the split-K attentions' splits).
    pub max_keys: usize,
    /// The longest key list of the current batch (at most `max_keys`):
    /// whether any row is long enough for the latent attention's
    /// tensor-core form (`mla_mma_from`).
    pub longest: usize,
    /// Prefill tiles `(first row, rows)` (see [`AttentionPlan`]).
    pub tiles: CudaSlice<i32>,
    /// Tree groups `(first row, rows, prefix)` (see [`AttentionPlan`]).
    pub groups: CudaSlice<i32>,
    /// The longest key list of a tree row these buffers are sized for.
    pub max_tree_keys: usize,
    /// Whether the current batch has causal rows (launches the prefill kernel).
    pub has_causal: bool,
    /// Whether the current batch has tree rows (launches the tree kernel).
    pub has_tree: bool,
}

impl KeyLists {
    /// Uploads host lists: per row `(base, prefix, extra)`.
    pub fn upload(gpu: &Gpu, rows: &[(usize, usize, Vec<usize>)]) -> Result<KeyLists, GpuError> {
        let mut off = vec![0i32];
        let mut extra = Vec::new();
        for (_, _, e) in rows {
            extra.extend(e.iter().map(|&v| v as i32));
            off.push(extra.len() as i32);
        }
        if extra.is_empty() {
            extra.push(0); // cudarc refuses empty allocations
        }
        let s = &gpu.stream;
        let longest = rows.iter().map(|r| r.1 + r.2.len()).max().unwrap_or(0);
        let plan = AttentionPlan::new(rows.iter().map(|r| PlanRow {
            base: r.0,
            prefix: r.1,
            extra: r.2.len(),
        }));
        Ok(KeyLists {
            base: s.clone_htod(&rows.iter().map(|r| r.0 as i32).collect::<Vec<_>>())?,
            prefix: s.clone_htod(&rows.iter().map(|r| r.1 as i32).collect::<Vec<_>>())?,
            extra_off: s.clone_htod(&off)?,
            extra: s.clone_htod(&extra)?,
            max_keys: longest,
            longest,
            tiles: s.clone_htod(&plan.tiles_padded(plan.n_tiles()))?,
            groups: s.clone_htod(&plan.groups_padded(plan.n_groups()))?,
            max_tree_keys: plan.max_tree_keys,
            has_causal: plan.causal_rows > 0,
            has_tree: plan.tree_rows > 0,
        })
    }
}

/// Keys handled by one block of the split-K attention.
pub const ATTENTION_CHUNK: usize = 64;

/// Blocks up to which the attention issues its key and value loads ahead
/// (about what an H200 holds at once with that kernel's registers).
const ATTENTION_AHEAD_MAX_BLOCKS: usize = 512;

/// Per-launch scratch of the split-K attention: partial outputs and their
/// (max, sum), `[rows, heads, splits]`, and a counter of finished splits per
/// (row, head) (zero between launches); and which kernel its launches run.
pub struct AttentionScratch {
    part_out: CudaSlice<f32>,
    part_ml: CudaSlice<f32>,
    counters: CudaSlice<i32>,
    splits: usize,
    kernel: Option<AttentionKernel>,
    split_tiles: usize,
    tree_form: TreeForm,
}

/// The two forms of the attention kernel. Both give the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionKernel {
    /// Issues the key and value loads before anything waits: faster while
    /// every block is resident at once.
    Ahead,
    /// Fewer registers.
    Lean,
}

/// 64-key tiles per split of the tree kernel (`SPECULA_TREE_SPLIT_TILES`:
/// 1, 2, 4, 8 or 16; unset: [`TREE_SPLIT_TILES`]); read once. Unlike most
/// switches it changes the bits (where a row's keys are cut), but a cut
/// stays a function of the key positions alone, so every setting is
/// batch-invariant.
fn tree_split_tiles() -> usize {
    static TILES: Switch<usize> = Switch::new(
        "SPECULA_TREE_SPLIT_TILES",
        &[("1", 1), ("2", 2), ("4", 4), ("8", 8), ("16", 16)],
        TREE_SPLIT_TILES,
        "4",
    );
    TILES.get()
}

impl AttentionScratch {
    /// Scratch for `keys` and `shape`.
    pub fn new(
        gpu: &Gpu,
        keys: &KeyLists,
        shape: AttentionShape,
    ) -> Result<AttentionScratch, GpuError> {
        // Only tree rows use the splits (causal rows run the flash kernels).
        let split_keys = if split_only() {
            keys.max_keys
        } else {
            keys.max_tree_keys
        };
        let rows = if split_keys == 0 { 1 } else { keys.base.len() };
        let splits = split_keys.div_ceil(ATTENTION_CHUNK).max(1);
        let slots = rows * shape.n_heads * splits;
        Ok(AttentionScratch {
            part_out: gpu.stream.alloc_zeros(slots * shape.head_dim)?,
            part_ml: gpu.stream.alloc_zeros(2 * slots)?,
            counters: gpu.stream.alloc_zeros(rows * shape.n_heads)?,
            splits,
            kernel: None,
            split_tiles: tree_split_tiles(),
            tree_form: TreeForm::from_env(),
        })
    }

    /// Makes [`attention`] launches on this scratch run `kernel` (by
    /// default they run [`AttentionKernel::Ahead`] up to
    /// `ATTENTION_AHEAD_MAX_BLOCKS` blocks, else [`AttentionKernel::Lean`]).
    pub fn force_kernel(&mut self, kernel: AttentionKernel) {
        self.kernel = Some(kernel);
    }

    /// Makes the tree kernel's launches on this scratch split each row's
    /// keys every `tiles` 64-key tiles (1..=16; the engine's is
    /// `TREE_SPLIT_TILES`): for measuring the choice. A row's bits depend on
    /// it, so every launch of one run must use the same.
    pub fn set_tree_split_tiles(&mut self, tiles: usize) -> Result<(), GpuError> {
        need((1..=TREE_SPLIT_TILES_MAX).contains(&tiles), || {
            format!("tree attention: {tiles} tiles per split (1..={TREE_SPLIT_TILES_MAX})")
        })?;
        self.split_tiles = tiles;
        Ok(())
    }

    /// Makes the tree kernel's launches on this scratch share sets of
    /// query vectors between warps and chain tiles between rows (`share`,
    /// the engine's default unless `SPECULA_TREE_SHARE=0`) or not: the same
    /// bits either way, which the kernel checks hold it to.
    pub fn set_tree_share(&mut self, share: bool) {
        self.tree_form.share = share;
    }

    /// Makes the tree kernel's launches on this scratch keep `stages` tiles
    /// in shared memory (the engine's default: `SPECULA_TREE_STAGES`, else
    /// [`TreeStages::Auto`]): the same bits either way, which the kernel
    /// checks hold it to.
    pub fn set_tree_stages(&mut self, stages: TreeStages) {
        self.tree_form.stages = stages;
    }
}

/// The key and value pools of one attention launch: `[entries, kv_heads, head_dim]`
/// starting `offset` elements into `k` and `v` (pools may hold every layer).
pub struct KvPools<'a, T> {
    /// Keys.
    pub k: &'a CudaSlice<T>,
    /// Values.
    pub v: &'a CudaSlice<T>,
    /// First element of the layer's pool.
    pub offset: usize,
}

/// Attention of `q: [rows, heads, head_dim]` over the pools: causal rows
/// through the flash prefill kernel, tree rows through the tree kernel
/// (bf16, head_dim 32/64/128) or the split-K kernel the scratch says (see
/// [`AttentionScratch::force_kernel`]).
#[allow(clippy::too_many_arguments)]
pub fn attention<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    q: &CudaSlice<T>,
    pools: KvPools<'_, T>,
    keys: &KeyLists,
    scratch: &mut AttentionScratch,
    shape: AttentionShape,
    scale: f32,
) -> Result<(), GpuError> {
    let rows = keys.base.len();
    need(
        q.len() == rows * shape.n_heads * shape.head_dim && out.len() >= q.len(),
        || "attention: q/out sizes disagree".into(),
    )?;
    need(
        pools.k.len() == pools.v.len() && pools.offset < pools.k.len(),
        || "attention: pool offset outside the pools".into(),
    )?;
    let split_only = split_only();
    if keys.has_causal && !split_only {
        flash_prefill(gpu, out, q, &pools, keys, shape, scale)?;
    }
    if !keys.has_tree && !split_only {
        return Ok(());
    }
    let split_keys = if split_only {
        keys.max_keys
    } else {
        keys.max_tree_keys
    };
    need(
        scratch.splits * ATTENTION_CHUNK >= split_keys
            && scratch.part_ml.len() >= 2 * rows * shape.n_heads * scratch.splits
            && scratch.counters.len() >= rows * shape.n_heads,
        || "attention: scratch made for other key lists".into(),
    )?;
    if uses_tree_kernel::<T>(shape)
        && scratch.kernel.is_none()
        && attention_mode() == AttentionMode::Flash
    {
        let parts = (&scratch.part_out, &scratch.part_ml, &scratch.counters);
        return tree_attention(
            gpu,
            out,
            q,
            &pools,
            keys,
            parts,
            scratch.splits,
            scratch.split_tiles,
            scratch.tree_form,
            shape,
            scale,
        );
    }
    split_attention(gpu, out, q, pools, keys, scratch, shape, scale, split_only)
}

/// Which kernels run the attention, from `SPECULA_ATTENTION`. Measured on
/// the H200 (results/h200/README.md, issue 18; Llama-3.1-8B shape): the
/// flash prefill took a 8192-token prompt in 276 ms against 5976 ms through
/// the split-K kernel (whose scratch grows with rows x keys: batch 8 x 8192
/// ran out of memory); the tree kernel, in splits of 4 tiles with its merge
/// in rounds, read a decode row's 8192 keys at 1490 GB/s against 413 GB/s
/// split-K and a 6-token chain's at 724 against 110 GB/s (22.5 against 81.3
/// and 46.4 against 304.7 us a layer), while split-K was faster only for
/// one short row (19.2 against 20.5 us at 1024 keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionMode {
    /// `split`: every row, causal ones too, through the split-K kernel.
    Split,
    /// `flash-prefill`: causal rows through the flash prefill kernel, tree
    /// (decode and verify) rows through the split-K kernel.
    FlashPrefill,
    /// Unset (the default) or `flash`: causal rows flash, tree rows through
    /// the bf16 tree kernel where it exists for the shape (else split-K).
    Flash,
}

/// The [`AttentionMode`] of this process (read once).
pub fn attention_mode() -> AttentionMode {
    static MODE: Switch<AttentionMode> = Switch::new(
        "SPECULA_ATTENTION",
        &[
            ("split", AttentionMode::Split),
            ("flash-prefill", AttentionMode::FlashPrefill),
            ("flash", AttentionMode::Flash),
        ],
        AttentionMode::Flash,
        "flash",
    );
    MODE.get()
}

/// Whether every row, causal ones too, goes through the split-K kernel.
pub fn split_only() -> bool {
    attention_mode() == AttentionMode::Split
}

/// The split-K kernel of `attention.cu` over the tree rows.
#[allow(clippy::too_many_arguments)]
fn split_attention<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    q: &CudaSlice<T>,
    pools: KvPools<'_, T>,
    keys: &KeyLists,
    scratch: &mut AttentionScratch,
    shape: AttentionShape,
    scale: f32,
    with_causal: bool,
) -> Result<(), GpuError> {
    let rows = keys.base.len();
    let AttentionShape {
        n_heads,
        n_kv_heads,
        head_dim,
    } = shape;
    // Query, scores, then the value pass's per-key-group partial sums (128 threads x 8).
    let smem = ((head_dim + ATTENTION_CHUNK + 128 * 8) * 4) as u32;
    let (h, kvh, d, chunk) = (
        n_heads as i32,
        n_kv_heads as i32,
        head_dim as i32,
        ATTENTION_CHUNK as i32,
    );
    let blocks = rows * n_heads * scratch.splits;
    let kernel = match scratch.kernel {
        None if blocks <= ATTENTION_AHEAD_MAX_BLOCKS => "attention_ahead",
        None => "attention_lean",
        Some(AttentionKernel::Ahead) => "attention_ahead",
        Some(AttentionKernel::Lean) => "attention_lean",
    };
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, &scratch.part_out),
        RawArg::slice(gpu, &scratch.part_ml),
        RawArg::slice(gpu, &scratch.counters),
        RawArg::slice(gpu, q),
        RawArg::slice(gpu, pools.k),
        RawArg::slice(gpu, pools.v),
        RawArg::slice(gpu, &keys.base),
        RawArg::slice(gpu, &keys.prefix),
        RawArg::slice(gpu, &keys.extra_off),
        RawArg::slice(gpu, &keys.extra),
        RawArg::I32(h),
        RawArg::I32(kvh),
        RawArg::I32(d),
        RawArg::F32(scale),
        RawArg::I32(chunk),
        RawArg::I64(pools.offset as i64),
        RawArg::I32(i32::from(!with_causal)),
    ];
    let grid = LaunchConfig {
        grid_dim: (rows as u32, n_heads as u32, scratch.splits as u32),
        block_dim: (128, 1, 1),
        shared_mem_bytes: smem,
    };
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, &name::<T>(kernel), grid, &args) }
}
