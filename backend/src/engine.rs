//! The engine boundary: one Rust trait mirroring upstream's engine-plugin C API
//! (`plugin_sdk/.../EnginePluginApi.h`, reference `backend-c-api.md` §7).
//!
//! This module owns the contract between the backend and every engine; it never executes or
//! interprets a graph itself. Mapping to upstream entry points:
//!
//! | upstream | here |
//! |---|---|
//! | `GetAllEngineIds` / `GetEngineName` | [`Engine::name`], [`Engine::id`] (64-bit FNV-1a of the name) |
//! | `GetApplicableEngineIds` | [`Engine::check_applicable`] |
//! | `GetEngineDetails` (behavior notes, knobs) | [`Engine::behavior_notes`], [`Engine::knobs`], [`Engine::numerical_notes`] |
//! | `CreateExecutionContext` / `DestroyExecutionContext` | [`Engine::create_execution_context`] / `Drop` |
//! | `GetWorkspaceSizeFromExecutionContext` | [`ExecutionContext::workspace_size`] |
//! | `ExecuteOpGraph` | [`ExecutionContext::execute`] |
//! | `SerializeExecutionContext` (save hook) | [`PlanSerialization::serialize_execution_context`] |
//! | `CreateExecutionContextFromSerialized` (load hook) | [`PlanSerialization::create_execution_context_from_serialized`] |
//! | `DestroySerializedExecutionContext` (destroy hook) | `Drop` of the returned `Vec<u8>` |
//!
//! Beyond upstream: the save hook receives the engine id. An engine without
//! [`Engine::serialization`] makes saves and loads fail with `NOT_SUPPORTED`.

use crate::graph::OperationGraph;
use crate::status::{PluginError, PluginResult};
use std::any::Any;

/// 64-bit FNV-1a of an engine name, cast to `i64`: upstream's engine id rule
/// (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`, over the UTF-8 bytes).
pub fn engine_id_from_name(name: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

/// `hipdnnBackendBehaviorNote_t` (values from `HipdnnBackendBehaviorNote.h`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BehaviorNote {
    /// `HIPDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION` (0).
    RuntimeCompilation = 0,
    /// `HIPDNN_BEHAVIOR_NOTE_REQUIRES_LAYOUT_TRANSFORM` (1).
    RequiresLayoutTransform = 1,
    /// `HIPDNN_BEHAVIOR_NOTE_SUPPORTS_GRAPH_CAPTURE` (2).
    SupportsGraphCapture = 2,
    /// `HIPDNN_BEHAVIOR_NOTE_EXTERNAL_LIBRARY_DEPENDENCY` (3).
    ExternalLibraryDependency = 3,
    /// `HIPDNN_BEHAVIOR_NOTE_SUPPORTS_EXECUTION_PLAN_SERIALIZATION` (4): plans of this engine
    /// can be saved and loaded; `to_binary()` embeds the plan only for such engines.
    SupportsExecutionPlanSerialization = 4,
}

/// What a plan's arithmetic does that a user may need to know or refuse (the engine
/// descriptor's `NUMERICAL_NOTE` attribute, 1003, of type `NUMERICAL_NOTE`, 10). Upstream's C
/// headers define the attribute but no values; these are cuDNN's `cudnnBackendNumericalNote_t`
/// values, which hipDNN's attribute numbering otherwise follows.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumericalNote {
    /// `TENSOR_CORE` (0): products run on matrix (tensor-core / MFMA) units.
    TensorCore = 0,
    /// `DOWN_CONVERT_INPUTS` (1): inputs are rounded to a narrower type before the products
    /// (f32 as TF32: 10-bit mantissas), accumulation stays f32.
    DownConvertInputs = 1,
    /// `REDUCED_PRECISION_REDUCTION` (2): sums are accumulated in a type narrower than f32.
    ReducedPrecisionReduction = 2,
    /// `FFT` (3): convolution through a Fourier transform.
    Fft = 3,
    /// `NONDETERMINISTIC` (4): repeated executes on the same inputs may give different bits
    /// (atomics, order of parallel sums that depends on scheduling).
    Nondeterministic = 4,
    /// `WINOGRAD` (5): convolution through a Winograd transform (rounding differs from a
    /// direct sum; still deterministic).
    Winograd = 5,
    /// `WINOGRAD_TILE_4x4` (6).
    WinogradTile4x4 = 6,
    /// `WINOGRAD_TILE_6x6` (7).
    WinogradTile6x6 = 7,
    /// `WINOGRAD_TILE_13x13` (8).
    WinogradTile13x13 = 8,
}

