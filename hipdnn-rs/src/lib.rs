//! `hipdnn`: the Rust SDK of the hipDNN graph API.
//!
//! Describe DNN operations as a [`Graph`] over tensors identified by UIDs, **build** it for a
//! [`Handle`] (an engine is chosen and an execution plan finalized), **execute** the plan on
//! [`Buffer`]s bound by UID in a [`VariantPack`], and **save/load** it. The data model, names
//! and rules follow upstream `hipdnn_frontend` (Graph.hpp, TensorAttributes.hpp, Error.hpp)
//! and the Graph FlatBuffers schema (`schema/fbs/graph.fbs` in this repository).
//!
//! # The objects
//! - [`Handle`]: the engines a graph can be built for and the device they run on.
//!   [`Handle::new`] uses a GPU when one is usable and the CPU otherwise (the reason is logged
//!   at INFO through the `log` crate); [`Handle::cpu`] always gives the CPU reference engine,
//!   which every handle has.
//! - [`Graph`]: tensors ([`TensorAttributes`], addressed by [`TensorId`]) and operation nodes
//!   (`conv_fprop`, `matmul`, `pointwise`, …, each creating its outputs with inferred dims,
//!   strides and data type). [`Graph::validate`] checks it without a handle.
//! - [`Graph::build`]: assigns missing UIDs, validates, lowers the graph to the backend and
//!   builds an execution plan with the first engine (in heuristic order) that accepts it.
//! - [`Graph::execute`]: runs the plan on a [`VariantPack`] that binds every non-virtual tensor
//!   UID to a buffer (`&buffer` for inputs, `&mut buffer` for outputs) plus a workspace of
//!   [`Graph::workspace_size`] bytes. Sizes, element types and alignments are checked first.
//! - Saving: [`Graph::to_binary`] gives the graph with its plan (an `HDGP` container) or the
//!   bare graph when there is no saveable plan; [`Graph::from_binary`] loads either, restoring
//!   the plan without kernel selection or compilation. [`Graph::to_compiled_plan_binary`] /
//!   [`Graph::from_compiled_plan_binary`] save and load the plan alone. A loaded plan saves
//!   again byte-identically. [`Graph::to_json`] / [`Graph::from_json`] and
//!   [`Graph::to_graph_bytes`] / [`Graph::from_graph_bytes`] hold the graph alone.
//! - Errors are [`Error`]: an upstream [`ErrorCode`], a message naming the node, tensor and
//!   attribute, and the failing layer's typed [`Cause`].
//!
//! # Example: graph → build → execute → save → load
//! ```
//! use hipdnn::{Buffer, DataType, Graph, Handle, MatmulAttributes, TensorAttributes,
//!              VariantPack};
//! # fn main() -> hipdnn::Result<()> {
//! let handle = Handle::cpu()?;
//! let mut g = Graph::new();
//! g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
//! let a = g.tensor(TensorAttributes::new("a").uid(1).dims([1, 2, 3]).strides([6, 3, 1]));
//! let b = g.tensor(TensorAttributes::new("b").uid(2).dims([1, 3, 2]).strides([6, 2, 1]));
//! let c = g.matmul(a, b, MatmulAttributes::new());
//! g.set_output(c, true).set_uid(c, 3);
//! g.build(&handle)?;
//!
//! let (x, y) = (Buffer::from_slice(&[1f32, 2., 3., 4., 5., 6.]), Buffer::from_slice(&[1f32; 6]));
//! let mut out = Buffer::<f32>::zeros(4);
//! let mut ws = Buffer::<u8>::zeros(g.workspace_size()?);
//! g.execute(&handle, VariantPack::new().with(1, &x).with(2, &y).with(3, &mut out), Some(&mut ws))?;
//! assert_eq!(out.to_vec()?, [6., 6., 15., 15.]);
//!
//! let saved = g.to_binary()?; // graph + plan (HDGP container)
//! let loaded = Graph::from_binary(&Handle::cpu()?, &saved)?;
//! assert_eq!(loaded.to_binary()?, saved); // a loaded plan re-saves byte-identically
//! # Ok(())
//! # }
//! ```
//!
//! # Logging
//! hipdnn logs through the [`log`](https://docs.rs/log) facade (targets `hipdnn::…`,
//! `hipdnn_engines::…`, `hipdnn_hip::…`); like every library on that facade it prints nothing
//! until the application installs a logger. With [`env_logger`](https://docs.rs/env_logger)
//! (`env_logger::init()` at the start of `main`), `RUST_LOG=info` shows which device a
//! [`Handle`] uses and why, `RUST_LOG=hipdnn=debug` adds the GPU runtime libraries that were
//! tried; a `tracing` application sees the records through `tracing-log`'s `LogTracer`. What
//! is logged: INFO the handle's device and engines (or why the CPU is used); WARN a plan saved
//! as the graph alone ([`Graph::to_binary`]); DEBUG the driver libraries tried when none
//! loads. Errors are never only logged: every failure is also the returned [`Error`].
//!
//! Any `log::Log` implementation works; this one keeps the records:
//! ```
//! use std::sync::Mutex;
//! static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
//! struct Keep;
//! impl log::Log for Keep {
//!     fn enabled(&self, m: &log::Metadata<'_>) -> bool { m.level() <= log::Level::Info }
//!     fn log(&self, r: &log::Record<'_>) { SEEN.lock().unwrap().push(r.args().to_string()) }
//!     fn flush(&self) {}
//! }
//! log::set_logger(&Keep).unwrap();
//! log::set_max_level(log::LevelFilter::Info);
//! let _handle = hipdnn::Handle::cpu().unwrap();
//! assert!(SEEN.lock().unwrap().iter().any(|m| m == "hipdnn: handle on the CPU (engine hipdnn.reference.cpu)"));
//! ```
//!
//! # ndarray
//! `ndarray` is part of this API ([`Buffer::from_ndarray`], [`Buffer::to_ndarray`]); the docs
//! assume **ndarray 0.16**, re-exported as [`hipdnn::ndarray`](crate::ndarray) so that an
//! application on another ndarray version can use this one without a type mismatch.
//!
//! # half
//! Buffers of HALF and BFLOAT16 tensors are `Buffer<f16>` / `Buffer<bf16>` of the `half` crate
//! (version 2), re-exported as [`hipdnn::half`](crate::half) so that no separate dependency
//! (or version match) is needed:
//! ```
//! use hipdnn::half::f16;
//! use hipdnn::{Buffer, DataType, Element};
//! let b = Buffer::from_slice(&[f16::from_f32(1.5), f16::from_f32(-2.0)]);
//! assert_eq!(<f16 as Element>::DATA_TYPE, DataType::Half);
//! assert_eq!(b.byte_len(), 4);
//! assert_eq!(b.to_vec()?[0].to_f32(), 1.5);
//! # Ok::<(), hipdnn::Error>(())
//! ```
//!
//! # Minimum Rust version
//! Rust 1.89 (edition 2024, let-chains; the CPU engine's GEMM, `gemm` 0.19 with its `x86-v4`
//! AVX-512 kernels, needs the AVX-512 intrinsics stabilised in 1.89), checked by CI with that
//! toolchain.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
/// The README's Rust snippets, compiled and run as doc-tests.
pub struct ReadmeDoctests;

