//! Opening the device, compiling the kernels, element types, event timers.

use super::kernel_cache::KernelOrigin;
use crate::switch::Switch;
use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The CUDA C source of every kernel: the prelude (shared device helpers
/// and the kernel-declaring macros) first, then one file per op family.
pub const SOURCE: &str = concat!(
    include_str!("prelude.cu"),
    include_str!("hold.cu"),
    include_str!("copy.cu"),
    include_str!("convert.cu"),
    include_str!("norm.cu"),
    include_str!("rope.cu"),
    include_str!("activation.cu"),
    include_str!("select.cu"),
    include_str!("verify.cu"),
    include_str!("random.cu"),
    include_str!("linear_bias.cu"),
    include_str!("linear_fma.cu"),
    include_str!("linear_mma.cu"),
    include_str!("linear_rope.cu"),
    include_str!("linear_tiles.cu"),
    include_str!("linear_wg.cu"),
    include_str!("linear_wg_producer.cu"),
    include_str!("attention.cu"),
    include_str!("att_tile.cu"),
    include_str!("flash_prefill.cu"),
    include_str!("tree_tile.cu"),
    include_str!("tree_merge.cu"),
    include_str!("tree_attention.cu"),
    include_str!("mla.cu"),
    include_str!("mla_split.cu"),
    include_str!("mla_mma.cu"),
    include_str!("moe_route.cu"),
    include_str!("moe_plan.cu"),
    include_str!("moe.cu"),
    include_str!("moe_combine.cu")
);

/// Why the GPU path cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// A CUDA library could not be opened (no driver, or no toolkit libraries on LD_LIBRARY_PATH).
    #[error("no usable CUDA installation: {0} could not be loaded (is an NVIDIA driver installed, and are CUDA's libnvrtc/libcublas on LD_LIBRARY_PATH?)")]
    MissingLibrary(&'static str),
    /// A driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC refused the kernels.
    #[error("NVRTC: {0}")]
    Compile(String),
    /// cuBLAS failed.
    #[error("cuBLAS: {0}")]
    Blas(#[from] cudarc::cublas::result::CublasError),
    /// A launch was given inconsistent sizes.
    #[error("{0}")]
    Shape(String),
}

/// How kernels launch after one another (`SPECULA_PDL`, read once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdlSwitch {
    /// Unset or `1`: each kernel a programmatic dependent of the one before,
    /// launched as soon as that one has started (the default).
    Early,
    /// `late`: programmatic dependents launched only as the one before ends.
    Late,
    /// `0`: plain stream order.
    Off,
}

/// The [`PdlSwitch`] of this process.
pub fn pdl_switch() -> PdlSwitch {
    static PDL: Switch<PdlSwitch> = Switch::new(
        "SPECULA_PDL",
        &[
            ("1", PdlSwitch::Early),
            ("late", PdlSwitch::Late),
            ("0", PdlSwitch::Off),
        ],
        PdlSwitch::Early,
        "early",
    );
    PDL.get()
}

/// The device, its stream, cuBLAS and the compiled kernels.
pub struct Gpu {
    /// The CUDA context.
    pub ctx: Arc<CudaContext>,
    /// The stream every launch goes to.
    pub stream: Arc<CudaStream>,
    /// cuBLAS bound to `stream`.
    pub blas: cudarc::cublas::CudaBlas,
    module: Arc<CudaModule>,
    /// The kernels looked up so far, each with the dynamic shared memory it
    /// has been allowed (a launch then costs no name lookup or attribute call).
    functions: Mutex<HashMap<String, (CudaFunction, u32)>>,
    /// Device name.
    pub name: String,
    /// Streaming multiprocessors of the device.
    pub sms: usize,
    /// Architecture the kernels were compiled for (`sm_90`).
    pub arch: &'static str,
    /// Where the kernels came from: NVRTC (and how long it took) or the
    /// cubin cache (`SPECULA_KERNEL_CACHE`, [`super::kernel_cache`]).
    pub kernels: KernelOrigin,
    /// Whether kernels launch as programmatic dependents of the kernel
    /// before them (sm_90+, unless `SPECULA_PDL=0`; `SPECULA_PDL=late`
    /// keeps them but lets each launch only as the one before finishes).
    pub pdl: bool,
    /// Whether the kernels were compiled for sm_90a and so hold the
    /// warpgroup-mma linear (`linear_wg.cu`: an H100 or H200).
    pub wgmma: bool,
    /// Which kernel runs batch-invariant bf16 linears (`SPECULA_LINEAR=fma`
    /// picks the FMA kernel; tensor cores need sm_80+).
    pub small_row_linear: SmallRowLinear,
    /// Work that overlaps the main stream's ([`Gpu::fork`]).
    side: SideStream,
}

/// A second stream for launches that may run beside the main stream's
/// (the shared experts beside the routing), with the two events that
/// order it: the side waits for `fork`, the main stream for `join`.
struct SideStream {
    stream: Arc<CudaStream>,
    fork: CudaEvent,
    join: CudaEvent,
    /// Whether launches go to the side stream now.
    active: AtomicBool,
    /// Whether forks are taken (`SPECULA_FORK=0`: every launch in order on
    /// the main stream, for same-run comparisons).
    enabled: bool,
}

/// The kernel family of the batch-invariant small-row linear. Either is
/// bit-identical across batch shapes on its own; they differ from each
/// other in the last bits, so a model uses one throughout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmallRowLinear {
    /// Tensor cores (bf16): about as fast for 64 rows as for one.
    Mma,
    /// One warp per output column in FMA (f32's kernel): in bf16 slower
    /// than tensor cores at one row, and in proportion to the rows beyond.
    Fma,
}

