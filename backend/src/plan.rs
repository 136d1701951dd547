//! The execution plan descriptor (upstream `ExecutionPlanDescriptor`,
//! `docs/plan-serialization.md`, upstream PRs #13315 and #14517).
//!
//! This module owns a plan's execution context, its tensor identities, routing of execute and
//! save to the plan's engine, and the serialized-plan cache. It never interprets a plugin
//! payload and never rebuilds the envelope of a loaded plan.

use crate::bytes::SharedBytes;
use crate::engine::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, TensorBinding,
};
use crate::envelope::{PlanEnvelope, write_envelope};
use crate::graph::OperationGraph;
use crate::handle::BackendHandle;
use crate::hdgp::plan_part;
use crate::status::{BackendError, BackendResult, PluginError, PluginStatus, Status};
use crate::variant_pack::VariantPackDescriptor;
use std::sync::{Arc, Mutex, MutexGuard};

/// Message of the `NOT_SUPPORTED` for an engine without the serialization hooks (upstream text).
pub const NO_SERIALIZATION_MESSAGE: &str =
    "Engine plugin does not support execution context serialization";

/// A finalized execution plan: one engine's execution context for one graph, with the
/// serialized-plan cache.
///
/// A value of this type is always finalized (Rust construction replaces upstream's
/// create/set/finalize sequence), so upstream's `NOT_INITIALIZED` cases cannot occur.
///
/// # Serialized-plan cache
/// The plan keeps `Mutex<Option<SharedBytes>>` with its serialized bytes:
/// - **Built plan** ([`ExecutionPlanDescriptor::finalize`]): empty until the first save. The
///   first save, under the lock, calls the engine's save hook once and builds a version 2
///   envelope; the cache is set only after both succeed, so a failed save leaves it empty and
///   the next save retries. Later saves (also concurrent ones) copy the cache and never call
///   the engine again.
/// - **Loaded plan** ([`ExecutionPlanDescriptor::from_shared`], [`ExecutionPlanDescriptor::
///   from_bytes`]): the cache is seeded with the exact plan bytes it was loaded from, so a save
///   returns them byte-identically (a version 1 envelope stays version 1) and never calls the
///   engine's save hook.
///
/// Memory: a plan loaded with [`Self::from_shared`] keeps no copy of its own: its cache is a
/// view of the caller's one owned copy of the loaded bytes (for a container, a view of its plan
/// part), and the engine's load hook may keep views of that same buffer (the kernel ingestor
/// keeps its code object so), so the process holds one host copy of the plan bytes, code object
/// included, for the plan's lifetime. [`Self::from_bytes`] (borrowed input) makes that one copy
/// itself, after the engine has restored from the borrowed input; an engine that must keep
/// part of its payload then keeps its own copy. A built plan keeps one copy only after its
/// first save.
pub struct ExecutionPlanDescriptor {
    engine: Arc<dyn Engine>,
    engine_id: i64,
    engine_config: Option<EngineConfig>,
    context: Box<dyn ExecutionContext>,
    tensor_uids: Vec<i64>,
    tensor_alignments: Vec<i64>,
    workspace_size: usize,
    is_override_shape_enabled: bool,
    serialized_plan_cache: Mutex<Option<SharedBytes>>,
}

impl std::fmt::Debug for ExecutionPlanDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionPlanDescriptor")
            .field("engine", &self.engine.name())
            .field("engine_id", &self.engine_id)
            .field("engine_config", &self.engine_config)
            .field("tensor_uids", &self.tensor_uids)
            .field("tensor_alignments", &self.tensor_alignments)
            .field("workspace_size", &self.workspace_size)
            .field("is_override_shape_enabled", &self.is_override_shape_enabled)
            .field(
                "is_serialized_plan_cached",
                &self.is_serialized_plan_cached(),
            )
            .finish()
    }
}

fn plugin_error(what: &str, engine: &dyn Engine, e: PluginError) -> BackendError {
    BackendError::new(
        Status::PluginError,
        format!(
            "{what} (engine \"{}\", {:?}): {}",
            engine.name(),
            e.status,
            e.message
        ),
    )
}

