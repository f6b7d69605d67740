//! The one launch path. Every kernel launches through [`launch`]
//! (`cuLaunchKernelEx`), as a programmatic dependent of the kernel before it
//! when `gpu.pdl` is set (programmatic stream serialization): it may start
//! while the one before it drains, doing only what needs no earlier result
//! (prefetching constant weights) until its `griddepcontrol.wait`
//! (`pdl_enter` or `pdl_wait`, `prelude.cu`). cudarc's launch builder has
//! no launch attributes, hence this small raw launcher. Beside it, the
//! helpers every launch wrapper uses: launch shapes, size checks, names.

use super::device::{Gpu, GpuElement, GpuError};
use crate::switch::Switch;
use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig};

/// Threads per block of the simple kernels.
pub(crate) const THREADS: u32 = 256;

/// A launch of `grid` blocks of `block` threads with `smem` bytes of dynamic shared memory.
pub(crate) fn cfg(grid: (u32, u32), block: u32, smem: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: smem,
    }
}

/// Blocks of [`THREADS`] covering `n` elements (grid-stride kernels; capped).
pub(crate) fn grid_for(n: usize) -> u32 {
    n.div_ceil(THREADS as usize).clamp(1, 65_535) as u32
}

/// `Ok` when `ok`, else a [`GpuError::Shape`] saying `what`.
pub(crate) fn need(ok: bool, what: impl FnOnce() -> String) -> Result<(), GpuError> {
    if ok {
        Ok(())
    } else {
        Err(GpuError::Shape(what()))
    }
}

/// The full name of `kernel` for element type `T` (`rope` -> `rope_bf16`).
pub(crate) fn name<T: GpuElement>(kernel: &str) -> String {
    format!("{kernel}_{}", T::SUFFIX)
}

/// One kernel parameter: a device pointer (0 for null) or a scalar.
pub(crate) enum RawArg {
    /// A device address.
    Ptr(u64),
    /// An `int`.
    I32(i32),
    /// A `long` (64-bit).
    I64(i64),
    /// An `unsigned long long`.
    U64(u64),
    /// A `float`.
    F32(f32),
}

impl RawArg {
    /// The device address of `s`.
    pub(crate) fn slice<T>(gpu: &Gpu, s: &CudaSlice<T>) -> RawArg {
        let (p, _sync) = s.device_ptr(&gpu.stream);
        RawArg::Ptr(p)
    }

    /// The device address of `s`, or null.
    pub(crate) fn opt<T>(gpu: &Gpu, s: Option<&CudaSlice<T>>) -> RawArg {
        s.map_or(RawArg::Ptr(0), |s| RawArg::slice(gpu, s))
    }
}

/// Launches the kernel named `kernel` (its full name, as [`name`] gives it)
/// on the GPU's launch stream ([`Gpu::launch_stream`]), as a programmatic
/// dependent of the previous kernel when `gpu.pdl` is set.
///
/// # Safety
/// The arguments must match the kernel's parameters in number, order and
/// type, and every pointer must be valid for what the kernel touches.
pub(crate) unsafe fn launch(
    gpu: &Gpu,
    kernel: &str,
    cfg: LaunchConfig,
    args: &[RawArg],
) -> Result<(), GpuError> {
    launch_with(gpu, kernel, cfg, (1, 1, 1), gpu.pdl, args)
}

/// [`launch`], or with `in_order` in stream order whatever `gpu.pdl` says:
/// the kernel then starts once the previous one has finished (its own
/// dependents may still start early).
///
/// # Safety
/// As [`launch`].
pub(crate) unsafe fn launch_ordered(
    gpu: &Gpu,
    kernel: &str,
    cfg: LaunchConfig,
    in_order: bool,
    args: &[RawArg],
) -> Result<(), GpuError> {
    launch_with(gpu, kernel, cfg, (1, 1, 1), gpu.pdl && !in_order, args)
}

