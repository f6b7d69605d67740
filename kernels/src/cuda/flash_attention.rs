//! Launches of the flash prefill kernels (`flash_prefill.cu`: causal rows,
//! O(rows) memory) and of the bf16 tree kernel (`tree_attention.cu`:
//! decode and verification rows, each sequence's cache read once for all of
//! its rows, split over the context in fixed splits of [`TREE_SPLIT_TILES`]
//! tiles of 64 keys).

use super::attention::{KeyLists, KvPools};
use super::attention_plan::PREFILL_TILE_ROWS;
use super::device::{Gpu, GpuElement, GpuError};
use super::launch::{launch, launch_ordered, name, need, InOrder, RawArg};
use crate::cpu::AttentionShape;
use crate::switch::Switch;
use cudarc::driver::{CudaSlice, LaunchConfig};

/// Threads of the tensor-core attention kernels (`AT_THREADS`).
const MMA_THREADS: u32 = 128;

/// 64-key tiles per split of the tree kernel, by default (measured on the
/// H200: see [`super::attention_timing`]); at most `TREE_SPLIT_TILES_MAX` (16).
pub const TREE_SPLIT_TILES: usize = 4;

/// The most 64-key tiles per split the tree kernel takes.
pub const TREE_SPLIT_TILES_MAX: usize = 16;

/// Whether bf16 tensor-core kernels exist for `shape`.
fn mma_head_dim<T: GpuElement>(shape: AttentionShape) -> bool {
    T::SUFFIX == "bf16" && matches!(shape.head_dim, 32 | 64 | 128)
}

/// Whether tree rows of `shape` in `T` run the tree kernel.
pub fn uses_tree_kernel<T: GpuElement>(shape: AttentionShape) -> bool {
    mma_head_dim::<T>(shape) && shape.n_heads.is_multiple_of(shape.n_kv_heads)
}