impl ExecutionPlanDescriptor {
    /// Builds a plan from an engine config and a graph (upstream `finalize`, reference §4.2):
    /// routes `config.engine_id` to the handle's engine, collects the graph's tensor UIDs and
    /// alignments (buffer order; 0 for runtime pass-by-value tensors), takes the override-shape
    /// flag, creates the execution context and reads its workspace size.
    ///
    /// # Errors
    /// - `INTERNAL_ERROR` "Invalid engine ID: N" when no engine of `handle` has the config's id.
    /// - `PLUGIN_ERROR` "engine could not create an execution context …" with the engine's
    ///   message when its `create_execution_context` fails.
    /// - `INTERNAL_ERROR` when the context's workspace size does not fit in `i64`.
    pub fn finalize(
        handle: &BackendHandle,
        config: &EngineConfig,
        graph: &OperationGraph,
    ) -> BackendResult<Self> {
        let engine = Arc::clone(handle.engine_for(config.engine_id)?);
        let context = engine
            .create_execution_context(config, graph)
            .map_err(|e| {
                plugin_error("engine could not create an execution context", &*engine, e)
            })?;
        let workspace_size = context.workspace_size();
        if i64::try_from(workspace_size).is_err() {
            return Err(BackendError::new(
                Status::InternalError,
                format!("engine reported an invalid workspace size: {workspace_size} bytes"),
            ));
        }
        Ok(ExecutionPlanDescriptor {
            engine_id: config.engine_id,
            engine,
            engine_config: Some(config.clone()),
            context,
            tensor_uids: graph.tensor_uids().to_vec(),
            tensor_alignments: graph.tensor_alignments().to_vec(),
            workspace_size,
            is_override_shape_enabled: graph.is_override_shape_enabled(),
            serialized_plan_cache: Mutex::new(None),
        })
    }

    /// Loads a plan from borrowed serialized bytes (upstream
    /// `hipdnnBackendCreateAndDeserializeExecutionPlan_ext` + `deserializeBackendPlan`,
    /// reference §4.5, §4.6 and §6.4).
    ///
    /// `bytes` is a bare envelope or an `HDGP` container: the container codec
    /// ([`crate::hdgp::plan_part`]) cuts the plan part (marker first; for a container only its
    /// plan blob is used and kept). The envelope checks run in order (see
    /// [`PlanEnvelope::parse`]); then the envelope's engine id is routed to `handle`'s engine,
    /// whose load hook receives the plugin payload as a slice of `bytes` (no temporary copy).
    /// After the engine restored the context, the cache is seeded with one copy of the exact
    /// plan bytes. On any failure no descriptor is produced (and nothing is cached or copied).
    /// A caller that owns the bytes uses [`Self::from_shared`] instead (no copy at all); one
    /// whose input is borrowed and whose engines keep parts of their payload uses
    /// [`Self::from_copy`] (one copy in total; here an engine must copy what it keeps).
    ///
    /// # Errors
    /// - `BAD_PARAM` "Serialized execution plan is empty." for empty input.
    /// - Container cut: `BAD_PARAM` "unable to verify the serialized graph-and-plan container…",
    ///   `BAD_PARAM` "container carries no execution plan…".
    /// - Envelope checks: `BAD_PARAM` "Serialized execution plan FlatBuffer is invalid.",
    ///   `NOT_SUPPORTED` for version 0 or > 2, `BAD_PARAM` for missing/empty payload or UIDs,
    ///   missing or mismatched v2 alignments, negative workspace.
    /// - `NOT_SUPPORTED` "Invalid engine ID: N: the plan was saved by …" when no engine of
    ///   `handle` serves the id (no engine is called; the message names the engine and the fix
    ///   when the handle noted it absent, and lists the handle's engines:
    ///   [`BackendHandle::engine_for_plan`]).
    /// - `NOT_SUPPORTED` "Engine plugin does not support execution context serialization" when
    ///   the engine has no hooks.
    /// - `PLUGIN_ERROR` "engine refused to restore the execution plan …: \<engine message\>"
    ///   when the load hook fails.
    /// - `BAD_PARAM` "Serialized execution plan parts disagree: …" when the recorded workspace
    ///   is below what the restored context needs, the envelope's UIDs differ from those of the
    ///   graph the context runs, or the context binds a UID the envelope does not list
    ///   ([`crate::crosscheck::check_restored`]).
    pub fn from_bytes(handle: &BackendHandle, bytes: &[u8]) -> BackendResult<Self> {
        if bytes.is_empty() {
            return Err(BackendError::new(
                Status::BadParam,
                "Serialized execution plan is empty.",
            ));
        }
        let plan_bytes = plan_part(bytes)?;
        let env = PlanEnvelope::parse(plan_bytes)?;
        let (engine, hooks) = Self::load_hooks(handle, &env)?;
        let context = hooks
            .create_execution_context_from_serialized(env.plugin_payload)
            .map_err(|e| {
                plugin_error("engine refused to restore the execution plan", &*engine, e)
            })?;
        let descriptor = Self::restored(engine, context, env, None)?;
        // Seeded after the engine restored the context (PR14517): the one copy.
        *descriptor.lock_cache() = Some(SharedBytes::copy_from_slice(plan_bytes));
        Ok(descriptor)
    }

