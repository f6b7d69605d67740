//! The linear layers. Up to [`LINEAR_INVARIANT_MAX_ROWS`] rows (every decode
//! and verify forward), the batch-invariant linear: a row's result does not
//! depend on the other rows or how many there are, so a verify forward
//! reproduces the baseline's decode rows bit for bit. Tensor cores in bf16
//! (one token tile: [`LinearLayer::mma`], `linear_mma.cu`; more rows:
//! [`LinearLayer::tiles`], `linear_tiles.cu`; the same bits for a row), one
//! warp per output column in FMA otherwise (`linear_fma.cu`). Above (long
//! prefills), cuBLAS ([`linear`]) and its bias pass (`linear_bias.cu`).

use super::device::{Gpu, GpuElement, GpuError, SmallRowLinear};
use super::launch::{cfg, grid_for, launch, launch_ordered, name, need, RawArg, THREADS};
use super::mma_switches::{mma_eight_tiles, mma_grouped, mma_in_order_tiles, mma_pipelined_rows};
use super::LinearWg;
pub use crate::mma_layout::{
    mma_k_parts, pipelined_tiles, MmaLaunch, MMA_PIPELINED_MAX_ROWS, MMA_PIPELINED_TILES_MAX_ROWS,
};
use crate::switch::Switch;
pub use crate::tile_layout::{MmaForm, TileLaunch, TILES_MIN_ROWS, TILE_SHAPES};
use crate::tile_layout::{TILES_WIDE_COLUMNS, TILES_WIDE_MIN_ROWS};
pub use crate::wg_layout::{WgLaunch, WG_VARIANTS};
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;

/// Rows up to which forwards are replayed as CUDA graphs (and the MoE
/// forward keeps its expert counters); the linears stay batch-invariant up
/// to [`LINEAR_INVARIANT_MAX_ROWS`].
pub const INVARIANT_MAX_ROWS: usize = 64;

/// Rows up to which [`LinearLayer::auto`] uses the batch-invariant
/// [`LinearLayer::rows`] instead of cuBLAS: every decode and verify forward
/// (batch 256 x trees of 16 tokens) stays bit-identical across batch
/// shapes; longer prefills get cuBLAS.
pub const LINEAR_INVARIANT_MAX_ROWS: usize = 4096;

/// Which forwards the tiled kernel (`linear_tiles.cu`) runs, from
/// `SPECULA_LINEAR_TILES`: `0` none (cuBLAS above [`INVARIANT_MAX_ROWS`]
/// rows: not batch-invariant, the path before the tiled kernel), unset (the
/// default) the faster form per weight shape and rows ([`MmaForm::for_shape`]:
/// wide weights past 32 rows, narrow ones over long k slices from 128), `1`
/// every weight from [`TILES_MIN_ROWS`] rows ([`MmaForm::by_rows`], the first
/// tiled kernel's rule), `64` every weight past [`INVARIANT_MAX_ROWS`] rows
/// (the default before the per-shape rule, kept for same-run comparison).
/// Both forms give a row the same bits, so every choice but `0` keeps
/// decode and verify forwards lossless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinearTiles {
    /// Small-row kernel to [`INVARIANT_MAX_ROWS`] rows, cuBLAS above.
    Off,
    /// The faster form for the shape and rows ([`MmaForm::for_shape`]).
    ByShape,
    /// Small-row kernel to [`INVARIANT_MAX_ROWS`] rows, tiles above.
    AboveSmallRows,
    /// Small-row kernel below [`TILES_MIN_ROWS`] rows, tiles from there.
    FromTileRows,
}

/// The [`LinearTiles`] choice of this process (read once).
pub fn linear_tiles() -> LinearTiles {
    static TILES: Switch<LinearTiles> = Switch::new(
        "SPECULA_LINEAR_TILES",
        &[
            ("0", LinearTiles::Off),
            ("1", LinearTiles::FromTileRows),
            ("64", LinearTiles::AboveSmallRows),
        ],
        LinearTiles::ByShape,
        "the faster form per weight shape",
    );
    TILES.get()
}

/// [`TILES_WIDE_MIN_ROWS`] before results/h200/narrow64-2026-12-06: the
/// rows up to which `SPECULA_WIDE_RULE=old` keeps a wide weight off the
/// tiles (and on wgmma past one token tile, where the GPU has it).
const OLD_TILES_WIDE_MIN_ROWS: usize = 16;

