//! Kernel launches as programmatic dependents (`cuLaunchKernelEx` with
//! programmatic stream serialization): the kernel may start while the one
//! before it drains, doing only what needs no earlier result (prefetching
//! constant weights) until its `griddepcontrol.wait`. cudarc's launch
//! builder has no launch attributes, hence this small raw launcher.

use super::device::{Gpu, GpuError};
use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig};

/// One kernel parameter: a device pointer (0 for null) or a scalar.
pub(crate) enum RawArg {
    /// A device address.
    Ptr(u64),
    /// An `int`.
    I32(i32),
    /// A `long` (64-bit).
    I64(i64),
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

/// Launches `f` on the GPU's stream, as a programmatic dependent of the
/// previous kernel when `gpu.pdl` is set.
///
/// # Safety
/// The arguments must match the kernel's parameters in number, order and
/// type, and every pointer must be valid for what the kernel touches.
pub(crate) unsafe fn launch_raw(
    gpu: &Gpu,
    f: &CudaFunction,
    cfg: LaunchConfig,
    args: &[RawArg],
) -> Result<(), GpuError> {
    // Each value in its own 8-byte cell; an int or float parameter reads the
    // first four bytes (little-endian: the value).
    let mut cells: Vec<u64> = args
        .iter()
        .map(|a| match *a {
            RawArg::Ptr(p) => p,
            RawArg::I32(v) => v as u32 as u64,
            RawArg::I64(v) => v as u64,
            RawArg::F32(v) => u64::from(v.to_bits()),
        })
        .collect();
    let mut params: Vec<*mut std::ffi::c_void> = cells
        .iter_mut()
        .map(|c| c as *mut u64 as *mut std::ffi::c_void)
        .collect();
    let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: gpu.stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: u32::from(gpu.pdl),
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