impl Gpu {
    /// Opens device `ordinal` and compiles the kernels for it.
    pub fn new(ordinal: usize) -> Result<Gpu, GpuError> {
        // cudarc panics on a missing library at first use: look first.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::MissingLibrary("libcuda.so.1 (the NVIDIA driver)"));
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(GpuError::MissingLibrary("libnvrtc"));
        }
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(GpuError::MissingLibrary("libcublas"));
        }
        let ctx = CudaContext::new(ordinal)?;
        // One stream does all the work, in order: cudarc's per-allocation
        // read/write events (for multi-stream safety) are not needed. It is
        // a created stream, not the legacy default one, which CUDA graphs
        // cannot capture.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let (major, minor) = ctx.compute_capability()?;
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        // sm_90a (the architecture-specific target of an H100/H200) for
        // wgmma; its other instructions are sm_90's.
        let wgmma = (major, minor) == (9, 0);
        let (ptx, kernels) =
            super::kernel_cache::kernel_image(if wgmma { "sm_90a" } else { arch })?;
        let module = ctx.load_module(ptx)?;
        let blas = cudarc::cublas::CudaBlas::new(stream.clone())?;
        let ordering = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let side = SideStream {
            stream: ctx.new_stream()?,
            fork: ctx.new_event(ordering)?,
            join: ctx.new_event(ordering)?,
            active: AtomicBool::new(false),
            enabled: crate::switch::on_off("SPECULA_FORK", true),
        };
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as usize;
        Ok(Gpu {
            side,
            sms,
            name: ctx.name()?,
            ctx,
            stream,
            blas,
            module,
            functions: Mutex::new(HashMap::new()),
            arch,
            kernels,
            wgmma,
            pdl: major >= 9 && pdl_switch() != PdlSwitch::Off,
            small_row_linear: if major >= 8
                && crate::switch::switch(
                    "SPECULA_LINEAR",
                    &[("fma", false), ("mma", true)],
                    true,
                    "mma",
                ) {
                SmallRowLinear::Mma
            } else {
                SmallRowLinear::Fma
            },
        })
    }

    /// A kernel by its full name (`rope_bf16`).
    pub fn function(&self, name: &str) -> Result<CudaFunction, GpuError> {
        self.function_with_shared(name, 0)
    }

    /// A kernel by its full name, allowed at least `shared` bytes of dynamic
    /// shared memory (past the default 48 KiB the driver must be asked,
    /// once per kernel and size); looked up once, then from a table.
    pub(crate) fn function_with_shared(
        &self,
        name: &str,
        shared: u32,
    ) -> Result<CudaFunction, GpuError> {
        let mut table = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        let (f, allowed) = match table.get_mut(name) {
            Some(entry) => entry,
            None => {
                let f = self.module.load_function(name)?;
                table.entry(name.to_string()).or_insert((f, 48 * 1024))
            }
        };
        if shared > *allowed {
            f.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared as i32,
            )?;
            *allowed = shared;
        }
        Ok(f.clone())
    }

    /// The compiled kernels' module (its globals: [`super::stamps`]).
    pub(super) fn module(&self) -> &Arc<CudaModule> {
        &self.module
    }

    /// Waits for the stream.
    pub fn sync(&self) -> Result<(), GpuError> {
        Ok(self.stream.synchronize()?)
    }

    /// The stream kernels launch on now: the main stream, or the side
    /// stream inside [`Gpu::fork`].
    pub fn launch_stream(&self) -> &CudaStream {
        if self.side.active.load(Ordering::Relaxed) {
            &self.side.stream
        } else {
            &self.stream
        }
    }

    /// Runs `work`'s launches on the side stream, after everything the
    /// main stream holds so far, so that they overlap what the main stream
    /// gets next; [`Gpu::join`] makes the main stream wait for them. The
    /// work must only launch kernels (cuBLAS stays on the main stream) and
    /// touch buffers the main stream leaves alone until the join. Inside a
    /// graph capture the fork and join become the graph's edges. With
    /// `SPECULA_FORK=0` `work` runs on the main stream, in order.
    pub fn fork<R>(&self, work: impl FnOnce() -> R) -> Result<R, GpuError> {
        if !self.side.enabled {
            return Ok(work());
        }
        need_main(self)?;
        self.side.fork.record(&self.stream)?;
        self.side.stream.wait(&self.side.fork)?;
        self.side.active.store(true, Ordering::Relaxed);
        let out = work();
        self.side.active.store(false, Ordering::Relaxed);
        self.side.join.record(&self.side.stream)?;
        Ok(out)
    }

    /// Makes the main stream wait for the last [`Gpu::fork`]'s work.
    pub fn join(&self) -> Result<(), GpuError> {
        if self.side.enabled {
            need_main(self)?;
            self.stream.wait(&self.side.join)?;
        }
        Ok(())
    }
}