/// Whether a wide weight's linears of 9-32 rows take the rule before
/// results/h200/narrow64-2026-12-06 (`SPECULA_WIDE_RULE=old`: wgmma at 9-16
/// rows, the tiled kernel at 17-32) rather than the small-row kernel (unset,
/// the default: [`TILES_WIDE_MIN_ROWS`]), for same-run comparison. Either
/// gives the same bits. Read once.
pub fn wide_rule_old() -> bool {
    static OLD: Switch<bool> = Switch::new(
        "SPECULA_WIDE_RULE",
        &[("old", true)],
        false,
        "the small-row kernel to 32 rows",
    );
    OLD.get()
}

/// A tensor-core linear's kernel and layout ([`LinearLayer::form`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinearForm {
    /// The wgmma kernel (`linear_wg.cu`).
    Wg(WgLaunch),
    /// The small-row kernel (`linear_mma.cu`), looped or pipelined.
    Mma(MmaLaunch),
    /// The tiled kernel (`linear_tiles.cu`).
    Tiles(TileLaunch),
}

/// Rows up to which [`LinearLayer::auto`] stays batch-invariant: see
/// [`linear_tiles`].
pub fn invariant_linear_rows() -> usize {
    if linear_tiles() == LinearTiles::Off {
        INVARIANT_MAX_ROWS
    } else {
        LINEAR_INVARIANT_MAX_ROWS
    }
}

/// Whether [`LinearLayer::rows`] runs a `[n, k]` weight on tensor cores (bf16,
/// k a multiple of 32, the GPU's [`SmallRowLinear`] is `Mma`) rather than
/// the FMA kernel.
pub fn uses_mma<T: GpuElement>(gpu: &Gpu, k: usize) -> bool {
    gpu.small_row_linear == SmallRowLinear::Mma && T::SUFFIX == "bf16" && k.is_multiple_of(32)
}

/// A linear layer on the device: `W[n, k]` (a row per output) and an
/// optional bias `[n]`, with the GPU that runs it.
#[derive(Clone, Copy)]
pub struct LinearLayer<'a, T> {
    /// The GPU holding the weights.
    pub gpu: &'a Gpu,
    /// `W[n, k]`, row-major.
    pub w: &'a CudaSlice<T>,
    /// The bias `[n]`, if any.
    pub bias: Option<&'a CudaSlice<T>>,
    /// Inputs per row.
    pub k: usize,
    /// Outputs per row.
    pub n: usize,
}