    /// Loads a plan from borrowed bytes (a bare envelope or an `HDGP` container, as
    /// [`Self::from_bytes`]) keeping exactly one copy: the plan part is cut
    /// ([`crate::hdgp::plan_part`]), copied once into a [`SharedBytes`] buffer and loaded with
    /// [`Self::from_shared`], so the cache and whatever the engine keeps (the kernel ingestor's
    /// code object) are views of that one copy. Use it where the input is borrowed for the
    /// call only (the SDK's `from_compiled_plan_binary`, a C caller's buffer).
    ///
    /// # Errors
    /// As [`Self::from_bytes`] (same checks, order and messages); on any failure the copy is
    /// dropped and nothing is kept.
    pub fn from_copy(handle: &BackendHandle, bytes: &[u8]) -> BackendResult<Self> {
        if bytes.is_empty() {
            return Err(BackendError::new(
                Status::BadParam,
                "Serialized execution plan is empty.",
            ));
        }
        Self::from_shared(handle, SharedBytes::copy_from_slice(plan_part(bytes)?))
    }

    /// Loads a plan from a bare envelope held in a caller-owned shared buffer (the one owned
    /// copy of loaded bytes; e.g. a view of a container's plan part): the same checks, routing
    /// and errors as [`Self::from_bytes`] for a bare plan, with no copy. The engine's load hook
    /// gets the plugin payload as a view of `plan`
    /// ([`crate::PlanSerialization::create_execution_context_from_shared`]), and the cache is
    /// seeded with `plan` itself (a view of the same buffer), so a save returns exactly these
    /// bytes and never calls the engine.
    ///
    /// `plan` must be a bare envelope: the container codec ([`crate::hdgp`]) cuts containers
    /// before this call. An `HDGP` container given here fails the envelope checks.
    ///
    /// # Errors
    /// As [`Self::from_bytes`], without the container-cut errors.
    pub fn from_shared(handle: &BackendHandle, plan: SharedBytes) -> BackendResult<Self> {
        Self::load_shared(handle, plan, None)
    }

    /// [`Self::from_shared`] for a plan loaded together with its graph (an `HDGP`
    /// container's plan part and its verified graph part): the engine's load hook also gets
    /// `graph` ([`crate::PlanSerialization::create_execution_context_with_graph`]), so an engine
    /// whose payload keeps only launches can serve what needs the graph (the kernel
    /// ingestor: execute-time shape overrides of a plan saved with the override-shape flag).
    /// The caller proves the plan belongs to `graph` with [`Self::check_graph`] before any
    /// execute (the SDK's `Graph::from_binary` does, right after this call).
    ///
    /// # Errors
    /// As [`Self::from_shared`].
    pub fn from_shared_with_graph(
        handle: &BackendHandle,
        plan: SharedBytes,
        graph: &OperationGraph,
    ) -> BackendResult<Self> {
        Self::load_shared(handle, plan, Some(graph))
    }