impl NumericalNote {
    /// The C enumerator's name without its prefix (`"NONDETERMINISTIC"`), for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::TensorCore => "TENSOR_CORE",
            Self::DownConvertInputs => "DOWN_CONVERT_INPUTS",
            Self::ReducedPrecisionReduction => "REDUCED_PRECISION_REDUCTION",
            Self::Fft => "FFT",
            Self::Nondeterministic => "NONDETERMINISTIC",
            Self::Winograd => "WINOGRAD",
            Self::WinogradTile4x4 => "WINOGRAD_TILE_4x4",
            Self::WinogradTile6x6 => "WINOGRAD_TILE_6x6",
            Self::WinogradTile13x13 => "WINOGRAD_TILE_13x13",
        }
    }
}

/// A knob an engine exposes (upstream `KNOB_INFO`): an integer choice in `[min, max]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnobInfo {
    /// Knob type id (engine-defined).
    pub knob_type: i64,
    /// Stable name of the knob (`<engine namespace>.<knob>`, e.g. `hipkernel.kernel`): the
    /// `knob_id` an engine-override file's `autotune_metadata.knobs` entries use.
    pub name: String,
    /// Short description.
    pub description: String,
    /// Smallest allowed value.
    pub min: i64,
    /// Largest allowed value.
    pub max: i64,
    /// Value used when the config does not choose one.
    pub default: i64,
}

/// An engine config (upstream `ENGINECFG`): the engine plus its knob choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Engine id ([`engine_id_from_name`] of the engine's name).
    pub engine_id: i64,
    /// Knob choices as `(knob_type, value)`; knobs not listed take their default.
    pub knob_choices: Vec<(i64, i64)>,
}

/// One way an engine can run a graph that autotuning times as a candidate of its own
/// (RFC 0013's engine variant): the knob choices that select it, added to the config's, and a
/// label naming it in results and logs (for the GPU engine, the kernel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineVariant {
    /// Knob choices as `(knob_type, value)` that select this variant.
    pub knob_choices: Vec<(i64, i64)>,
    /// What the variant runs, e.g. `triton:conv_fprop_f16_128x64` (free text).
    pub label: String,
}

/// One tensor's memory in a variant pack, as an engine sees it.
///
/// Host memory is passed as Rust slices (the CPU engine reads and writes them safely);
/// device memory as an address and a length in bytes, valid on the handle's device for the
/// duration of the call.
#[derive(Debug)]
pub enum BufferRef<'a> {
    /// Read-only host bytes (an input).
    Host(&'a [u8]),
    /// Writable host bytes (an output, or an input the caller lets the engine write).
    HostMut(&'a mut [u8]),
    /// Device memory: address and length in bytes.
    Device {
        /// Device address.
        addr: u64,
        /// Length in bytes.
        len: usize,
    },
}

impl BufferRef<'_> {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            BufferRef::Host(s) => s.len(),
            BufferRef::HostMut(s) => s.len(),
            BufferRef::Device { len, .. } => *len,
        }
    }
    /// True when the buffer holds 0 bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Address used for alignment checks (host pointer or device address).
    pub fn addr(&self) -> u64 {
        match self {
            BufferRef::Host(s) => s.as_ptr() as u64,
            BufferRef::HostMut(s) => s.as_ptr() as u64,
            BufferRef::Device { addr, .. } => *addr,
        }
    }
}

/// A `{uid, memory}` pair of a variant pack (upstream `hipdnnPluginDeviceBuffer_t`).
#[derive(Debug)]
pub struct TensorBinding<'a> {
    /// Tensor UID.
    pub uid: i64,
    /// The tensor's memory.
    pub data: BufferRef<'a>,
}

/// What an execution context gets for one execute call.
#[derive(Debug)]
pub struct ExecuteArgs<'a, 'b> {
    /// The handle's stream (0 = default stream; meaningless for host engines).
    pub stream: u64,
    /// Workspace memory, `None` when the caller passed none.
    pub workspace: Option<BufferRef<'b>>,
    /// Bound tensors in variant-pack order.
    pub tensors: &'a mut [TensorBinding<'b>],
}

