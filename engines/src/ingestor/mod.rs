//! The kernel-ingestor provider core: kernel descriptors, the saved-plan payload, dispatch
//! handlers and their launch-value contracts, the ingestor engine, plan capture (save) and
//! restore (load).
//!
//! Upstream: hip-kernel-provider `src/engines/kernel_ingestor_engine` with the final form of
//! ROCm/rocm-libraries #13315 (+ #14215, #14517); formats in `docs/ingestor.md`.
//! This module never talks to a GPU runtime directly: every device action goes through the
//! [`device::IngestorDevice`] trait, which a HIP/CUDA layer implements and tests fake.
//!
//! Trust: a saved plan holds executable GPU code. Its SHA-256 digests detect accidental damage,
//! not attacks; load only plans from a trusted source (see `docs/ingestor.md`).

pub mod arg_template;
pub mod capture;
pub mod descriptor;
pub mod device;
pub mod dispatch;
pub mod engine;
pub mod framework;
pub mod hip_device;
pub mod kernel;
pub mod launch_values;
pub mod native;
pub mod packs;
pub mod payload;
pub mod plan;
pub mod restore;

pub use capture::{CaptureEnvironment, CodeObjectReader, KpackCodeObjectReader, capture_plan};
pub use descriptor::{KernelDescriptor, KernelSource};
pub use device::{
    DeviceError, DeviceResolver, FixedDevice, IngestorDevice, IngestorModule, KernelFunction,
    ModuleStats, module_stats,
};
pub use dispatch::{DispatchHandler, DispatchRegistry, PreparedLaunch};
pub use engine::IngestorEngine;
pub use hip_device::HipIngestorDevice;
pub use restore::{RestoreEnvironment, restore_plan};
