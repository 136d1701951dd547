//! Building, executing, saving and loading a graph's execution plan (module `persist`).
//!
//! This module wires [`Graph`] to the backend: `build` (validate → operation graph → engine
//! configs → execution plan), `execute`, `workspace_size`, and the four save/load entry points
//! of upstream's frontend (`to_binary`/`from_binary`, `to_compiled_plan_binary`/
//! `from_compiled_plan_binary`). It never parses
//! a container or an envelope itself (the backend's codecs do, once per load) and never copies
//! loaded bytes more than once.
//!
//! # Re-saving a loaded plan
//! A plan loaded from bytes saves again as **the plan bytes it was loaded from**, byte for byte,
//! without asking the engine (upstream PR #14517). A re-save therefore keeps the original
//! kernel, provider version and format versions; a newer kernel in an upgraded provider never
//! enters it — to pick one up, load the graph alone and `build` again.
//!
//! # One copy of the loaded bytes
//! A load copies the caller's bytes exactly once, into a [`SharedBytes`] buffer: for
//! `from_binary` the whole container, for `from_compiled_plan_binary` the plan part. Everything
//! else is a view of that buffer: the plan cache (seeded with the plan part), the graph part
//! kept for the whole-container re-save, and what the engine keeps (the kernel ingestor's code
//! object). A loaded GPU plan therefore holds one host copy of its code object.
//!
//! Beyond upstream (which promises only the plan part): `to_binary()` of a graph loaded with
//! `from_binary()` and not changed since returns the identical container bytes, even when
//! another producer wrote them. "Not changed" is decided at save time: the graph's serialized
//! bytes are compared with those of the graph read again from the kept graph part (nothing is
//! serialized on load).

use crate::buffer::{Buffer, VariantPack};
use crate::handle::{Handle, backend_error};
use crate::{Error, ErrorCode, Graph, Result};
use hipdnn_backend::{
    BehaviorNote, EngineConfig, ExecutionPlanDescriptor, HeuristicMode, NumericalNote,
    OperationGraph, SharedBytes, hdgp,
};
use std::sync::Arc;

/// Message of the error for executing or saving a graph without a plan.
pub const NO_PLAN_MESSAGE: &str =
    "Graph has no compiled execution plan. Call build() or from_compiled_plan_binary() first.";

/// Message prefix of the error for `to_compiled_plan_binary` without a finalized plan.
pub const NO_FINALIZED_PLAN_MESSAGE: &str = "Graph has no finalized compiled execution plan. \
     Call build() or from_compiled_plan_binary() first.";

/// Message of `from_binary` for bytes that are neither an `HDGP` container nor a `Graph`.
pub const NOT_A_GRAPH_OR_CONTAINER: &str =
    "not a hipDNN graph or container (no HDGP marker and no valid Graph root)";

/// Message of `from_binary` for a bare plan (`to_compiled_plan_binary`'s output).
pub const PLAN_ONLY_FILE: &str = "this is a plan-only file; load it with from_compiled_plan_binary";

/// The `from_binary` error for non-container `bytes` the graph reader refused with `e`: a
/// plain-words text first when the bytes have no valid Graph root (a bare plan is named as
/// such), the reader's own text (verifier detail) after it; `e` unchanged when the root was
/// valid (the graph itself is wrong, e.g. duplicate UIDs).
fn not_a_graph(bytes: &[u8], e: Error) -> Error {
    if hipdnn_backend::PlanEnvelope::parse(bytes).is_ok() {
        return Error::new(
            ErrorCode::InvalidValue,
            format!("{PLAN_ONLY_FILE} ({})", e.message),
        );
    }
    if flatbuffers::root::<hipdnn_schema::graph::Graph>(bytes).is_ok()
        && !e.message.starts_with(crate::graph::NOT_A_GRAPH)
    {
        return e;
    }
    Error {
        message: format!("{NOT_A_GRAPH_OR_CONTAINER}: {}", e.message),
        ..e
    }
}

/// What `from_binary` loaded: views of the one owned copy of the container.
#[derive(Clone)]
struct LoadedContainer {
    /// The whole container as given to `from_binary` (the one owned copy).
    container: SharedBytes,
    /// View of its graph blob.
    graph: SharedBytes,
    /// View of its plan blob; the plan cache was seeded with this same view.
    plan: SharedBytes,
}

impl LoadedContainer {
    /// True when `graph_bytes` (the graph's bytes now) equal the bytes of the graph read from
    /// the kept graph part, i.e. the graph was not changed since the load.
    fn graph_is_unchanged(&self, graph_bytes: &[u8]) -> bool {
        Graph::from_graph_bytes(&self.graph)
            .and_then(|g| g.to_graph_bytes())
            .is_ok_and(|b| b == graph_bytes)
    }
}