pub mod autotune;
pub mod buffer;
pub mod capture;
pub mod file;
pub mod graph;
pub mod handle;
mod persist;
mod select;

/// The `half` crate whose `f16` and `bf16` are the element types of HALF and BFLOAT16
/// buffers (version 2): `Buffer<hipdnn::half::f16>`.
pub use half;
/// The `ndarray` crate this SDK's array API uses (version 0.16).
pub use ndarray;

pub use autotune::{
    AutotuneConfig, AutotuneResult, AutotuneStorage, AutotuneStrategy, PlanSpec,
    PrimingFailurePolicy, TuneMode, WriteOutcome,
};
pub use buffer::{BUFFER_ALIGNMENT, Bind, Buffer, Element, PinnedBuffer, VariantPack};
pub use capture::DeviceGraph;
pub use file::{Form, write_atomically};
#[doc(inline)]
pub use graph::*;
pub use handle::{ExecutionDevice, GpuInfo, GpuPlatform, Handle, ModuleStats, devices};
/// What an engine says about a graph's plan (upstream `hipdnnBackendBehaviorNote_t`), for
/// writers of engines ([`hipdnn_backend::engine::Engine::behavior_notes`]); a plan saves with
/// [`Graph::to_binary`] only when its engine reports `SupportsExecutionPlanSerialization`.
///
/// ```
/// use hipdnn::BehaviorNote;
/// assert_eq!(BehaviorNote::SupportsExecutionPlanSerialization as i32, 4);
/// ```
pub use hipdnn_backend::BehaviorNote;
/// How the heuristic orders engines ([`Graph::build_with`]); `Fallback`, the default, is the
/// one mode: every applicable engine, the graph's preferred engine first, then the handle's
/// registration order (GPU engines before the CPU engine).
///
/// ```
/// use hipdnn::{DataType, Graph, Handle, HeuristicMode, PointwiseAttributes, PointwiseMode,
///              TensorAttributes};
/// let mut g = Graph::new();
/// g.set_io_data_type(DataType::Float);
/// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([4]));
/// let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Sqrt));
/// g.set_output(y, true).set_uid(y, 2);
/// g.build_with(&Handle::cpu()?, &[HeuristicMode::Fallback])?;
/// assert_eq!(HeuristicMode::default(), HeuristicMode::Fallback);
/// # Ok::<(), hipdnn::Error>(())
/// ```
pub use hipdnn_backend::HeuristicMode;
/// What a plan's arithmetic does (cuDNN's `cudnnBackendNumericalNote_t` values; the engine
/// descriptor's `NUMERICAL_NOTE` attribute): filter engines on it with
/// [`Graph::deselect_numeric_notes`] / [`Graph::select_numeric_notes`] and
/// [`Handle::set_deterministic_only`]; [`Graph::numerical_notes`] reads a built plan's.
///
/// ```
/// use hipdnn::NumericalNote;
/// assert_eq!(NumericalNote::Nondeterministic as i32, 4);
/// assert_eq!(NumericalNote::Nondeterministic.name(), "NONDETERMINISTIC");
/// ```
pub use hipdnn_backend::NumericalNote;
/// One tensor's execute-time shape override (upstream RFC 0008 phase 1), as
/// [`VariantPack::override_shape`] records it and [`VariantPack::shape_overrides`] lists it.
pub use hipdnn_backend::ShapeOverride;
/// The engine id of an engine name (64-bit FNV-1a), e.g. for
/// [`AutotuneConfig::engine_id_filter`].
pub use hipdnn_backend::engine_id_from_name;
/// Engine-override files ([`Handle::set_engine_override_file`], `HIPDNN_HEUR_CONFIG_PATH`):
/// parse or check one with [`heur_config::EngineOverrideConfig::parse`].
pub use hipdnn_backend::heur_config;
pub use persist::{
    NO_FINALIZED_PLAN_MESSAGE, NO_PLAN_MESSAGE, NOT_A_GRAPH_OR_CONTAINER, PLAN_ONLY_FILE,
};
