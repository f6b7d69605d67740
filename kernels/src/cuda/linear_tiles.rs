//! The tiled tensor-core linear (`linear_tiles.cu`): the batch-invariant
//! bf16 linear for more rows than one token tile, with a row's bits equal
//! to the small-row kernel's ([`LinearLayer::mma`]) whatever the batch.

use super::device::{GpuElement, GpuError};
use super::launch::{launch_cluster, need, InOrder, RawArg};
use super::LinearLayer;
use crate::tile_layout::{TileLaunch, TILE_SHAPES};
use cudarc::driver::{CudaSlice, LaunchConfig};

/// Pipeline stages of the tiled kernel (`TILE_STAGES` in `linear_tiles.cu`).
const STAGES: usize = 4;

/// Warps per block of the kernel compiled for a `bn` x `bm` tile.
fn warps(bn: usize, bm: usize) -> usize {
    match (bn, bm) {
        (64, 16 | 32 | 64) => 4,
        _ => 8,
    }
}

impl<T: GpuElement> LinearLayer<'_, T> {
    /// `y[m, n] = x[m, k] W^T (+ bias)` in bf16 (with `silu`, `y[m, n / 2] =
    /// silu(gate) * up` over interleaved gate|up columns) through the tiled
    /// kernel laid out as `layout`: blocks of `bn` columns x `bm` tokens,
    /// k in `parts` slices (k a multiple of 32 `parts`) summed by the blocks
    /// of one cluster and added in slice order.
    pub fn tiles(
        self,
        y: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        m: usize,
        layout: TileLaunch,
        silu: bool,
    ) -> Result<(), GpuError> {
        let TileLaunch { parts, bn, bm } = layout;
        let launch = SlicedLaunch {
            kernel: format!("linear_tiles_{bn}x{bm}_bf16"),
            parts,
            grid: (m.div_ceil(bm) as u32, self.n.div_ceil(bn) as u32),
            threads: 32 * warps(bn, bm) as u32,
            shared_bytes: (STAGES * (bn + bm) * 128) as u32,
            fits: TILE_SHAPES.contains(&(bn, bm)) && m.div_ceil(bm) <= 65_535,
        };
        self.launch_sliced(y, x, m, silu, launch, || {
            format!("linear_tiles: {layout:?}")
        })
    }

    /// Launches a linear whose blocks sum k in `parts` slices as one
    /// cluster (`linear_tiles.cu`, `linear_wg.cu`: parameters y, x, w, bias,
    /// m, k, n, parts, flags; grid x the slices) after the checks they share
    /// (bf16, sizes, k a multiple of 32 `parts`) and the kernel's own
    /// (`launch.fits`), `what` naming the layout in the error.
    pub(super) fn launch_sliced(
        self,
        y: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        m: usize,
        silu: bool,
        launch: SlicedLaunch,
        what: impl FnOnce() -> String,
    ) -> Result<(), GpuError> {
        let LinearLayer { gpu, w, bias, k, n } = self;
        let parts = launch.parts;
        let width = if silu { n / 2 } else { n };
        need(
            T::SUFFIX == "bf16"
                && launch.fits
                && matches!(parts, 1 | 2 | 4 | 8)
                && m >= 1
                && k.is_multiple_of(32 * parts)
                && (!silu || n.is_multiple_of(2))
                && x.len() >= m * k
                && w.len() == n * k
                && y.len() >= m * width
                && bias.is_none_or(|b| b.len() == n),
            || {
                format!(
                    "{}: unsupported shape or layout (m {m}, k {k}, n {n})",
                    what()
                )
            },
        )?;
        let args = [
            RawArg::slice(gpu, y),
            RawArg::slice(gpu, x),
            RawArg::slice(gpu, w),
            RawArg::opt(gpu, bias),
            RawArg::I32(m as i32),
            RawArg::I32(k as i32),
            RawArg::I32(n as i32),
            RawArg::I32(parts as i32),
            RawArg::I32(i32::from(silu)),
        ];
        let cfg = LaunchConfig {
            grid_dim: (parts as u32, launch.grid.0, launch.grid.1),
            block_dim: (launch.threads, 1, 1),
            shared_mem_bytes: launch.shared_bytes,
        };
        let in_order = InOrder::from_env().sliced;
        // SAFETY: the kernel's nine parameters in order; sizes checked above;
        // the grid's x is the cluster.
        unsafe { launch_cluster(gpu, &launch.kernel, cfg, parts as u32, in_order, &args) }
    }
}

/// One launch of a k-sliced cluster linear ([`LinearLayer::launch_sliced`]).
pub(super) struct SlicedLaunch {
    /// Kernel name.
    pub kernel: String,
    /// Slices of k: the grid's x and the cluster.
    pub parts: usize,
    /// The grid's y (token tiles) and z (column tiles).
    pub grid: (u32, u32),
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Whether the kernel exists for the layout and the grid fits.
    pub fits: bool,
}
