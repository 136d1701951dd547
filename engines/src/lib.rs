//! `hipdnn-engines`: the engines behind a hipDNN handle.
//!
//! - [`mod@reference`]: the CPU reference engine (`hipdnn.reference.cpu`), always present, saveable
//!   plans; also the numerical reference of every GPU test.
//! - [`ingestor`]: the kernel-ingestor engine core (kernel descriptors, HKIP/HKSP payload,
//!   capture and restore) and the [`ingestor::HipIngestorDevice`] adapter over `hipdnn-hip`.
//! - [`registry`]: the one pack registry: every dispatch handler (launch contract) and the
//!   kernel families of the packed kernels that map onto them.
//! - [`gpu`]: opening a GPU engine over the packed kernel archives of one device.
//!
//! This crate reaches a GPU runtime only through `hipdnn-hip` (loaded at run time, or linked
//! with the `hip-sys` feature) and never parses
//! container formats (that is the backend's job).

pub mod gpu;
pub mod ingestor;
pub mod kernel_location;
pub mod reference;
pub mod registry;
