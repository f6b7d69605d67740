//! A projection of one row with the RMSNorm before it run in its prologue
//! (`linear_norm.cu`): every block of the tensor-core one-tile linear norms
//! the row into shared memory itself, in the norm kernel's reduction order,
//! so the norm's own launch (one block, mostly latency) goes away and its
//! bits stay: `y` and the residual equal [`rms_norm_residual`] or
//! [`moe_combine_norm`] followed by [`LinearLayer::rows`].
//!
//! [`rms_norm_residual`]: super::rms_norm_residual
//! [`moe_combine_norm`]: super::moe_combine_norm

use super::device::{GpuElement, GpuError};
use super::launch::{cfg, launch, need, RawArg};
use super::linear::{LinearForm, LinearLayer};
use super::moe::ExpertsOutput;
use crate::switch::Switch;
use cudarc::driver::CudaSlice;

/// Shared memory a block may take without asking the driver for more.
const DEFAULT_SHARED_BYTES: usize = 48 * 1024;

/// The most 16-byte vectors of the row one thread norms (`linear_norm.cu`'s
/// NORMED_ROW_VECTORS).
const NORMED_ROW_VECTORS: usize = 4;

/// What comes to the residual before the norm.
#[derive(Clone, Copy)]
pub enum NormDelta<'a, T> {
    /// Nothing: the residual is normed as it is (the first layer's norm).
    Nothing,
    /// A stored row (a dense MLP's output).
    Stored(&'a CudaSlice<T>),
    /// An experts layer's combine (with the attention output its routing
    /// left out of the residual, when there is one).
    Experts(ExpertsOutput<'a, T>),
}

/// The RMSNorm before a projection, run in the projection's prologue:
/// `residual += delta`, the projection's input `rmsnorm(residual) * w`.
pub struct NormedInput<'a, T> {
    /// The residual row (`[1, hidden]`), updated in place.
    pub residual: &'a mut CudaSlice<T>,
    /// What is added to it first.
    pub delta: NormDelta<'a, T>,
    /// The norm's weight (`[hidden]`).
    pub w: &'a CudaSlice<T>,
    /// The norm's epsilon.
    pub eps: f32,
    /// A counter of the device, zero between launches (the launch leaves it
    /// zero): which block finished its norm last, and writes the residual.
    pub ticket: &'a mut CudaSlice<u32>,
}

/// Whether projections take their norm into their prologue where they can
/// ([`LinearLayer::takes_normed`]): `SPECULA_NORM_IN_LINEAR=1`; unset or `0`
/// (the default) keeps the norm's own launch. The same bits either way;
/// read once.
pub fn norm_in_linear() -> bool {
    static ON: Switch<bool> = Switch::on_off("SPECULA_NORM_IN_LINEAR", false);
    ON.get()
}

impl<T: GpuElement> LinearLayer<'_, T> {
    /// Whether [`LinearLayer::rows_normed`] runs this projection at `m`
    /// rows: one row, in bf16, on the pipelined one-tile kernel
    /// [`LinearLayer::rows`] would take, at most four 16-byte vectors of
    /// the row a thread, and the row twice in the block's shared memory.
    pub fn takes_normed(&self, m: usize) -> bool {
        let Some(LinearForm::Mma(l)) = self.form(m) else {
            return false;
        };
        let (hidden, partial) = (self.k, normed_partial_bytes(l.groups, l.parts));
        let threads = 32 * l.groups * l.parts;
        m == 1
            && T::SUFFIX == "bf16"
            && l.pipelined
            && l.groups <= 2
            && hidden.is_multiple_of(8)
            && hidden / 8 <= NORMED_ROW_VECTORS * threads
            && partial + 4 * hidden <= DEFAULT_SHARED_BYTES
    }

    /// `residual += delta`, then `y = (rmsnorm(residual) * w) W^T (+
    /// bias)` for one row, the norm in the projection's prologue: the same
    /// bits as the norm's launch followed by [`LinearLayer::rows`]. Only
    /// where [`LinearLayer::takes_normed`] holds at one row.
    pub fn rows_normed(
        self,
        y: &mut CudaSlice<T>,
        input: NormedInput<'_, T>,
    ) -> Result<(), GpuError> {
        let (k, n) = (self.k, self.n);
        let layout = match self.form(1) {
            Some(LinearForm::Mma(l)) if self.takes_normed(1) => l,
            _ => {
                return Err(GpuError::Shape(format!(
                    "linear_mma_normed: the projection [{n}, {k}] does not take its norm at one row"
                )))
            }
        };
        let NormedInput {
            residual,
            delta,
            w,
            eps,
            ticket,
        } = input;
        need(
            residual.len() == k && w.len() == k && y.len() >= n && !ticket.is_empty(),
            || "linear_mma_normed: sizes disagree".into(),
        )?;
        let gpu = self.gpu;
        let mut args = vec![RawArg::slice(gpu, y), RawArg::slice(gpu, residual)];
        let kind = match delta {
            NormDelta::Nothing | NormDelta::Stored(_) => {
                let d = match delta {
                    NormDelta::Stored(d) => Some(d),
                    _ => None,
                };
                need(d.is_none_or(|d| d.len() >= k), || {
                    "linear_mma_normed: the delta is shorter than the row".into()
                })?;
                args.push(RawArg::opt(gpu, d));
                "stored"
            }
            NormDelta::Experts(e) => {
                need(
                    e.plan.rows == 1
                        && e.plan.spec.routes() <= 16
                        && e.yexp.len() >= e.plan.pairs() * k
                        && e.shared.is_none_or(|s| s.len() >= k)
                        && e.attn.is_none_or(|a| a.len() >= k),
                    || "linear_mma_normed: the experts' output disagrees with the row".into(),
                )?;
                args.extend([
                    RawArg::slice(gpu, e.yexp),
                    RawArg::opt(gpu, e.shared),
                    RawArg::slice(gpu, &e.plan.weights),
                    RawArg::I32(e.plan.spec.routes() as i32),
                    RawArg::opt(gpu, e.attn),
                ]);
                "experts"
            }
        };
        args.extend([
            RawArg::slice(gpu, self.w),
            RawArg::opt(gpu, self.bias),
            RawArg::I32(k as i32),
            RawArg::I32(n as i32),
            RawArg::I32(layout.parts as i32),
            RawArg::I32(0),
            RawArg::slice(gpu, w),
            RawArg::F32(eps),
            RawArg::slice(gpu, ticket),
        ]);
        let groups = layout.groups;
        let kernel = format!(
            "linear_mma_tile1{}_normed_{kind}_bf16",
            if groups == 2 { "_g2" } else { "" }
        );
        let smem = normed_partial_bytes(groups, layout.parts) + 4 * k;
        let blocks = n.div_ceil(16 * groups) as u32;
        let cfg = cfg(
            (blocks, 1),
            (32 * groups * layout.parts) as u32,
            smem as u32,
        );
        // SAFETY: the kernel's parameters in its order; sizes checked above
        // and in takes_normed (the shared memory fits the default).
        unsafe { launch(gpu, &kernel, cfg, &args) }
    }
}

/// Bytes of the k slices' partial sums a one-tile block keeps in shared
/// memory before the normed row (`linear_mma_normed`).
fn normed_partial_bytes(groups: usize, parts: usize) -> usize {
    if parts > 1 {
        groups * parts * 4 * 32 * 4
    } else {
        0
    }
}
