//! The launch of greedy tree verification (`verify.cu`): many sequences'
//! draft trees at once, one thread per sequence.

use super::device::{Gpu, GpuError};
use super::launch::{cfg, launch, need, RawArg};
use cudarc::driver::CudaSlice;

/// Outputs of [`verify_greedy_tree`].
pub struct GreedyVerdicts {
    /// Accepted local node indices, at each sequence's node offset.
    pub accepted: CudaSlice<i32>,
    /// Accepted count per sequence.
    pub accept_len: CudaSlice<i32>,
    /// Bonus token per sequence.
    pub bonus: CudaSlice<i32>,
}

/// Greedy verification of many trees at once (see `cpu::greedy_tree_accept`).
pub fn verify_greedy_tree(
    gpu: &Gpu,
    choice: &CudaSlice<i32>,
    tokens: &CudaSlice<i32>,
    parents: &CudaSlice<i32>,
    node_off: &CudaSlice<i32>,
) -> Result<GreedyVerdicts, GpuError> {
    let n_seq = node_off.len() - 1;
    need(
        choice.len() == tokens.len() + n_seq && parents.len() == tokens.len(),
        || "verify_greedy_tree: sizes disagree".into(),
    )?;
    let s = &gpu.stream;
    let v = GreedyVerdicts {
        accepted: s.alloc_zeros(tokens.len().max(1))?,
        accept_len: s.alloc_zeros(n_seq)?,
        bonus: s.alloc_zeros(n_seq)?,
    };
    let args = [
        RawArg::slice(gpu, choice),
        RawArg::slice(gpu, tokens),
        RawArg::slice(gpu, parents),
        RawArg::slice(gpu, node_off),
        RawArg::I32(n_seq as i32),
        RawArg::slice(gpu, &v.accepted),
        RawArg::slice(gpu, &v.accept_len),
        RawArg::slice(gpu, &v.bonus),
    ];
    let grid = cfg((n_seq.div_ceil(128) as u32, 1), 128, 0);
    // SAFETY: the kernel's parameters in order; sizes checked above.
    unsafe { launch(gpu, "verify_greedy_tree", grid, &args) }?;
    Ok(v)
}