/// Causal rows of the batch (the others are skipped): on tensor cores by
/// tiles of the plan in bf16, else one warp per (row, head).
pub(crate) fn flash_prefill<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    q: &CudaSlice<T>,
    pools: &KvPools<'_, T>,
    keys: &KeyLists,
    shape: AttentionShape,
    scale: f32,
) -> Result<(), GpuError> {
    let rows = keys.base.len();
    let AttentionShape {
        n_heads,
        n_kv_heads,
        head_dim,
    } = shape;
    let common = |args: &mut Vec<RawArg>| {
        args.extend([RawArg::I32(n_heads as i32), RawArg::I32(n_kv_heads as i32)]);
    };
    if mma_head_dim::<T>(shape) {
        let tiles = keys.tiles.len() / 2;
        let mut args = vec![
            RawArg::slice(gpu, out),
            RawArg::slice(gpu, q),
            RawArg::slice(gpu, pools.k),
            RawArg::slice(gpu, pools.v),
            RawArg::slice(gpu, &keys.base),
            RawArg::slice(gpu, &keys.prefix),
            RawArg::slice(gpu, &keys.tiles),
        ];
        common(&mut args);
        args.extend([RawArg::F32(scale), RawArg::I64(pools.offset as i64)]);
        let cfg = LaunchConfig {
            grid_dim: (tiles as u32, n_heads as u32, 1),
            block_dim: (MMA_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let kernel = format!("flash_prefill_mma_{head_dim}_bf16");
        const { assert!(PREFILL_TILE_ROWS == 64) };
        // SAFETY: the kernel's parameters in order; sizes checked by the caller.
        return unsafe { launch(gpu, &kernel, cfg, &args) };
    }
    need(head_dim <= 256, || {
        format!("attention: head_dim {head_dim} above 256 has no prefill kernel")
    })?;
    let mut args = vec![
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, q),
        RawArg::slice(gpu, pools.k),
        RawArg::slice(gpu, pools.v),
        RawArg::slice(gpu, &keys.base),
        RawArg::slice(gpu, &keys.prefix),
        RawArg::slice(gpu, &keys.extra_off),
        RawArg::I32(rows as i32),
    ];
    common(&mut args);
    args.extend([
        RawArg::I32(head_dim as i32),
        RawArg::F32(scale),
        RawArg::I64(pools.offset as i64),
    ]);
    let cfg = LaunchConfig {
        grid_dim: (rows.div_ceil(4) as u32, n_heads as u32, 1),
        block_dim: (MMA_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the kernel's parameters in order; sizes checked by the caller.
    unsafe { launch(gpu, &name::<T>("flash_rows"), cfg, &args) }
}

/// The tree kernel's `flags` bits (`tree_tile.cu`): start before the wait
/// ([`tree_early`]), share work in small groups ([`tree_share`]), four
/// stages of tiles in flight ([`TreeStages`]).
const TREE_EARLY: i32 = 1;
const TREE_SHARE: i32 = 2;
const TREE_DEEP: i32 = 4;

/// How many 64-key tiles the tree kernel keeps in shared memory (the one
/// it takes and those in flight behind it). Every choice gives the same
/// bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeStages {
    /// Four when the launch has no more blocks than the device has SMs (a
    /// decode at batch 1-16 over a short context: each block alone on its
    /// SM, so its split's tiles load at once), else two (four stages of a
    /// 128-wide head take 139 KB, one block an SM). The default.
    Auto,
    /// Always two (`SPECULA_TREE_STAGES=2`).
    Two,
    /// Always four (`SPECULA_TREE_STAGES=4`).
    Four,
}

impl TreeStages {
    /// The engine's choice, from `SPECULA_TREE_STAGES` (`2`, `4`; unset:
    /// [`TreeStages::Auto`]; anything else: a warning and the default),
    /// read once.
    pub fn from_env() -> TreeStages {
        static STAGES: Switch<TreeStages> = Switch::new(
            "SPECULA_TREE_STAGES",
            &[("2", TreeStages::Two), ("4", TreeStages::Four)],
            TreeStages::Auto,
            "4 while a launch has no more blocks than SMs, else 2",
        );
        STAGES.get()
    }

    /// Stages for a launch of `blocks` blocks on a device of `sms` SMs.
    fn for_launch(self, sms: usize, blocks: usize) -> usize {
        match self {
            TreeStages::Two => 2,
            TreeStages::Four => 4,
            TreeStages::Auto if blocks <= sms => 4,
            TreeStages::Auto => 2,
        }
    }
}

/// How the tree kernel runs (every form gives the same bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeForm {
    /// Small groups share work ([`tree_share`]).
    pub share: bool,
    /// Tiles in shared memory.
    pub stages: TreeStages,
}

impl TreeForm {
    /// The engine's form, from the environment.
    pub fn from_env() -> TreeForm {
        TreeForm {
            share: tree_share(),
            stages: TreeStages::from_env(),
        }
    }
}

/// Whether the tree kernel plans its split and starts its first prefix
/// tile before waiting on the kernel before it (`tree_attention.cu`); the
/// default, `SPECULA_TREE_EARLY=0` waits first (read once). Both give the
/// same bits.
pub fn tree_early() -> bool {
    static EARLY: Switch<bool> = Switch::on_off("SPECULA_TREE_EARLY", true);
    EARLY.get()
}

/// Whether the tree kernel gives a set of 16 query vectors two or four
/// warps when its group has at most 32 (a decode row, a short chain:
/// `tree_tile.cu`) and loads a tile past the group's common prefix once
/// when every row's entries in it are the longest row's (a chain); the
/// default, `SPECULA_TREE_SHARE=0` gives each set one warp and each row its
/// own tiles past the prefix (read once). Both give the same bits.
pub fn tree_share() -> bool {
    static SHARE: Switch<bool> = Switch::on_off("SPECULA_TREE_SHARE", true);
    SHARE.get()
}

/// Tree rows of the batch through the tree kernel, with the split scratch
/// `parts` (partial outputs, their (max, sum), counters at zero) of `splits`
/// 64-key tiles per (row, head), in splits of `split_tiles` tiles (checked
/// by [`super::AttentionScratch::set_tree_split_tiles`]), in `form`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tree_attention<T: GpuElement>(
    gpu: &Gpu,
    out: &mut CudaSlice<T>,
    q: &CudaSlice<T>,
    pools: &KvPools<'_, T>,
    keys: &KeyLists,
    parts: (&CudaSlice<f32>, &CudaSlice<f32>, &CudaSlice<i32>),
    splits: usize,
    split_tiles: usize,
    form: TreeForm,
    shape: AttentionShape,
    scale: f32,
) -> Result<(), GpuError> {
    let groups = keys.groups.len() / 3;
    let grid = (
        groups as u32,
        shape.n_kv_heads as u32,
        splits.div_ceil(split_tiles) as u32,
    );
    let stages = form
        .stages
        .for_launch(gpu.sms, (grid.0 * grid.1 * grid.2) as usize);
    let flags = if tree_early() { TREE_EARLY } else { 0 }
        | if form.share { TREE_SHARE } else { 0 }
        | if stages == 4 { TREE_DEEP } else { 0 };
    let args = [
        RawArg::slice(gpu, out),
        RawArg::slice(gpu, parts.0),
        RawArg::slice(gpu, parts.1),
        RawArg::slice(gpu, parts.2),
        RawArg::slice(gpu, q),
        RawArg::slice(gpu, pools.k),
        RawArg::slice(gpu, pools.v),
        RawArg::slice(gpu, &keys.base),
        RawArg::slice(gpu, &keys.prefix),
        RawArg::slice(gpu, &keys.extra_off),
        RawArg::slice(gpu, &keys.extra),
        RawArg::slice(gpu, &keys.groups),
        RawArg::I32(shape.n_heads as i32),
        RawArg::I32(shape.n_kv_heads as i32),
        RawArg::F32(scale),
        RawArg::I32(splits as i32),
        RawArg::I64(pools.offset as i64),
        RawArg::I32(split_tiles as i32),
        RawArg::I32(flags),
    ];
    // Splits of split_tiles tiles of 64 keys (`splits` counts tiles:
    // the scratch's stride); each stage a tile's keys and values.
    let cfg = LaunchConfig {
        grid_dim: grid,
        block_dim: (MMA_THREADS, 1, 1),
        shared_mem_bytes: (stages * 2 * 64 * (shape.head_dim + 8) * 2) as u32,
    };
    let kernel = format!("tree_attention_{}_bf16", shape.head_dim);
    let in_order = InOrder::from_env().tree;
    // SAFETY: the kernel's parameters in order; sizes checked by the caller.
    unsafe { launch_ordered(gpu, &kernel, cfg, in_order, &args) }
}

#[cfg(test)]
mod tests {
    use super::TreeStages;

    #[test]
    fn four_stages_only_while_every_block_has_an_sm_of_its_own() {
        // An H200 (132 SMs): an 8B decode at batch 1 (8 kv heads, one
        // split), 16 (128 blocks) and 64 (512 blocks).
        assert_eq!(TreeStages::Auto.for_launch(132, 8), 4);
        assert_eq!(TreeStages::Auto.for_launch(132, 132), 4);
        assert_eq!(TreeStages::Auto.for_launch(132, 133), 2);
        assert_eq!(TreeStages::Auto.for_launch(132, 512), 2);
        assert_eq!(TreeStages::Two.for_launch(132, 8), 2);
        assert_eq!(TreeStages::Four.for_launch(132, 512), 4);
    }
}