/// `Ok` on the main stream; forks do not nest.
fn need_main(gpu: &Gpu) -> Result<(), GpuError> {
    if gpu.side.active.load(Ordering::Relaxed) {
        return Err(GpuError::Shape(
            "a fork of the GPU's work inside another fork".into(),
        ));
    }
    Ok(())
}

/// An element type the kernels are compiled for.
pub trait GpuElement: DeviceRepr + ValidAsZeroBits + Copy + Default + 'static {
    /// Kernel name suffix.
    const SUFFIX: &'static str;
    /// Bytes per element.
    const BYTES: usize;
    /// From f32 (round to nearest even).
    fn from_f32(v: f32) -> Self;
    /// To f32.
    fn to_f32(self) -> f32;
}

impl GpuElement for f32 {
    const SUFFIX: &'static str = "f32";
    const BYTES: usize = 4;
    fn from_f32(v: f32) -> f32 {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl GpuElement for half::bf16 {
    const SUFFIX: &'static str = "bf16";
    const BYTES: usize = 2;
    fn from_f32(v: f32) -> half::bf16 {
        half::bf16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
}

/// Times stream work with a pair of CUDA events (created with timing
/// enabled), the start recorded behind a short wait on the GPU
/// ([`GpuTimer::HOLD_NS`], `hold.cu`): the host's launch work for the timed
/// launches is then done before the GPU reaches the start, so the interval
/// is the GPU's time for them, not the host's driver calls as well
/// (`SPECULA_TIMER_HOLD=0`: no hold, the old way, for comparisons).
pub struct GpuTimer {
    start: CudaEvent,
    stop: CudaEvent,
    hold: bool,
}

impl GpuTimer {
    /// Two timing events.
    pub fn new(gpu: &Gpu) -> Result<GpuTimer, GpuError> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(GpuTimer {
            start: gpu.ctx.new_event(flags)?,
            stop: gpu.ctx.new_event(flags)?,
            hold: crate::switch::on_off("SPECULA_TIMER_HOLD", true),
        })
    }

    /// How long the GPU waits before the start event: far longer than the
    /// host takes to record the start and launch a few kernels.
    pub const HOLD_NS: u64 = 500_000;

    /// Holds the stream for [`GpuTimer::HOLD_NS`] (a plain launch, never a
    /// programmatic dependent) and records the start behind it.
    pub fn start(&self, gpu: &Gpu) -> Result<(), GpuError> {
        if !self.hold {
            return Ok(self.start.record(&gpu.stream)?);
        }
        super::hold::hold_stream(gpu, Self::HOLD_NS)?;
        Ok(self.start.record(&gpu.stream)?)
    }

    /// Records the stop and returns the milliseconds in between (waits for it).
    pub fn stop_ms(&self, gpu: &Gpu) -> Result<f32, GpuError> {
        self.stop.record(&gpu.stream)?;
        Ok(self.start.elapsed_ms(&self.stop)?)
    }
}
