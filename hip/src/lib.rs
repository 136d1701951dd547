//! HIP runtime layer, layered like cudarc. It knows no engine: callers hand it
//! code objects, kernel names and the signatures they recorded.
//!
//! - [`sys`]: the one place where AMD and NVIDIA differ. One platform-neutral raw interface,
//!   the [`sys::Driver`] trait, with implementations for AMD (libamdhip64) and NVIDIA (HIP's
//!   NVIDIA platform mapped onto the CUDA driver, libcuda), loaded at run time with
//!   `libloading` by default, so the crate builds and its tests run without ROCm or CUDA.
//!   With the cargo feature `hip-sys`, the AMD driver is bound at link time through the
//!   `hip-sys` crate instead (libamdhip64 must then be installed at build time).
//! - [`result`]: one checked function per call, `Result<_, DriverError>`, with no platform
//!   `match`; messages keep the HIP name and add the platform call named by `sys`
//!   (`hipModuleLoadData (cuModuleLoadData) failed: …`).
//! - [`safe`]: RAII types — [`GpuRuntime`], [`Device`], [`DeviceBuffer`], [`Module`],
//!   [`Function`] (launches checked against a signature the caller recorded, e.g. a kernel
//!   descriptor's), [`Stream`], [`Event`], and graph capture: [`Stream::capture`] records a
//!   stream's launches into a [`CapturedGraph`], [`CapturedGraph::instantiate`] makes a
//!   [`GraphExec`] that replays them ([`GraphExec::launch`]) and takes new buffer addresses
//!   from a later capture of the same launches ([`GraphExec::update`]).
//!
//! `unsafe` is confined to `sys` (symbol resolution, the raw calls, `Send`/`Sync` of opaque
//! handles), to the calls into it in `result`, to [`KernelArg::device_ptr`], the only way to
//! hand a launch a raw device address (its contract covers replays of a captured launch), and
//! to [`Stream::borrowed`] (a caller's stream). `safe` calls `result`'s `unsafe fn`s only where its RAII
//! ownership establishes their `# Safety` conditions (each such block has a `// SAFETY:` note).

pub mod result;
pub mod safe;
pub mod sys;

pub use result::{DriverError, Platform};
pub use safe::{
    AllocationLease, ArgKind, ArgSpec, CapturedGraph, Device, DeviceBuffer, DeviceCopy, DeviceInfo,
    DeviceList, Event, Function, GpuRuntime, GraphExec, KernelArg, LaunchConfig, LaunchError,
    Module, NoGpu, PackedArgs, Stream, visible_devices,
};
