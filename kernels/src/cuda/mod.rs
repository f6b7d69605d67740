//! CUDA kernels compiled at run time by NVRTC for the device's architecture,
//! launched through cudarc (dynamic loading: nothing CUDA is needed to build),
//! with GEMMs through cuBLAS and timing through CUDA events.

mod attention;
pub mod check;
mod check_attention;
mod check_model;
mod device;
mod linear;
mod model_ops;
mod ops;
mod pdl;
pub mod split_sweep;
pub mod timing;

pub use attention::*;
pub use device::{Gpu, GpuElement, GpuError, GpuTimer, SmallRowLinear};
pub use linear::*;
pub use model_ops::*;
pub use ops::*;