/// A built or restored plan of one engine (upstream execution context). Dropping it is
/// upstream's `DestroyExecutionContext`.
pub trait ExecutionContext: Send + Sync + Any {
    /// Workspace in bytes this context needs for every execute.
    fn workspace_size(&self) -> usize;

    /// Runs the plan on the bound tensors.
    ///
    /// # Errors
    /// `BAD_PARAM`/`INVALID_VALUE` for a missing or wrong-sized tensor or workspace;
    /// engine-specific statuses for execution failures.
    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()>;

    /// Runs the plan with execute-time shape overrides (upstream
    /// `ExecuteOpGraphWithOverrides`, RFC 0008): the tensors named in `overrides` take the given
    /// dims and strides for this call. The backend calls it only for a plan whose graph has the
    /// override-shape flag and whose engine [`Engine::supports_shape_overrides`], with
    /// `overrides` non-empty, each naming a tensor bound in `args`.
    ///
    /// # Errors
    /// `BAD_PARAM` with a message starting `shape override` for an override the plan cannot
    /// serve (the rules of [`crate::check_overrides`], or shapes its nodes refuse), before
    /// anything is written; otherwise as [`ExecutionContext::execute`]. The default refuses
    /// with `BAD_PARAM` "shape override: this engine does not execute shape overrides".
    fn execute_with_overrides(
        &self,
        args: ExecuteArgs<'_, '_>,
        overrides: &[crate::ShapeOverride],
    ) -> PluginResult<()> {
        let _ = (args, overrides);
        Err(PluginError::bad_param(
            "shape override: this engine does not execute shape overrides",
        ))
    }

    /// Why this plan's executes cannot be recorded into a device graph (a stream capture:
    /// CUDA graphs, hipGraph), or `None` when an execute only queues device work on the
    /// handle's stream (kernel launches, fills) — no host computation on the bound buffers,
    /// no synchronization, no allocation — so that a replay of the recorded work equals an
    /// execute. The default: `Some("the engine does not declare its executes capturable …")`.
    fn capture_refusal(&self) -> Option<String> {
        Some("the engine does not declare its executes capturable into a device graph".into())
    }

    /// Downcasting support (engines recognise their own contexts in the save hook).
    fn as_any(&self) -> &dyn Any;

    /// The serialized `Graph` this context runs, when it keeps one (the CPU reference engine
    /// does; its payload carries the graph). A load compares it with the envelope's tensor
    /// UIDs, and a container load with the container's graph (tensor UIDs, dims, strides, data
    /// types, virtual flags, op kinds). `None` (the default): nothing to compare.
    fn source_graph(&self) -> Option<&[u8]> {
        None
    }

    /// UIDs of the tensors this context binds at execute, when it knows them without a graph
    /// (the kernel ingestor: the launch's pointer UIDs). A load requires each to be one of the
    /// envelope's tensor UIDs. `None` (the default): nothing to compare.
    fn bound_tensor_uids(&self) -> Option<Vec<i64>> {
        None
    }
}

/// The three serialization hooks (all or none, as upstream). Destroy is `Drop` of the bytes.
pub trait PlanSerialization: Send + Sync {
    /// Save hook: the plugin payload for `ctx`, built by this engine (id `engine_id`).
    ///
    /// # Errors
    /// Any refusal; the backend reports it as `PLUGIN_ERROR` with this message kept.
    fn serialize_execution_context(
        &self,
        engine_id: i64,
        ctx: &dyn ExecutionContext,
    ) -> PluginResult<Vec<u8>>;

    /// Load hook: a new context from a payload this engine (or an older build of it) saved.
    /// `payload` borrows the caller's bytes for the duration of the call only.
    ///
    /// # Errors
    /// `INVALID_VALUE` for damaged bytes, `NOT_APPLICABLE` for valid bytes this engine cannot
    /// run here; no context is created on any failure.
    fn create_execution_context_from_serialized(
        &self,
        payload: &[u8],
    ) -> PluginResult<Box<dyn ExecutionContext>>;

