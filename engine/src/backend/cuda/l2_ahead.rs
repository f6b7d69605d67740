//! Weights asked into L2 ahead of the launch that reads them
//! (`specula_kernels::cuda::l2_prefetch`), by a small kernel on the side
//! stream ([`Gpu::fork`]), joined before that launch. The requests write
//! nothing, so every bit is the same with or without them
//! (`SPECULA_L2_PREFETCH`, [`L2Prefetch`]):
//! - by default, during the attention (which reads almost nothing at a short
//!   context), the projections after it ([`prefetch_beside`]);
//! - with `chain`, every linear of a dense layer has the next one's weights
//!   asked for while it runs ([`L2Chain`]).
//!
//! Neither while the clock times spans (every launch then runs in order on
//! the main stream) or with `SPECULA_FORK=0`.

use super::profile::OpClock;
use crate::error::Result;
use cudarc::driver::CudaSlice;
use specula_kernels::cuda::{
    l2_prefetch, l2_prefetch_ranges, Gpu, GpuElement, L2Prefetch, L2Range,
};
use std::collections::VecDeque;

/// Asks L2 for `weights` on the side stream beside the main stream's next
/// launches (an attention) when the mode is [`L2Prefetch::Normal`] or
/// [`L2Prefetch::EvictLast`], and says whether it did: then the caller joins
/// ([`Gpu::join`]) before the launch that reads them.
pub(crate) fn prefetch_beside<T: GpuElement>(
    gpu: &Gpu,
    weights: &[&CudaSlice<T>],
    clock: &OpClock,
) -> Result<bool> {
    let mode = L2Prefetch::from_env();
    let beside = matches!(mode, L2Prefetch::Normal | L2Prefetch::EvictLast);
    if !beside || clock.running() || !gpu.forks() {
        return Ok(false);
    }
    gpu.fork(|| l2_prefetch(gpu, weights, mode))??;
    Ok(true)
}

/// The weights the next linears of a forward read, asked into L2 one
/// linear ahead (`SPECULA_L2_PREFETCH=chain`, evict-last, at most half the
/// L2 a linear): the forward [`L2Chain::plan`]s a dense layer's weights in
/// the order its linears read them, and each linear [`L2Chain::step`]s
/// just before its launch, so the next linear's weights stream into L2 while
/// it runs. Idle (every call a no-op) in any other mode.
pub(crate) struct L2Chain {
    on: bool,
    queue: VecDeque<L2Range>,
    /// A prefetch forked and not yet joined.
    pending: bool,
}

impl L2Chain {
    /// The chain of `gpu` in this process's mode.
    pub(crate) fn new(gpu: &Gpu) -> L2Chain {
        L2Chain {
            on: L2Prefetch::from_env() == L2Prefetch::Chain && gpu.forks(),
            queue: VecDeque::new(),
            pending: false,
        }
    }

    /// Whether the chain runs.
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// The weights the next linears read, in order (what was left of the
    /// last plan is dropped).
    pub(crate) fn plan(&mut self, ranges: impl IntoIterator<Item = L2Range>) {
        if self.on {
            self.queue.clear();
            self.queue.extend(ranges);
        }
    }

    /// Just before a linear's launch: joins the prefetch forked at the last
    /// step (it asked for this linear's weights) and forks one for the next
    /// planned weights, which then stream into L2 beside this linear.
    pub(crate) fn step(&mut self, gpu: &Gpu, clock: &OpClock) -> Result<()> {
        if !self.on || clock.running() {
            return Ok(());
        }
        self.join(gpu)?;
        if let Some(next) = self.queue.pop_front() {
            gpu.fork(|| l2_prefetch_ranges(gpu, &[next], gpu.l2_bytes / 2, true))??;
            self.pending = true;
        }
        Ok(())
    }

    /// The end of a forward: joins a prefetch still out (a captured graph
    /// must join every fork before its end) and drops the rest of the plan.
    pub(crate) fn finish(&mut self, gpu: &Gpu) -> Result<()> {
        self.queue.clear();
        self.join(gpu)
    }

    /// Joins the prefetch forked last, if it is still out.
    fn join(&mut self, gpu: &Gpu) -> Result<()> {
        if self.pending {
            gpu.join()?;
            self.pending = false;
        }
        Ok(())
    }
}
