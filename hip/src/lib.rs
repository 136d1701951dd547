//! HIP runtime layer (design D7), layered like cudarc:
//!
//! - [`sys`]: raw symbols resolved at run time with `libloading` from libamdhip64 (AMD) or
//!   libcuda (NVIDIA, HIP's NVIDIA platform mapped onto the CUDA driver API). Nothing is linked
//!   at build time, so the crate builds and its tests run on machines without ROCm or CUDA.
//! - [`result`]: one checked function per call, `Result<_, DriverError>`; messages keep the HIP
//!   name and add the platform call (`hipModuleLoadData (cuModuleLoadData) failed: …`).
//! - [`safe`]: RAII types — [`GpuRuntime`], [`Device`], [`DeviceBuffer`], [`Module`],
//!   [`Function`] (launches checked against a recorded signature), [`Stream`], [`Event`].
//!
//! `unsafe` is confined to `sys` (symbol resolution, `Send`/`Sync` of opaque handles) and to the
//! calls into it in `result`; `safe` calls `result`'s `unsafe fn`s only where its RAII
//! ownership establishes their `# Safety` conditions (each such block has a `// SAFETY:` note).
//!
//! The cargo feature `hip-sys` is reserved for linking a ROCm install at build time instead of
//! loading it; it is a documented stub today and changes nothing (gpu-toolchain.md §8 explains
//! why the `hip-runtime-sys` crate is not used by default).

pub mod result;
pub mod safe;
pub mod sys;

pub use result::{DriverError, Platform};
pub use safe::{
    ArgKind, ArgSpec, Device, DeviceBuffer, DeviceCopy, DeviceInfo, Event, Function, GpuRuntime,
    KernelArg, LaunchConfig, LaunchError, Module, NoGpu, Stream,
};