/// The compiled part of a graph: its active plan and, for a loaded graph, what it was loaded
/// from. Not part of graph equality.
#[derive(Clone, Default)]
pub(crate) struct CompiledState {
    plan: Option<Arc<ExecutionPlanDescriptor>>,
    /// The plan's engine reports SUPPORTS_EXECUTION_PLAN_SERIALIZATION (always true for a
    /// loaded plan: it was saved by such an engine).
    serializable: bool,
    engine_name: String,
    loaded: Option<LoadedContainer>,
    /// What every execute checks its variant pack against, decided once when the plan is
    /// built or loaded: the graph's non-virtual tensors as they were then; for a plan loaded
    /// without a graph, those of the graph its engine keeps (the CPU engine), else none.
    pack_rules: Arc<[PackRule]>,
    /// The plan's numerical notes, decided when it is built or loaded; `None` for a plan
    /// loaded without a graph from an engine that keeps none.
    numerical_notes: Option<Vec<NumericalNote>>,
}

/// The numerical notes `plan`'s engine gives for `op` with the plan's engine config (a
/// loaded plan has none: its engine's defaults).
fn notes_of(plan: &ExecutionPlanDescriptor, op: &OperationGraph) -> Vec<NumericalNote> {
    let config = plan
        .engine_config()
        .cloned()
        .unwrap_or_else(|| hipdnn_backend::EngineConfig {
            engine_id: plan.engine_id(),
            knob_choices: Vec::new(),
        });
    plan.engine().numerical_notes(op, &config)
}

/// One non-virtual tensor's variant-pack rule, decided when the plan is built or loaded.
#[derive(Debug)]
pub(crate) struct PackRule {
    pub(crate) uid: i64,
    name: String,
    data_type: crate::DataType,
    dims: Vec<i64>,
    strides: Vec<i64>,
    /// Bytes the bound buffer must hold; `None` when the extent overflows (refused on execute).
    need: Option<usize>,
    /// A node of the graph writes the tensor (a read-only binding is refused).
    written: bool,
    /// A baked (non-runtime) scalar: no buffer needed.
    baked: bool,
}

/// The variant-pack rules of `g`'s non-virtual tensors with a UID, in tensor order.
pub(crate) fn pack_rules(g: &Graph) -> Arc<[PackRule]> {
    g.tensors()
        .filter(|(_, t)| !t.is_virtual)
        .filter_map(|(_, t)| {
            let uid = t.uid?;
            Some(PackRule {
                uid,
                name: t.name.clone(),
                data_type: t.data_type,
                dims: t.dims.clone(),
                strides: t.strides.clone(),
                need: required_bytes(&t.dims, &t.strides, element_size(t.data_type)),
                written: g.is_written(uid),
                baked: t.value.is_some() && !t.is_runtime_pass_by_value,
            })
        })
        .collect()
}

impl PartialEq for CompiledState {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for CompiledState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledState")
            .field("plan", &self.plan.as_ref().map(|p| p.engine_id()))
            .field("engine", &self.engine_name)
            .field("serializable", &self.serializable)
            .field(
                "loaded_container_bytes",
                &self.loaded.as_ref().map(|l| l.container.len()),
            )
            .finish()
    }
}

impl Graph {
    /// Validates the graph, lowers it to the backend and builds an execution plan with the
    /// first engine (in heuristic order) that accepts it, using the default heuristic mode
    /// ([`HeuristicMode::Fallback`]). [`Graph::build_with`] takes the modes explicitly.
    ///
    /// Steps (upstream `build`): assign missing UIDs, `validate()`, serialize to a `Graph`
    /// FlatBuffer, verify it as the backend's operation graph, ask the heuristic for engine
    /// configs, and finalize a plan from the first config whose engine builds one. Replaces any
    /// previous plan.
    ///
    /// # Errors
    /// `INVALID_VALUE` for a tensor whose extent overflows (checked arithmetic, naming the
    /// tensor); the `validate()` errors; `GRAPH_NOT_SUPPORTED` when no engine applies (the message lists
    /// each engine's reason); `HIPDNN_BACKEND_ERROR` when every applicable engine fails to build.
    pub fn build(&mut self, handle: &Handle) -> Result<()> {
        self.build_with(handle, &[HeuristicMode::default()])
    }

    /// [`Graph::build`] with the heuristic modes to use, in order (upstream
    /// `create_execution_plans(modes)` + `build_plans`). Only the first mode is used today
    /// (every mode maps to FALLBACK).
    ///
    /// # Errors
    /// `INVALID_VALUE` "build_with needs at least one heuristic mode" for an empty `modes`
    /// (nothing is changed); otherwise as [`Graph::build`].
    pub fn build_with(&mut self, handle: &Handle, modes: &[HeuristicMode]) -> Result<()> {
        self.build_inner(handle, modes, &[])
    }

