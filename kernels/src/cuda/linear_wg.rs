//! The warpgroup-mma linear (`linear_wg.cu`, sm_90a): the batch-invariant
//! bf16 linear for 9 rows and more on wgmma, a row's bits equal to the
//! small-row kernel's ([`LinearLayer::mma`]) and the tiled kernel's
//! ([`LinearLayer::tiles`]) whatever the batch.

use super::device::{GpuElement, GpuError};
use super::linear_tiles::SlicedLaunch;
use super::LinearLayer;
use crate::switch::Switch;
use crate::wg_layout::WgLaunch;
use cudarc::driver::CudaSlice;

/// Which bf16 linears run on warpgroup mma (on a GPU that has it: sm_90,
/// H100 and H200), from `SPECULA_LINEAR_WG`: unset, the shapes and rows
/// where it is faster ([`WgLaunch::for_shape`]); `1` every linear past one
/// token tile ([`WgLaunch::every`]: the lossless runs of the tiny models
/// take it through their small weights); `0` none. A row's bits are the
/// same in every case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinearWg {
    /// Never.
    Off,
    /// Where [`WgLaunch::for_shape`] says it is faster.
    ByShape,
    /// Every bf16 tensor-core linear past one token tile.
    Every,
}

/// The [`LinearWg`] choice of this process (read once).
pub fn linear_wg() -> LinearWg {
    static WG: Switch<LinearWg> = Switch::new(
        "SPECULA_LINEAR_WG",
        &[("0", LinearWg::Off), ("1", LinearWg::Every)],
        LinearWg::ByShape,
        "where it is faster",
    );
    WG.get()
}

/// Whether the wgmma linear runs the producer-warpgroup layouts it picks
/// ([`WgLaunch::producer`]; the default), or, from `SPECULA_WG_PRODUCER=0`,
/// each as the same tile without the producer
/// ([`WgLaunch::without_producer`], for same-run comparison). The same bits
/// either way. Read once.
pub fn wg_producer() -> bool {
    static ON: Switch<bool> = Switch::on_off("SPECULA_WG_PRODUCER", true);
    ON.get()
}

impl<T: GpuElement> LinearLayer<'_, T> {
    /// `y[m, n] = x[m, k] W^T (+ bias)` in bf16 (with `silu`, `y[m, n / 2] =
    /// silu(gate) * up` over interleaved gate|up columns) on warpgroup mma
    /// laid out as `layout` (k a multiple of 32 `parts`; a GPU with wgmma).
    pub fn wg(
        self,
        y: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        m: usize,
        layout: WgLaunch,
        silu: bool,
    ) -> Result<(), GpuError> {
        let launch = SlicedLaunch {
            kernel: layout.kernel(),
            parts: layout.parts,
            grid: (
                m.div_ceil(layout.bm) as u32,
                self.n.div_ceil(layout.columns()) as u32,
            ),
            threads: layout.threads() as u32,
            shared_bytes: layout.shared_bytes() as u32,
            fits: self.gpu.wgmma && layout.compiled() && m.div_ceil(layout.bm) <= 65_535,
        };
        let wgmma = self.gpu.wgmma;
        self.launch_sliced(y, x, m, silu, launch, || {
            format!("linear_wg (a GPU with wgmma: {wgmma}): {layout:?}")
        })
    }
}