    /// Load hook for a payload that is a view of the plan's one owned copy of its loaded bytes
    /// ([`crate::ExecutionPlanDescriptor::from_shared`]): the context may keep views of
    /// `payload` (cheap clones) instead of copies. The default calls
    /// [`Self::create_execution_context_from_serialized`] with the viewed bytes.
    ///
    /// # Errors
    /// As [`Self::create_execution_context_from_serialized`].
    fn create_execution_context_from_shared(
        &self,
        payload: &crate::bytes::SharedBytes,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        self.create_execution_context_from_serialized(payload)
    }

    /// Load hook for a plan loaded together with its graph (the plan part of an `HDGP`
    /// container, [`crate::ExecutionPlanDescriptor::from_shared_with_graph`]): as
    /// [`Self::create_execution_context_from_shared`], and the context may keep `graph` for
    /// what its payload does not hold. The kernel ingestor keeps it to serve execute-time
    /// shape overrides when the graph has the override-shape flag (its payload holds the
    /// launch, not the graph). The caller proves that the plan belongs to `graph`
    /// ([`crate::ExecutionPlanDescriptor::check_graph`]) before any execute. The default
    /// ignores `graph`.
    ///
    /// # Errors
    /// As [`Self::create_execution_context_from_serialized`].
    fn create_execution_context_with_graph(
        &self,
        payload: &crate::bytes::SharedBytes,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let _ = graph;
        self.create_execution_context_from_shared(payload)
    }
}

/// An engine, registered in a handle's engine registry.
pub trait Engine: Send + Sync {
    /// Engine name, unique within a handle (e.g. `hipdnn.reference.cpu`).
    fn name(&self) -> &str;

    /// Engine id: 64-bit FNV-1a of [`Engine::name`].
    fn id(&self) -> i64 {
        engine_id_from_name(self.name())
    }

    /// Whether this engine can run `graph`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` with a message naming the op, attribute and value it refuses.
    fn check_applicable(&self, graph: &OperationGraph) -> PluginResult<()>;

    /// Whether this engine's contexts serve [`ExecutionContext::execute_with_overrides`]
    /// (upstream: the plugin exports `ExecuteOpGraphWithOverrides`). A graph with the
    /// override-shape flag is offered only to engines that do. Default `false`.
    fn supports_shape_overrides(&self) -> bool {
        false
    }

    /// Whether this engine's executes read and write host memory only (every binding a
    /// [`BufferRef::Host`] / [`BufferRef::HostMut`]): the CPU reference engine. A caller that
    /// binds device buffers (autotune on a GPU handle) skips such an engine instead of running
    /// an execute that can only fail. Default `false`.
    fn needs_host_memory(&self) -> bool {
        false
    }

    /// Behavior notes of this engine for `graph`.
    fn behavior_notes(&self, graph: &OperationGraph) -> Vec<BehaviorNote>;

    /// Numerical notes of the plan this engine builds for `graph` with `config` (its knob
    /// choices can change them: TF32 adds [`NumericalNote::DownConvertInputs`]); none by
    /// default. A note describes every kernel the engine may pick for that graph and config,
    /// so a filter on notes applied before the build holds for whatever plan is built.
    fn numerical_notes(
        &self,
        _graph: &OperationGraph,
        _config: &EngineConfig,
    ) -> Vec<NumericalNote> {
        Vec::new()
    }

    /// Knobs this engine exposes for `graph` (none by default).
    fn knobs(&self, _graph: &OperationGraph) -> Vec<KnobInfo> {
        Vec::new()
    }

    /// The variants autotuning times for `graph` under `config` (each variant's knob choices
    /// are added to the config's). Empty, the default, means the engine has one way to run
    /// the graph: the config as given. An engine whose choice among kernels matters lists one
    /// variant per kernel that serves the graph, in its heuristic order.
    fn variants(&self, _graph: &OperationGraph, _config: &EngineConfig) -> Vec<EngineVariant> {
        Vec::new()
    }

    /// Builds an execution context (selects kernels, compiles, prepares launches).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` when the graph or config is not served; others as the engine defines.
    fn create_execution_context(
        &self,
        config: &EngineConfig,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>>;

    /// The serialization hooks, when this engine has them.
    fn serialization(&self) -> Option<&dyn PlanSerialization> {
        None
    }
}