    /// [`Graph::build`] with engine knob choices (upstream: an engine config's knob choices):
    /// each `(knob type, value)` is applied to every engine that lists that knob type with
    /// `value` in its range (`Engine::knobs`); other engines build as with [`Graph::build`].
    /// The GPU kernel-ingestor engine's knobs are
    /// [`hipdnn_engines::ingestor::engine::KNOB_BENCHMARK`] (see [`Graph::build_benchmarked`])
    /// , [`hipdnn_engines::ingestor::engine::KNOB_TF32`] (1 = f32 graphs may run on entries
    /// with TF32 tensor-core products: inputs rounded to 10-bit mantissas, f32 accumulation)
    /// and [`hipdnn_engines::ingestor::engine::KNOB_KERNEL`] (run exactly the kernel whose id
    /// it is; [`Graph::autotune`] times each kernel this way).
    ///
    /// # Errors
    /// As [`Graph::build`].
    pub fn build_with_knobs(&mut self, handle: &Handle, knobs: &[(i64, i64)]) -> Result<()> {
        self.build_inner(handle, &[HeuristicMode::default()], knobs)
    }

    /// [`Graph::build`] with benchmarking: an engine that offers the benchmarking knob (the
    /// GPU kernel-ingestor engine's `KNOB_BENCHMARK`,
    /// [`hipdnn_engines::ingestor::engine::KNOB_BENCHMARK`]) times every kernel that serves
    /// the graph on the device — scratch tensors it allocates itself, warm-up launches, device
    /// events, the median of several rounds — and the plan keeps only the fastest; other
    /// engines build as with [`Graph::build`]. The built plan is a normal one: execute runs
    /// the chosen kernel, `to_compiled_plan_binary` saves only it, and a loaded plan runs no
    /// benchmark. Costs one timed set of launches per candidate (milliseconds to seconds).
    ///
    /// # Errors
    /// As [`Graph::build`]; a benchmark launch that fails makes that engine's build fail (the
    /// next engine is tried).
    pub fn build_benchmarked(&mut self, handle: &Handle) -> Result<()> {
        self.build_with_knobs(
            handle,
            &[(hipdnn_engines::ingestor::engine::KNOB_BENCHMARK, 1)],
        )
    }