impl<'a, T: GpuElement> LinearLayer<'a, T> {
    /// The layer of `w` (`[n, k]`) and `bias` on `gpu`.
    pub fn new(
        gpu: &'a Gpu,
        w: &'a CudaSlice<T>,
        bias: Option<&'a CudaSlice<T>>,
        k: usize,
        n: usize,
    ) -> LinearLayer<'a, T> {
        LinearLayer { gpu, w, bias, k, n }
    }

    /// `y[m, n] = x[m, k] W^T (+ bias)`: [`LinearLayer::rows`] up to
    /// [`invariant_linear_rows`] rows, cuBLAS (plus a bias pass) above.
    pub fn auto(self, y: &mut CudaSlice<T>, x: &CudaSlice<T>, m: usize) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        if m <= invariant_linear_rows() {
            return self.rows(y, x, m);
        }
        let LinearLayer { gpu, w, bias, k, n } = self;
        need(
            x.len() >= m * k && bias.is_none_or(|b| b.len() == n),
            || "linear_auto: x or bias has the wrong size".into(),
        )?;
        linear(gpu, y, x, w, m, k, n)?;
        if let Some(bias) = bias {
            let args = [
                RawArg::slice(gpu, y),
                RawArg::slice(gpu, bias),
                RawArg::I64((m * n) as i64),
                RawArg::I32(n as i32),
            ];
            let grid = cfg((grid_for(m * n), 1), THREADS, 0);
            // SAFETY: the kernel's parameters in order; y holds m * n (linear checked it), bias n.
            unsafe { launch(gpu, &name::<T>("add_bias"), grid, &args) }?;
        }
        Ok(())
    }

    /// `y[m, n] = x[m, k] W^T (+ bias)`, the same reduction order for a
    /// row whatever `m` is: on tensor cores where [`uses_mma`] (the form
    /// [`MmaForm::for_shape`] picks), else one warp per output column in FMA.
    pub fn rows(self, y: &mut CudaSlice<T>, x: &CudaSlice<T>, m: usize) -> Result<(), GpuError> {
        self.small_rows(y, x, m, false)
    }

    /// `y[m, n/2] = silu(gate) * up` (SwiGLU) straight from a fused
    /// projection whose rows interleave gate and up (`2i` = gate_i, `2i + 1`
    /// = up_i; a bias is added before the SiLU); gate and up are rounded to
    /// `T` first, as if stored. Batch-invariant like [`LinearLayer::rows`].
    pub fn swiglu(self, y: &mut CudaSlice<T>, x: &CudaSlice<T>, m: usize) -> Result<(), GpuError> {
        self.small_rows(y, x, m, true)
    }

    /// [`LinearLayer::rows`], or with `silu` [`LinearLayer::swiglu`]: on
    /// tensor cores where [`uses_mma`], else in FMA.
    fn small_rows(
        self,
        y: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        m: usize,
        silu: bool,
    ) -> Result<(), GpuError> {
        match self.form(m) {
            Some(LinearForm::Wg(l)) => self.wg(y, x, m, l, silu),
            Some(LinearForm::Mma(l)) => self.mma(y, x, m, l, silu),
            Some(LinearForm::Tiles(l)) => self.tiles(y, x, m, l, silu),
            None => self.fma(y, x, m, silu),
        }
    }

    /// The tensor-core kernel and layout [`LinearLayer::rows`] runs `m` rows
    /// on (the switches read), or `None` for the FMA kernel.
    pub(crate) fn form(&self, m: usize) -> Option<LinearForm> {
        if !uses_mma::<T>(self.gpu, self.k) {
            return None;
        }
        let (k, n) = (self.k, self.n);
        let by_shape =
            (super::linear_wg(), linear_tiles()) == (LinearWg::ByShape, LinearTiles::ByShape);
        if by_shape && wide_rule_old() && n >= TILES_WIDE_COLUMNS && m <= TILES_WIDE_MIN_ROWS {
            if self.gpu.wgmma && m > MMA_PIPELINED_MAX_ROWS && m <= OLD_TILES_WIDE_MIN_ROWS {
                return Some(LinearForm::Wg(WgLaunch::every(m, k, n)));
            }
            if m > OLD_TILES_WIDE_MIN_ROWS {
                return Some(LinearForm::Tiles(TileLaunch::for_shape(m, k, n)));
            }
        }
        if self.gpu.wgmma && m > MMA_PIPELINED_MAX_ROWS {
            let wg = match (super::linear_wg(), linear_tiles()) {
                (LinearWg::Every, _) => Some(WgLaunch::every(m, k, n)),
                (LinearWg::ByShape, LinearTiles::ByShape) => WgLaunch::for_shape(m, k, n),
                _ => None,
            };
            if let Some(layout) = wg {
                let layout = if super::wg_producer() {
                    layout
                } else {
                    layout.without_producer()
                };
                return Some(LinearForm::Wg(layout));
            }
        }
        // Where the wgmma linear takes no layout (the o projection to 64
        // rows, a GPU without wgmma), narrow weights at 33-64 rows in eight
        // tiles.
        if m > MMA_PIPELINED_TILES_MAX_ROWS && m <= mma_pipelined_rows() {
            if let Some(l) = mma_eight_tiles(m, k, n) {
                return Some(LinearForm::Mma(mma_grouped(l)));
            }
        }
        let form = match linear_tiles() {
            LinearTiles::FromTileRows => MmaForm::by_rows(m, k, n),
            LinearTiles::ByShape => MmaForm::for_shape(m, k, n),
            LinearTiles::AboveSmallRows if m > INVARIANT_MAX_ROWS => {
                MmaForm::Tiles(TileLaunch::for_shape(m, k, n))
            }
            LinearTiles::AboveSmallRows | LinearTiles::Off => {
                MmaForm::Small(MmaLaunch::for_shape(m, k, n))
            }
        };
        Some(match form {
            MmaForm::Small(layout) if layout.pipelined && m > mma_pipelined_rows() => {
                LinearForm::Mma(MmaLaunch::looped(layout.parts))
            }
            MmaForm::Small(layout) => LinearForm::Mma(mma_grouped(layout)),
            MmaForm::Tiles(layout) => LinearForm::Tiles(layout),
        })
    }

    /// The tensor-core form of [`LinearLayer::rows`] (or with `silu`
    /// [`LinearLayer::swiglu`]) with an explicit layout (k a multiple of 32
    /// `parts`).
    pub fn mma(
        self,
        y: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        m: usize,
        layout: MmaLaunch,
        silu: bool,
    ) -> Result<(), GpuError> {
        let LinearLayer { gpu, w, bias, k, n } = self;
        let MmaLaunch {
            parts,
            chunks,
            groups,
            pipelined,
        } = layout;
        let width = if silu { n / 2 } else { n };
        need(
            T::SUFFIX == "bf16"
                && layout.compiled()
                && layout.holds(m)
                && k.is_multiple_of(32 * parts)
                && (!silu || n.is_multiple_of(2))
                && x.len() >= m * k
                && w.len() == n * k
                && y.len() >= m * width
                && bias.is_none_or(|b| b.len() == n),
            || {
                format!(
                    "linear_mma: unsupported shape or layout (m {m}, k {k}, n {n}, {layout:?}, {})",
                    T::SUFFIX
                )
            },
        )?;
        let flags = i32::from(silu);
        let mut args = self.row_args(y, x, m);
        args.push(RawArg::I32(parts as i32));
        let (kernel, token_tiles, in_order) = match pipelined_tiles(m) {
            Some(tiles) if pipelined => (
                format!(
                    "linear_mma_tile{tiles}{}_bf16",
                    if groups == 2 { "_g2" } else { "" }
                ),
                tiles,
                mma_in_order_tiles().is_some_and(|t| tiles >= t),
            ),
            _ => {
                args.push(RawArg::I32(groups as i32));
                (
                    format!("linear_mma_ku{chunks}_bf16"),
                    m.div_ceil(8).min(8),
                    false,
                )
            }
        };
        args.push(RawArg::I32(flags));
        let smem = if parts > 1 {
            groups * parts * token_tiles * 4 * 32 * 4
        } else {
            0
        };
        let blocks = n.div_ceil(16 * groups) as u32;
        let cfg = cfg((blocks, 1), (32 * groups * parts) as u32, smem as u32);
        // SAFETY: the kernel's parameters in its order; sizes checked above.
        unsafe { launch_ordered(gpu, &kernel, cfg, in_order, &args) }
    }

    /// The FMA form of [`LinearLayer::rows`] (f32, or k not a multiple of
    /// 32), or with `silu` of [`LinearLayer::swiglu`] (`y` then `[m, n /
    /// 2]`): the kernel `linear_rows_c{C}` (`linear_rows_silu_c{C}`), each
    /// warp summing C adjacent columns for tiles of up to 8 rows.
    pub(crate) fn fma(
        self,
        y: &CudaSlice<T>,
        x: &CudaSlice<T>,
        m: usize,
        silu: bool,
    ) -> Result<(), GpuError> {
        let LinearLayer { gpu, w, bias, k, n } = self;
        let kernel = if silu {
            "linear_rows_silu"
        } else {
            "linear_rows"
        };
        let width = if silu { n / 2 } else { n };
        need(
            (!silu || n.is_multiple_of(2))
                && x.len() >= m * k
                && w.len() == n * k
                && y.len() >= m * width
                && bias.is_none_or(|b| b.len() == n),
            || format!("{kernel}: sizes disagree (m {m}, k {k}, n {n})"),
        )?;
        // Columns per warp: one for a single row (most warps in flight), more
        // as rows grow (each x load then serves several columns); the SiLU
        // epilogue pairs gate and up columns, so at least two.
        let c = match m {
            0..=3 if silu => 2,
            1 => 1,
            2..=3 => 2,
            _ => 4,
        };
        let args = self.row_args(y, x, m);
        let cols_per_block = c * THREADS as usize / 32;
        let cfg = cfg((n.div_ceil(cols_per_block) as u32, 1), THREADS, 0);
        let kernel = name::<T>(&format!("{kernel}_c{c}"));
        // SAFETY: seven parameters in the kernel's order; sizes checked above.
        unsafe { launch(gpu, &kernel, cfg, &args) }
    }

    /// The parameters both small-row linear kernels begin with: `y, x, w,
    /// bias, m, k, n`.
    fn row_args(self, y: &CudaSlice<T>, x: &CudaSlice<T>, m: usize) -> Vec<RawArg> {
        vec![
            RawArg::slice(self.gpu, y),
            RawArg::slice(self.gpu, x),
            RawArg::slice(self.gpu, self.w),
            RawArg::opt(self.gpu, self.bias),
            RawArg::I32(m as i32),
            RawArg::I32(self.k as i32),
            RawArg::I32(self.n as i32),
        ]
    }
}

/// `y[m, n] = x[m, k] W[n, k]^T` through cuBLAS (bf16 inputs accumulate in
/// f32); `x` may be a larger buffer whose first `m * k` elements are the rows.
pub fn linear<T: GpuElement>(
    gpu: &Gpu,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    w: &CudaSlice<T>,
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), GpuError>
where
    CudaBlas: Gemm<T>,
{
    need(
        x.len() >= m * k && w.len() == n * k && y.len() >= m * n,
        || "linear: sizes disagree".into(),
    )?;
    // Row-major y = x W^T is column-major y^T = W^T' x^T: cuBLAS sees W as [k, n] transposed.
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: T::from_f32(1.0),
        lda: k as i32,
        ldb: k as i32,
        beta: T::from_f32(0.0),
        ldc: n as i32,
    };
    unsafe { gpu.blas.gemm(cfg, w, x, y) }?;
    Ok(())
}