/// Which kernel families start in stream order rather than as programmatic
/// dependents of the kernel before them (`SPECULA_IN_ORDER`: `tree` the tree
/// attention, `sliced` the k-sliced cluster linears (wgmma and tiled),
/// `tree,sliced` both; unset: neither), beside the pipelined linear's
/// eight-tile launches (`SPECULA_MMA_IN_ORDER`). A comparison: in order, an
/// eight-tile launch was 4% of the 8B batch-64 step faster than as a
/// dependent (results/h200/b64-2026-12-05). Every choice gives the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InOrder {
    /// The tree attention starts in order.
    pub tree: bool,
    /// The k-sliced cluster linears start in order.
    pub sliced: bool,
}

impl InOrder {
    /// This process's choice (read once).
    pub fn from_env() -> InOrder {
        const fn of(tree: bool, sliced: bool) -> InOrder {
            InOrder { tree, sliced }
        }
        static IN_ORDER: Switch<InOrder> = Switch::new(
            "SPECULA_IN_ORDER",
            &[
                ("tree", of(true, false)),
                ("sliced", of(false, true)),
                ("tree,sliced", of(true, true)),
            ],
            of(false, false),
            "neither",
        );
        IN_ORDER.get()
    }
}

/// [`launch`] in thread-block clusters of `cluster` blocks along x (the
/// grid's x a multiple of it; 1 for no cluster), with more than 48 KiB of
/// dynamic shared memory allowed when `cfg` asks for it; in stream order
/// whatever `gpu.pdl` says when `in_order` ([`launch_ordered`]).
///
/// # Safety
/// As [`launch`].
pub(crate) unsafe fn launch_cluster(
    gpu: &Gpu,
    kernel: &str,
    cfg: LaunchConfig,
    cluster: u32,
    in_order: bool,
    args: &[RawArg],
) -> Result<(), GpuError> {
    launch_with(
        gpu,
        kernel,
        cfg,
        (cluster, 1, 1),
        gpu.pdl && !in_order,
        args,
    )
}

/// [`launch`] in thread-block clusters of `cluster` blocks along z (the
/// grid's z a multiple of it), as a programmatic dependent when `gpu.pdl`.
///
/// # Safety
/// As [`launch`].
pub(crate) unsafe fn launch_cluster_z(
    gpu: &Gpu,
    kernel: &str,
    cfg: LaunchConfig,
    cluster: u32,
    args: &[RawArg],
) -> Result<(), GpuError> {
    launch_with(gpu, kernel, cfg, (1, 1, cluster), gpu.pdl, args)
}

/// A launch in clusters of `cluster` blocks (x, y, z), as a programmatic
/// dependent only when `pdl`.
unsafe fn launch_with(
    gpu: &Gpu,
    kernel: &str,
    cfg: LaunchConfig,
    cluster: (u32, u32, u32),
    pdl: bool,
    args: &[RawArg],
) -> Result<(), GpuError> {
    let f = gpu.function_with_shared(kernel, cfg.shared_mem_bytes)?;
    super::stamps::note_launch(kernel, &cfg);
    // Each value in its own 8-byte cell; an int or float parameter reads the
    // first four bytes (little-endian: the value).
    let mut cells: Vec<u64> = args
        .iter()
        .map(|a| match *a {
            RawArg::Ptr(p) | RawArg::U64(p) => p,
            RawArg::I32(v) => v as u32 as u64,
            RawArg::I64(v) => v as u64,
            RawArg::F32(v) => u64::from(v.to_bits()),
        })
        .collect();
    let mut params: Vec<*mut std::ffi::c_void> = cells
        .iter_mut()
        .map(|c| c as *mut u64 as *mut std::ffi::c_void)
        .collect();
    let mut attrs: [sys::CUlaunchAttribute; 2] = std::mem::zeroed();
    let mut used = 0;
    if pdl {
        attrs[used].id =
            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[used].value.programmaticStreamSerializationAllowed = 1;
        used += 1;
    }
    if cluster != (1, 1, 1) {
        attrs[used].id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[used].value.clusterDim.x = cluster.0;
        attrs[used].value.clusterDim.y = cluster.1;
        attrs[used].value.clusterDim.z = cluster.2;
        used += 1;
    }
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: gpu.launch_stream().cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: used as u32,
    };
    gpu.ctx.bind_to_thread()?;
    sys::cuLaunchKernelEx(
        &config,
        f.cu_function(),
        params.as_mut_ptr(),
        std::ptr::null_mut(),
    )
    .result()?;
    Ok(())
}