    fn build_inner(
        &mut self,
        handle: &Handle,
        modes: &[HeuristicMode],
        knobs: &[(i64, i64)],
    ) -> Result<()> {
        let Some(&mode) = modes.first() else {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "build_with needs at least one heuristic mode",
            ));
        };
        let op = self.lower()?;
        let configs = handle.backend().engine_configs(&op, mode).map_err(|e| {
            Error::new(
                ErrorCode::GraphNotSupported,
                format!("No engine supports the graph: {}", e.message),
            )
        })?;
        let mut failures = Vec::new();
        // Engines the filters skipped, each with the filter's reason.
        let mut skipped = Vec::new();
        for config in &configs {
            let mut config = config.clone();
            if let Some(engine) = handle.backend().engine(config.engine_id) {
                let offered = engine.knobs(&op);
                for &(t, v) in knobs {
                    if offered
                        .iter()
                        .any(|k| k.knob_type == t && (k.min..=k.max).contains(&v))
                    {
                        config.knob_choices.push((t, v));
                    }
                }
                let refusal = self.filter.refuse_before_build(
                    engine.as_ref(),
                    &config,
                    &op,
                    handle.deterministic_only(),
                );
                if let Some(why) = refusal {
                    log::info!("hipdnn: engine {} skipped: {why}", engine.name());
                    skipped.push(format!("{}: {why}", engine.name()));
                    continue;
                }
            }
            match ExecutionPlanDescriptor::finalize(handle.backend(), &config, &op) {
                Ok(plan) => {
                    if let Some(why) = self.filter.refuse_after_build(plan.workspace_size()) {
                        let name = plan.engine().name().to_string();
                        log::info!("hipdnn: engine {name} skipped: {why}");
                        skipped.push(format!("{name}: {why}"));
                        continue;
                    }
                    self.install_plan(plan, &op, &config);
                    return Ok(());
                }
                Err(e) => failures.push(format!("{}: {}", e.status.name(), e.message)),
            }
        }
        if !skipped.is_empty() {
            let mut message = format!(
                "No engine is left after the engine filters: {}",
                skipped.join("; ")
            );
            if !failures.is_empty() {
                message.push_str(&format!("; the others failed: {}", failures.join("; ")));
            }
            return Err(Error::new(ErrorCode::GraphNotSupported, message));
        }
        Err(Error::new(
            ErrorCode::HipdnnBackendError,
            format!("No execution plan could be built: {}", failures.join("; ")),
        ))
    }

    /// Makes `plan` (built from `config` for `op`, the lowering of this graph) the active plan.
    pub(crate) fn install_plan(
        &mut self,
        plan: ExecutionPlanDescriptor,
        op: &OperationGraph,
        config: &EngineConfig,
    ) {
        let notes = plan.engine().numerical_notes(op, config);
        let engine = plan.engine();
        let serializable = engine
            .behavior_notes(op)
            .contains(&BehaviorNote::SupportsExecutionPlanSerialization);
        log::info!(
            "hipdnn: built an execution plan with engine {}",
            engine.name()
        );
        self.compiled = CompiledState {
            engine_name: engine.name().to_string(),
            plan: Some(Arc::new(plan)),
            serializable,
            loaded: None,
            pack_rules: pack_rules(self),
            numerical_notes: Some(notes),
        };
    }

    /// Assigns UIDs, fills types, checks extents, validates and lowers the graph to the
    /// backend's operation graph (the first steps of every build).
    pub(crate) fn lower(&mut self) -> Result<OperationGraph> {
        self.assign_uids();
        self.fill_from_context();
        self.check_extents()?;
        self.validate()?;
        let bytes = self.to_graph_bytes()?;
        OperationGraph::from_shared(SharedBytes::from(bytes))
            .map_err(|e| backend_error("Cannot create the operation graph.", e))
    }

    /// Refuses a tensor whose extent cannot be computed: with non-negative dims
    /// and strides of equal rank, the buffer's byte span `(1 + Σ (dim−1)·stride) · element
    /// size` and the element count `Π dims` must fit `isize::MAX`, computed with checked
    /// arithmetic. Other malformed layouts are left to `validate`.
    ///
    /// # Errors
    /// `INVALID_VALUE` "tensor 'a' (uid 1): dims [..] strides [..] overflow the address space".
    fn check_extents(&self) -> Result<()> {
        for (_, t) in self.tensors() {
            if t.dims.len() != t.strides.len() || t.dims.iter().chain(&t.strides).any(|&x| x < 0) {
                continue;
            }
            let bytes = required_bytes(&t.dims, &t.strides, element_size(t.data_type));
            let count = t.dims.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
            if bytes.is_none_or(|b| b > isize::MAX as usize) || count.is_none() {
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "tensor '{}' (uid {}): dims {:?} strides {:?} overflow the address space",
                        t.name,
                        t.uid.map_or_else(|| "unset".to_string(), |u| u.to_string()),
                        t.dims,
                        t.strides
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Fills unset types from the graph (upstream `fill_from_context`): a tensor whose data type
    /// is `Unset` takes [`Graph::context_data_type`] (the same rule `validate` applies); a node
    /// whose compute type is `Unset` takes the graph's compute type.
    pub fn fill_from_context(&mut self) -> &mut Self {
        let compute = self.compute_data_type();
        let ids: Vec<_> = self.tensors().map(|(t, _)| t).collect();
        for t in ids {
            let dt = self.context_data_type(self.tensor_attributes(t));
            self.tensor_attributes_mut(t).data_type = dt;
        }
        let nodes: Vec<_> = self.nodes().map(|(n, _)| n).collect();
        for n in nodes {
            let c = self.node_mut(n).compute_data_type_mut();
            if *c == crate::DataType::Unset {
                *c = compute;
            }
        }
        self
    }

    /// True when the graph holds an active execution plan (built or loaded).
    pub fn has_plan(&self) -> bool {
        self.compiled.plan.is_some()
    }

    /// Name of the engine that runs the active plan.
    ///
    /// # Errors
    /// `INVALID_VALUE` [`NO_PLAN_MESSAGE`] without a plan.
    pub fn engine_name(&self) -> Result<&str> {
        self.plan()?;
        Ok(&self.compiled.engine_name)
    }

    /// Id of the engine that runs the active plan (upstream `get_execution_plan_engine_id`).
    ///
    /// # Errors
    /// `INVALID_VALUE` [`NO_PLAN_MESSAGE`] without a plan.
    pub fn execution_plan_engine_id(&self) -> Result<i64> {
        Ok(self.plan()?.engine_id())
    }

    /// Knob choices of the engine config the active plan was built from, as `(knob type,
    /// value)` (empty for default knobs, and for a loaded plan, which keeps no config): how
    /// to see that an engine-override rule or [`Graph::autotune`] chose a GPU kernel
    /// (`hipkernel.kernel`).
    ///
    /// # Errors
    /// `INVALID_VALUE` [`NO_PLAN_MESSAGE`] without a plan.
    pub fn execution_plan_knob_choices(&self) -> Result<Vec<(i64, i64)>> {
        Ok(self
            .plan()?
            .engine_config()
            .map(|c| c.knob_choices.clone())
            .unwrap_or_default())
    }

    fn plan(&self) -> Result<&Arc<ExecutionPlanDescriptor>> {
        self.compiled
            .plan
            .as_ref()
            .ok_or_else(|| Error::new(ErrorCode::InvalidValue, NO_PLAN_MESSAGE))
    }

    /// The active plan's numerical notes ([`NumericalNote`]: what its engine's arithmetic does
    /// for this graph: `WINOGRAD` for a CPU 3×3 conv, `TENSOR_CORE` for a GPU f16 GEMM, …),
    /// decided when the plan was built or loaded.
    ///
    /// # Errors
    /// `INVALID_VALUE` [`NO_PLAN_MESSAGE`] without a plan, and "the plan was loaded without its
    /// graph" for a plan from [`Graph::from_compiled_plan_binary`] whose engine keeps
    /// no graph (the GPU engine: load it with [`Graph::from_binary`] to know its notes).
    pub fn numerical_notes(&self) -> Result<&[NumericalNote]> {
        self.plan()?;
        self.compiled.numerical_notes.as_deref().ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidValue,
                "the plan was loaded without its graph, so its numerical notes are unknown; \
                 load it with Graph::from_binary to know them",
            )
        })
    }

    /// Workspace in bytes the active plan needs for every execute.
    ///
    /// # Errors
    /// `INVALID_VALUE` [`NO_PLAN_MESSAGE`] without a plan.
    pub fn workspace_size(&self) -> Result<usize> {
        Ok(self.plan()?.workspace_size())
    }

    /// Executes the active plan on the buffers of `pack` (tensor → buffer).
    ///
    /// Bindings made by [`crate::TensorId`] or by name ([`VariantPack::bind`],
    /// [`VariantPack::named`]) are first resolved to UIDs against this graph. Before the
    /// engine runs, every non-virtual tensor of the graph must be bound, and each
    /// bound buffer must hold at least the tensor's extent (`(1 + Σ (dim−1)·stride)` elements
    /// of its data type, computed with checked arithmetic) and hold elements of the tensor's
    /// data type (`Buffer<T>` with `T::DATA_TYPE`); a plan loaded without a graph is checked
    /// against the graph its engine runs when the engine keeps one (the CPU engine), else only
    /// by the backend (UIDs, alignments, workspace). `workspace` must hold at least [`Graph::workspace_size`] bytes
    /// and may be `None` when that is 0. A tensor given a shape override
    /// ([`VariantPack::override_shape`]) is checked at the override's dims and strides.
    ///
    /// # Errors
    /// `INVALID_VALUE` without a plan, for a binding by id or name that does not resolve (a
    /// handle outside the graph, an unknown or ambiguous name, a virtual tensor), for a
    /// missing tensor, a short buffer or workspace, and with a message starting `shape
    /// override` for an override that breaks a rule or shapes the graph does not run at
    /// (nothing is written then);
    /// `GRAPH_NOT_SUPPORTED` `graph capture: engine "<name>": <reason>` inside
    /// [`Handle::capture`] for a plan whose executes cannot be recorded (nothing recorded);
    /// `HIPDNN_BACKEND_ERROR` when the backend or engine refuses (alignment, unknown UID,
    /// execution failure), with the backend status and message.
    pub fn execute(
        &self,
        handle: &Handle,
        mut pack: VariantPack<'_>,
        workspace: Option<&mut Buffer<u8>>,
    ) -> Result<()> {
        let plan = self.plan()?;
        pack.resolve(self)?;
        if !pack.overrides.is_empty() {
            self.check_overrides(plan, &pack)?;
        }
        self.check_pack(&pack)?;
        // The backend's one workspace rule and message, reported as INVALID_VALUE here as the
        // SDK's other variant-pack refusals are.
        plan.check_workspace(workspace.as_ref().map_or(0, |w| w.byte_len()))
            .map_err(|e| Error::new(ErrorCode::InvalidValue, e.message))?;
        if let Some(recorder) = &handle.recorder {
            if let Some(why) = plan.capture_refusal() {
                return Err(Error::new(
                    ErrorCode::GraphNotSupported,
                    format!("{}: {why}", crate::handle::CAPTURE),
                ));
            }
            let ws = workspace.as_deref().and_then(|w| w.device_lease());
            recorder.record(std::mem::take(&mut pack.leases).into_iter().chain(ws));
        }
        let VariantPack {
            mut bindings,
            overrides,
            ..
        } = pack;
        let workspace = workspace.map(crate::buffer::Bind::bind);
        if overrides.is_empty() {
            return plan
                .execute_bindings(handle.backend(), &mut bindings, workspace)
                .map_err(|e| backend_error("Execution failed.", e));
        }
        plan.execute_bindings_with_overrides(handle.backend(), &mut bindings, workspace, &overrides)
            .map_err(|e| {
                if e.status == hipdnn_backend::Status::BadParam
                    && e.message.starts_with("shape override")
                {
                    Error::new(ErrorCode::InvalidValue, e.message.clone()).with_cause(e)
                } else {
                    backend_error("Execution failed.", e)
                }
            })
    }

    /// The SDK's checks of a pack's shape overrides (RFC 0008 §4.2.1, before the backend's):
    /// the plan's override flag, then [`hipdnn_backend::check_overrides`] against the
    /// non-virtual tensors' built dims and strides (left to the backend and engine for a plan
    /// loaded alone whose engine keeps no graph).
    fn check_overrides(
        &self,
        plan: &hipdnn_backend::ExecutionPlanDescriptor,
        pack: &VariantPack<'_>,
    ) -> Result<()> {
        if !plan.is_override_shape_enabled() {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                "shape overrides need a graph built with the override-shape flag: call \
                 Graph::set_override_shape_enabled(true) before build",
            ));
        }
        let rules = &self.compiled.pack_rules;
        if rules.is_empty() && self.tensors().next().is_none() {
            // A plan loaded alone whose engine keeps no graph (a GPU plan-only file): the SDK
            // knows no built shapes; the backend and the engine check (or refuse) the
            // overrides with their own messages.
            return Ok(());
        }
        hipdnn_backend::check_overrides(&pack.overrides, |uid| {
            if let Some(r) = rules.iter().find(|r| r.uid == uid) {
                return Some(hipdnn_backend::BuiltShape {
                    dims: &r.dims,
                    strides: &r.strides,
                    is_virtual: false,
                });
            }
            self.tensor_by_uid(uid)
                .map(|t| self.tensor_attributes(t))
                .filter(|t| t.is_virtual)
                .map(|t| hipdnn_backend::BuiltShape {
                    dims: &t.dims,
                    strides: &t.strides,
                    is_virtual: true,
                })
        })
        .map_err(|m| Error::new(ErrorCode::InvalidValue, m))
    }

    /// True when a node of the graph writes the tensor with UID `uid`.
    fn is_written(&self, uid: i64) -> bool {
        self.tensor_by_uid(uid)
            .is_some_and(|t| self.producer(t).is_some())
    }

    /// Checks `pack` against the plan's [`PackRule`]s (one rule for built and loaded plans:
    /// bound, typed and sized).
    fn check_pack(&self, pack: &VariantPack<'_>) -> Result<()> {
        Self::check_pack_rules(&self.compiled.pack_rules, pack)
    }

    /// Checks `pack` against `rules`: every tensor a rule names is bound (unless baked), typed
    /// and sized, and an output is not bound read-only.
    pub(crate) fn check_pack_rules(rules: &[PackRule], pack: &VariantPack<'_>) -> Result<()> {
        for t in rules.iter() {
            let uid = t.uid;
            let entry = pack
                .bindings
                .iter()
                .position(|b| b.uid == uid)
                .map(|i| (&pack.bindings[i], pack.meta[i]));
            if t.written && entry.is_some_and(|(_, m)| m.read_only) {
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "tensor '{}' (uid {uid}) is an output of the graph but its buffer is bound read-only; bind it with VariantPack::output (&mut)",
                        t.name
                    ),
                ));
            }
            let Some((entry, meta)) = entry else {
                if t.baked {
                    continue; // a baked scalar needs no buffer
                }
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "the variant pack has no buffer for tensor '{}' (uid {uid})",
                        t.name
                    ),
                ));
            };
            if let Some(bt) = meta.element_type
                && bt != t.data_type
                && (bt != crate::DataType::Uint8 || t.data_type.has_element_type())
            {
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "buffer for tensor '{}' (uid {uid}) holds {} elements, but the tensor's data type is {}",
                        t.name,
                        bt.schema_name(),
                        t.data_type.schema_name()
                    ),
                ));
            }
            let overridden = pack.overrides.iter().find(|o| o.uid == uid);
            let (dims, strides) =
                overridden.map_or((&t.dims, &t.strides), |o| (&o.dims, &o.strides));
            let need = match overridden {
                Some(o) => required_bytes(&o.dims, &o.strides, element_size(t.data_type)),
                None => t.need,
            };
            let need = need.ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "tensor '{}' (uid {uid}): the extent of dims {:?} strides {:?} overflows",
                        t.name, dims, strides
                    ),
                )
            })?;
            if entry.data.len() < need {
                // Other tensors are overridden and this one is not: it still takes its built
                // shape, which is most likely the cause.
                let hint = if overridden.is_none() && !pack.overrides.is_empty() {
                    format!(
                        " (its built shape: the pack overrides other tensors but not uid {uid}; \
                         override it too — Graph::shape_overrides_for computes every override \
                         from the graph made at the smaller shape)"
                    )
                } else {
                    String::new()
                };
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!(
                        "buffer for tensor '{}' (uid {uid}) holds {} bytes; dims {:?} strides {:?} of {} need {need}{hint}",
                        t.name,
                        entry.data.len(),
                        dims,
                        strides,
                        t.data_type.schema_name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Saves the graph, with its plan when the plan can be saved.
    ///
    /// With an active plan whose engine reports `SUPPORTS_EXECUTION_PLAN_SERIALIZATION`, the
    /// result is an `HDGP` container (graph blob + plan blob, both 8-byte aligned). Otherwise
    /// (no plan, or an engine without the note — logged as a warning containing "does not
    /// support execution plan serialization; serializing the graph only.") it is the bare
    /// `Graph` FlatBuffer, byte-identical to a graph that never had a plan.
    ///
    /// For a loaded plan the plan part is the bytes it was loaded from; for a graph loaded with
    /// [`Graph::from_binary`] and unchanged since, the whole loaded container is returned.
    ///
    /// # Errors
    /// Graph serialization errors; `HIPDNN_BACKEND_ERROR` when the engine refuses to save the
    /// plan (no graph-only fallback then, as upstream).
    pub fn to_binary(&self) -> Result<Vec<u8>> {
        let graph_bytes = self.to_graph_bytes()?;
        let Some(plan) = &self.compiled.plan else {
            return Ok(graph_bytes);
        };
        if !self.compiled.serializable {
            log::warn!(
                "hipdnn: engine {} does not support execution plan serialization; serializing the graph only.",
                self.compiled.engine_name
            );
            return Ok(graph_bytes);
        }
        let plan_bytes = plan
            .serialized_bytes()
            .map_err(|e| backend_error("Cannot serialize the execution plan.", e))?;
        if let Some(loaded) = &self.compiled.loaded
            && plan_bytes.same_view(&loaded.plan)
            && loaded.graph_is_unchanged(&graph_bytes)
        {
            return Ok(loaded.container.to_vec());
        }
        Ok(hdgp::write_graph_and_plan(&graph_bytes, Some(&plan_bytes)))
    }

    /// Loads a graph saved by [`Graph::to_binary`] (a bare `Graph` FlatBuffer or an `HDGP`
    /// container), restoring its plan on `handle` when the container carries one. No kernel
    /// selection or compilation happens. A container is copied once and that copy is parsed
    /// once: its graph part is verified once (by the backend) and read from the verified
    /// graph, and the plan and the graph part the graph keeps are views of the copy (see the
    /// module docs).
    ///
    /// # Errors
    /// `INVALID_VALUE` when the graph bytes do not verify (a bare plan given here is refused
    /// this way, and no graph is created); `HIPDNN_BACKEND_ERROR` with the backend status for a
    /// damaged container (`BAD_PARAM`), a container without a graph, or a plan the engines
    /// refuse (`PLUGIN_ERROR`, …). A plan saved by an engine `handle` does not have (a GPU
    /// plan on a CPU handle) gives `HIPDNN_BACKEND_ERROR` "Cannot load the execution plan
    /// (HIPDNN_STATUS_NOT_SUPPORTED): Invalid engine ID: N: the plan was saved by engine
    /// "hipkernel.ingestor.gpu", which this handle does not have (it has
    /// "hipdnn.reference.cpu"); …" followed by the fix.
    pub fn from_binary(handle: &Handle, bytes: &[u8]) -> Result<Graph> {
        let read_error = |e| backend_error("Cannot read the graph.", e);
        if !hdgp::is_graph_and_plan_container(bytes) {
            return Graph::from_graph_bytes(bytes).map_err(|e| not_a_graph(bytes, e));
        }
        // The one copy of the container, parsed once; what the graph keeps is views of it.
        let loaded = SharedBytes::copy_from_slice(bytes);
        let container = hdgp::GraphAndPlan::parse(&loaded).map_err(read_error)?;
        let graph_blob = container.require_graph().map_err(read_error)?;
        let Some(plan_blob) = container.plan_blob() else {
            return Graph::from_graph_bytes(graph_blob);
        };
        let view = |part: &[u8]| {
            loaded.view_of(part).ok_or_else(|| {
                Error::new(
                    ErrorCode::HipdnnBackendError,
                    "Cannot read the graph. A container blob lies outside the container.",
                )
            })
        };
        let (graph, plan_view) = (view(graph_blob)?, view(plan_blob)?);
        // The graph part is verified once, by the backend, and the graph is read from that
        // verified graph. When the backend refuses it, the graph reader's own error comes
        // first (as for a graph alone), the backend's after the plan loaded (as before).
        let op = OperationGraph::from_shared(graph.clone());
        let mut g = match &op {
            Ok(op) => Graph::from_verified(op.graph())?,
            Err(_) => Graph::from_graph_bytes(graph_blob)?,
        };
        // With a verified graph part the engine gets the graph too (the kernel ingestor
        // serves shape overrides of a flagged plan from it); the plan is proven to belong to
        // the graph just below, before anything can execute it.
        let plan = match &op {
            Ok(op) => ExecutionPlanDescriptor::from_shared_with_graph(
                handle.backend(),
                plan_view.clone(),
                op,
            ),
            Err(_) => ExecutionPlanDescriptor::from_shared(handle.backend(), plan_view.clone()),
        }
        .map_err(|e| backend_error("Cannot load the execution plan.", e))?;
        let op = op.map_err(read_error)?;
        plan.check_graph(&op).map_err(|e| {
            Error::new(
                ErrorCode::InvalidValue,
                format!("Cannot load the container: {}", e.message),
            )
        })?;
        let notes = notes_of(&plan, &op);
        g.compiled = CompiledState {
            numerical_notes: Some(notes),
            engine_name: plan.engine().name().to_string(),
            plan: Some(Arc::new(plan)),
            serializable: true,
            loaded: Some(LoadedContainer {
                container: loaded,
                graph,
                plan: plan_view,
            }),
            pack_rules: pack_rules(&g),
        };
        Ok(g)
    }

    /// The active plan's serialized bytes (a `SerializedExecutionPlan` envelope), built or
    /// loaded. For a loaded plan these are exactly the plan bytes it was loaded from (for a
    /// container, its plan part).
    ///
    /// # Errors
    /// `INVALID_VALUE` [`NO_FINALIZED_PLAN_MESSAGE`] without a plan; `HIPDNN_BACKEND_ERROR` when
    /// the engine refuses to save (`PLUGIN_ERROR`) or has no serialization (`NOT_SUPPORTED`).
    pub fn to_compiled_plan_binary(&self) -> Result<Vec<u8>> {
        let plan = self
            .compiled
            .plan
            .as_ref()
            .ok_or_else(|| Error::new(ErrorCode::InvalidValue, NO_FINALIZED_PLAN_MESSAGE))?;
        plan.to_bytes()
            .map_err(|e| backend_error("Cannot serialize the execution plan.", e))
    }

    /// Loads a plan saved by [`Graph::to_compiled_plan_binary`] (or the plan part of an `HDGP`
    /// container) on `handle`. The plan part is copied once; the plan keeps that copy (its
    /// cache and the engine's views share it). The returned graph has no nodes or tensors; execute it with a
    /// variant pack by UID. The plan is bound to `handle`'s device.
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` with the backend status: `BAD_PARAM` for damaged bytes or a
    /// container without a plan, `NOT_SUPPORTED` for an unknown envelope version,
    /// `NOT_SUPPORTED` "Invalid engine ID: N: the plan was saved by engine …" (naming the
    /// engine, the handle's engines and the fix) for a plan of an engine `handle` does not have,
    /// `PLUGIN_ERROR` when the engine refuses.
    pub fn from_compiled_plan_binary(handle: &Handle, bytes: &[u8]) -> Result<Graph> {
        let plan = ExecutionPlanDescriptor::from_copy(handle.backend(), bytes)
            .map_err(|e| backend_error("Cannot load the execution plan.", e))?;
        // The graph the engine runs, when it keeps one (the CPU engine), read once here: every
        // execute checks its variant pack against its tensors.
        let source = plan.execution_context().source_graph();
        let pack_rules = source
            .and_then(|src| Graph::from_graph_bytes(src).ok())
            .map_or_else(|| Arc::from([]), |src| self::pack_rules(&src));
        let numerical_notes = source
            .and_then(|src| OperationGraph::from_shared(SharedBytes::from(src.to_vec())).ok())
            .map(|op| notes_of(&plan, &op));
        let mut g = Graph::new();
        g.set_override_shape_enabled(plan.is_override_shape_enabled());
        g.compiled = CompiledState {
            numerical_notes,
            engine_name: plan.engine().name().to_string(),
            plan: Some(Arc::new(plan)),
            serializable: true,
            loaded: None,
            pack_rules,
        };
        Ok(g)
    }
}

/// Bytes a buffer must hold for a strided tensor: the backend's rule
/// ([`hipdnn_backend::tensor_size::byte_extent`]: `(1 + Σ (dim−1)·stride) · elem`, 0 when a
/// dim is 0; `None` for a negative dim or stride or an overflow), shared with the C ABI.
pub(crate) fn required_bytes(dims: &[i64], strides: &[i64], elem: usize) -> Option<usize> {
    hipdnn_backend::tensor_size::byte_extent(dims, strides, elem)
}

/// Bytes per element of a data type as stored in a buffer (sub-byte types count as 1):
/// [`hipdnn_backend::tensor_size::element_size`].
fn element_size(dt: crate::DataType) -> usize {
    hipdnn_backend::tensor_size::element_size(dt.schema_value())
}