    /// [`Self::from_shared`] and [`Self::from_shared_with_graph`].
    fn load_shared(
        handle: &BackendHandle,
        plan: SharedBytes,
        graph: Option<&OperationGraph>,
    ) -> BackendResult<Self> {
        let env = PlanEnvelope::parse(&plan)?;
        let (engine, hooks) = Self::load_hooks(handle, &env)?;
        let payload = plan.view_of(env.plugin_payload).ok_or_else(|| {
            BackendError::new(
                Status::InternalError,
                "the envelope's plugin payload does not lie inside the plan bytes",
            )
        })?;
        let context = match graph {
            Some(graph) => hooks.create_execution_context_with_graph(&payload, graph),
            None => hooks.create_execution_context_from_shared(&payload),
        }
        .map_err(|e| plugin_error("engine refused to restore the execution plan", &*engine, e))?;
        drop(payload);
        // Seeded after the engine restored the context (PR14517): a view, no copy (the clone
        // shares the buffer; `env` still borrows `plan`).
        Self::restored(engine, context, env, Some(plan.clone()))
    }

    /// Routing of a load: the engine serving the envelope's id and its serialization hooks.
    fn load_hooks<'h>(
        handle: &'h BackendHandle,
        env: &PlanEnvelope<'_>,
    ) -> BackendResult<(Arc<dyn Engine>, &'h dyn crate::engine::PlanSerialization)> {
        let engine = handle.engine_for_plan(env.engine_id)?;
        let hooks = engine
            .serialization()
            .ok_or_else(|| BackendError::new(Status::NotSupported, NO_SERIALIZATION_MESSAGE))?;
        Ok((Arc::clone(engine), hooks))
    }

    /// The descriptor of a restored `context`, its cache seeded with `cache`.
    fn restored(
        engine: Arc<dyn Engine>,
        context: Box<dyn ExecutionContext>,
        env: PlanEnvelope<'_>,
        cache: Option<SharedBytes>,
    ) -> BackendResult<Self> {
        crate::crosscheck::check_restored(env.workspace_size, &env.tensor_uids, &*context)?;
        let workspace_size = usize::try_from(env.workspace_size).map_err(|_| {
            BackendError::new(
                Status::BadParam,
                format!(
                    "workspace size {} does not fit this machine",
                    env.workspace_size
                ),
            )
        })?;
        Ok(ExecutionPlanDescriptor {
            engine,
            engine_id: env.engine_id,
            engine_config: None,
            context,
            tensor_alignments: env.tensor_alignments.unwrap_or_default(),
            tensor_uids: env.tensor_uids,
            workspace_size,
            is_override_shape_enabled: env.is_override_shape_enabled,
            serialized_plan_cache: Mutex::new(cache),
        })
    }

    /// Workspace in bytes every execute needs (`EXECUTION_PLAN_WORKSPACE_SIZE`), decided when
    /// the plan was built or loaded: a built plan's is what its execution context reports; a
    /// loaded plan's is the recorded size, which the load proved is not less than what the
    /// restored context reports ([`crate::crosscheck::check_restored`]).
    pub fn workspace_size(&self) -> usize {
        self.workspace_size
    }

    /// The one workspace check of an execute (the SDK's `Graph::execute` asks it first, to
    /// report INVALID_VALUE; [`Self::execute`] applies it for every caller): a workspace of
    /// `given` bytes is enough when it holds at least [`Self::workspace_size`] bytes.
    ///
    /// # Errors
    /// `BAD_PARAM` "the plan needs a workspace of N bytes; M bytes were given".
    pub fn check_workspace(&self, given: usize) -> BackendResult<()> {
        let need = self.workspace_size;
        if given < need {
            return Err(BackendError::new(
                Status::BadParam,
                format!("the plan needs a workspace of {need} bytes; {given} bytes were given"),
            ));
        }
        Ok(())
    }

    /// Proves that this plan belongs to `graph` (for a plan loaded together with a graph, e.g.
    /// from one `HDGP` container): equal tensor UIDs and alignments, and, when the engine's
    /// context keeps the graph it runs, equal tensors (data type, dims, strides, flags) and
    /// nodes (op kind and attributes). See [`crate::crosscheck::check_plan_matches_graph`].
    ///
    /// # Errors
    /// `BAD_PARAM` "the execution plan does not belong to the graph: …" naming the first
    /// disagreement.
    pub fn check_graph(&self, graph: &OperationGraph) -> BackendResult<()> {
        crate::crosscheck::check_plan_matches_graph(
            &self.tensor_uids,
            &self.tensor_alignments,
            &*self.context,
            graph,
        )
    }

    /// Id of the engine that runs the plan (`EXECUTION_PLAN_ENGINE_GLOBAL_INDEX_EXT`).
    pub fn engine_id(&self) -> i64 {
        self.engine_id
    }

    /// The engine that runs the plan.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    /// Tensor UIDs in graph-buffer order (`EXECUTION_PLAN_TENSOR_UIDS_EXT`).
    pub fn tensor_uids(&self) -> &[i64] {
        &self.tensor_uids
    }

    /// Byte alignment per UID, parallel to [`Self::tensor_uids`] (0 = not enforced); empty for
    /// a plan loaded from a version 1 envelope (no alignment enforcement).
    pub fn tensor_alignments(&self) -> &[i64] {
        &self.tensor_alignments
    }

    /// The graph's override-shape flag (`EXECUTION_PLAN_IS_OVERRIDE_SHAPE_ENABLED_EXT`).
    pub fn is_override_shape_enabled(&self) -> bool {
        self.is_override_shape_enabled
    }

    /// The engine config the plan was built from; `None` for a loaded plan (upstream returns
    /// `BAD_PARAM_NULL_POINTER` for `EXECUTION_PLAN_ENGINE_CONFIG` then).
    pub fn engine_config(&self) -> Option<&EngineConfig> {
        self.engine_config.as_ref()
    }

    /// The engine's execution context.
    pub fn execution_context(&self) -> &dyn ExecutionContext {
        &*self.context
    }

    /// True when the serialized-plan cache holds bytes (always for a loaded plan; for a built
    /// plan after its first successful save).
    pub fn is_serialized_plan_cached(&self) -> bool {
        self.lock_cache().is_some()
    }

    /// Runs the plan (upstream `hipdnnBackendExecute`, reference §4.7).
    ///
    /// Checks, in order: the plan's engine id is served by `handle` (routing); no UID is bound
    /// twice and every bound UID is a tensor of the plan; when the plan has alignments (as many
    /// as UIDs), each bound buffer whose UID has alignment > 0 starts at a multiple of it; the
    /// workspace holds at least [`Self::workspace_size`] bytes ([`Self::check_workspace`], the
    /// one workspace check: engines do not check it again). Then the execution context runs on
    /// `handle`'s stream.
    ///
    /// # Errors
    /// `INTERNAL_ERROR` "Invalid engine ID: N"; `BAD_PARAM` "variant pack …" naming the UID,
    /// the address and alignment; `BAD_PARAM` "the plan needs a workspace of N bytes; M bytes
    /// were given"; `PLUGIN_ERROR` "engine failed to
    /// execute the plan …" with the engine's message.
    pub fn execute(
        &self,
        handle: &BackendHandle,
        pack: VariantPackDescriptor<'_>,
    ) -> BackendResult<()> {
        let (mut tensors, workspace) = pack.into_parts();
        self.execute_bindings(handle, &mut tensors, workspace)
    }

    /// Why this plan's executes cannot be recorded into a device graph (a stream capture),
    /// naming the engine: `engine "<name>": <reason>` ([`ExecutionContext::capture_refusal`]);
    /// `None` when they can.
    pub fn capture_refusal(&self) -> Option<String> {
        self.context
            .capture_refusal()
            .map(|r| format!("engine \"{}\": {r}", self.engine.name()))
    }

    /// [`Self::execute`] over bindings the caller keeps (e.g. on its stack): the same checks,
    /// errors and run, without a [`VariantPackDescriptor`] (so without its allocation).
    /// `tensors` are the bound tensors in variant-pack order, `workspace` the workspace memory.
    ///
    /// # Errors
    /// As [`Self::execute`].
    pub fn execute_bindings<'b>(
        &self,
        handle: &BackendHandle,
        tensors: &mut [TensorBinding<'b>],
        workspace: Option<BufferRef<'b>>,
    ) -> BackendResult<()> {
        self.check_bindings(handle, tensors)?;
        self.check_workspace(workspace.as_ref().map_or(0, |w| w.len()))?;
        self.context
            .execute(ExecuteArgs {
                stream: handle.stream(),
                workspace,
                tensors,
            })
            .map_err(|e| plugin_error("engine failed to execute the plan", &*self.engine, e))
    }

    /// [`Self::execute_bindings`] with execute-time shape overrides (upstream RFC 0008 phase 1;
    /// the variant pack's `OVERRIDE_*_EXT` attributes): each tensor named in `overrides` takes
    /// the given dims and strides for this call. With no overrides this is
    /// [`Self::execute_bindings`] (a flagged plan executes plainly too).
    ///
    /// Checks, in order, before the engine runs: the plan's graph has the override-shape flag;
    /// its engine [`Engine::supports_shape_overrides`]; the bindings and workspace as
    /// [`Self::execute_bindings`]; every overridden UID is bound in the pack. The engine then
    /// applies [`crate::check_overrides`] against the tensors' built shapes and its own rules
    /// (the shapes its nodes accept) before anything is written.
    ///
    /// # Errors
    /// `NOT_SUPPORTED` "shape overrides need a plan whose graph was built with the
    /// override-shape flag …" or "… engine \"E\" does not execute shape overrides"; the errors
    /// of [`Self::execute_bindings`]; `BAD_PARAM` "shape override of tensor uid N: the tensor is
    /// not bound in the variant pack"; `BAD_PARAM` with the engine's message (starting `shape
    /// override`) for an override it refuses; `PLUGIN_ERROR` for other engine failures.
    pub fn execute_bindings_with_overrides<'b>(
        &self,
        handle: &BackendHandle,
        tensors: &mut [TensorBinding<'b>],
        workspace: Option<BufferRef<'b>>,
        overrides: &[crate::ShapeOverride],
    ) -> BackendResult<()> {
        if overrides.is_empty() {
            return self.execute_bindings(handle, tensors, workspace);
        }
        if !self.is_override_shape_enabled {
            return Err(BackendError::new(
                Status::NotSupported,
                "shape overrides need a plan whose graph was built with the override-shape flag \
                 (Graph::set_override_shape_enabled(true) before build)",
            ));
        }
        if !self.engine.supports_shape_overrides() {
            return Err(BackendError::new(
                Status::NotSupported,
                format!(
                    "engine \"{}\" does not execute shape overrides",
                    self.engine.name()
                ),
            ));
        }
        self.check_bindings(handle, tensors)?;
        self.check_workspace(workspace.as_ref().map_or(0, |w| w.len()))?;
        if let Some(o) = overrides
            .iter()
            .find(|o| !tensors.iter().any(|t| t.uid == o.uid))
        {
            return Err(BackendError::new(
                Status::BadParam,
                format!(
                    "shape override of tensor uid {}: the tensor is not bound in the variant pack",
                    o.uid
                ),
            ));
        }
        let args = ExecuteArgs {
            stream: handle.stream(),
            workspace,
            tensors,
        };
        self.context
            .execute_with_overrides(args, overrides)
            .map_err(|e| match e.status {
                PluginStatus::BadParam if e.message.starts_with("shape override") => {
                    BackendError::new(Status::BadParam, e.message)
                }
                _ => plugin_error("engine failed to execute the plan", &*self.engine, e),
            })
    }

    /// The routing and binding checks of [`Self::execute_bindings`] (not the workspace).
    fn check_bindings(
        &self,
        handle: &BackendHandle,
        tensors: &[TensorBinding<'_>],
    ) -> BackendResult<()> {
        handle.engine_for(self.engine_id)?;
        let enforce = !self.tensor_alignments.is_empty()
            && self.tensor_alignments.len() == self.tensor_uids.len();
        for (k, t) in tensors.iter().enumerate() {
            // A pack binds a handful of tensors: a scan of the earlier bindings costs less than
            // building a set on every execute.
            if tensors[..k].iter().any(|p| p.uid == t.uid) {
                return Err(BackendError::new(
                    Status::BadParam,
                    format!("variant pack binds tensor uid {} twice", t.uid),
                ));
            }
            let Some(i) = self.tensor_uids.iter().position(|&u| u == t.uid) else {
                return Err(BackendError::new(
                    Status::BadParam,
                    format!(
                        "variant pack tensor uid {} is not a tensor of the plan",
                        t.uid
                    ),
                ));
            };
            let addr = t.data.addr();
            if enforce && addr != 0 {
                let align = self.tensor_alignments[i];
                if align > 0 && addr % align as u64 != 0 {
                    return Err(BackendError::new(
                        Status::BadParam,
                        format!(
                            "variant pack tensor uid {} at address {addr:#x} is not aligned to \
                             {align} bytes",
                            t.uid
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn lock_cache(&self) -> MutexGuard<'_, Option<SharedBytes>> {
        // A panic while the lock was held cannot leave a half-filled cache (it is assigned
        // only after a complete fill), so a poisoned lock is safe to use.
        self.serialized_plan_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Fills the cache if empty (first save of a built plan), under the caller's lock.
    fn fill(&self, cache: &mut Option<SharedBytes>) -> BackendResult<()> {
        if cache.is_some() {
            return Ok(());
        }
        let hooks = self
            .engine
            .serialization()
            .ok_or_else(|| BackendError::new(Status::NotSupported, NO_SERIALIZATION_MESSAGE))?;
        let payload = hooks
            .serialize_execution_context(self.engine_id, &*self.context)
            .map_err(|e| {
                plugin_error("engine could not save the execution plan", &*self.engine, e)
            })?;
        if payload.is_empty() {
            return Err(BackendError::new(
                Status::PluginError,
                format!(
                    "engine could not save the execution plan (engine \"{}\"): it returned an \
                     empty plugin payload",
                    self.engine.name()
                ),
            ));
        }
        let bytes = write_envelope(
            self.engine_id,
            self.workspace_size as i64,
            &self.tensor_uids,
            &self.tensor_alignments,
            self.is_override_shape_enabled,
            &payload,
        );
        drop(payload); // upstream: destroy hook, exactly once after a successful save
        *cache = Some(SharedBytes::from(bytes));
        Ok(())
    }

    /// Two-call save (upstream `hipdnnBackendGetSerializedExecutionPlan_ext`, reference §4.4).
    ///
    /// `out == None` returns the size in bytes only; `Some(buf)` copies the plan bytes into
    /// `buf[..size]` and returns the size. Either call fills the cache first if it is empty
    /// (see the type docs), so the size query and the fill are byte-identical.
    ///
    /// # Errors
    /// - `NOT_SUPPORTED` "Engine plugin does not support execution context serialization".
    /// - `PLUGIN_ERROR` "engine could not save the execution plan …" when the save hook fails or
    ///   returns an empty payload (the cache stays empty; the next call retries).
    /// - `BAD_PARAM_SIZE_INSUFFICIENT` when `buf` is shorter than the size; the message names
    ///   both sizes and [`BackendError::required_size`] holds the needed size (the cache stays
    ///   filled; `buf` is untouched).
    pub fn serialize_into(&self, out: Option<&mut [u8]>) -> BackendResult<usize> {
        let mut cache = self.lock_cache();
        self.fill(&mut cache)?;
        let bytes = cache.as_deref().unwrap_or_default();
        if let Some(buf) = out {
            if buf.len() < bytes.len() {
                return Err(BackendError::size_insufficient(
                    "serialized execution plan",
                    buf.len(),
                    bytes.len(),
                ));
            }
            buf[..bytes.len()].copy_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    /// The serialized plan as a new vector (one copy of the cache). Same rules and errors as
    /// [`Self::serialize_into`] except that no size can be insufficient.
    pub fn to_bytes(&self) -> BackendResult<Vec<u8>> {
        Ok(self.serialized_bytes()?.to_vec())
    }

    /// The serialized plan as a view of the cache (no copy: for a loaded plan, a view of the
    /// bytes it was loaded from). Same rules and errors as [`Self::to_bytes`].
    pub fn serialized_bytes(&self) -> BackendResult<SharedBytes> {
        let mut cache = self.lock_cache();
        self.fill(&mut cache)?;
        cache.clone().ok_or_else(|| {
            BackendError::new(Status::InternalError, "the serialized-plan cache is empty")
        })
    }
}
