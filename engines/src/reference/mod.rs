//! The CPU reference engine (`hipdnn.reference.cpu`): the embedded default engine of every
//! handle and the numerical reference for GPU tests.
//!
//! Contract: the engine reads the verified `Graph` FlatBuffer into its own execution DAG
//! (`plan::Plan`), refusing at applicability time — `NOT_APPLICABLE`, message naming the op,
//! the attribute and its value — anything it cannot run. It executes on host buffers only
//! (`BufferRef::Host`/`HostMut`; device buffers are refused with `BAD_PARAM`), computes in
//! `f32` whatever the storage type (f32, f16, bf16, f64, i32, i8, u8, i64, bool), needs no
//! workspace, and is deterministic: outputs are bit-identical across runs and rayon thread
//! counts. Plans are saveable ([`payload`]): the payload carries the graph, so a plan-only load
//! executes with no graph given. It never touches device memory or other engines' payloads.
//!
//! Supported ops: pointwise (all modes with a mathematical meaning), convolution fprop / dgrad
//! / wgrad (1-3 spatial dims, any layout by strides), matmul (batched, broadcast), batchnorm
//! inference and training forward, layernorm, rmsnorm, reduction, resample forward (pooling),
//! SDPA forward. See `docs/engines.md`.

// Module layering, one way (each imports only those before it): dtype, tensor, ops; check
// (the checking context), env (the host values of one execution); nodes (one file per op
// kind); step (the `Op` enum over the nodes' step types); fuse (epilogue fusion over steps);
// reshape (shape overrides: tensors at an execute's shapes); plan (graph → steps); exec (runs
// a plan); this file. `xtask module-cycles engines/src`
// checks it.
mod check;
pub mod dtype;
mod env;
mod exec;
mod fuse;
mod nodes;
pub mod ops;
pub mod payload;
mod plan;
mod reshape;
mod step;
pub mod tensor;
#[cfg(feature = "testing")]
pub mod testing;

use hipdnn_backend::{
    BehaviorNote, Engine, EngineConfig, ExecuteArgs, ExecutionContext, NumericalNote,
    OperationGraph, PlanSerialization, PluginError, PluginResult, ShapeOverride,
};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// Plans at override shapes a context keeps (most recently used last); the oldest is dropped
/// beyond this many.
pub const OVERRIDE_PLANS: usize = 32;

/// Engine name.
pub const ENGINE_NAME: &str = "hipdnn.reference.cpu";

/// The CPU reference engine. Stateless; threads come from rayon's global pool (or the pool
/// the caller `install`s).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReferenceEngine;

impl ReferenceEngine {
    /// A new engine.
    pub fn new() -> Self {
        ReferenceEngine
    }
}

/// A built (or loaded) CPU reference plan: the graph, the parsed DAG, and the plans of the
/// override shapes it has executed.
#[derive(Debug)]
pub struct ReferenceContext {
    graph: OperationGraph,
    plan: plan::Plan,
    /// Plans at execute-time override shapes ([`KeptAtShapes`]).
    at_shapes: KeptAtShapes<plan::Plan>,
}

/// What a plan derived per distinct set of execute-time shape overrides keeps: the derived
/// values keyed by the overrides sorted by UID, most recently used last, at most
/// [`OVERRIDE_PLANS`] (the oldest is dropped). Used by the CPU engine (plans at the override
/// shapes) and the GPU engine (launches prepared at them).
pub struct KeptAtShapes<T> {
    kept: Mutex<Vec<(Vec<ShapeOverride>, Arc<T>)>>,
}

impl<T> Default for KeptAtShapes<T> {
    fn default() -> Self {
        KeptAtShapes {
            kept: Mutex::new(Vec::new()),
        }
    }
}

impl<T> std::fmt::Debug for KeptAtShapes<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.kept.lock().map_or(0, |k| k.len());
        write!(f, "KeptAtShapes({n} kept)")
    }
}

impl<T> KeptAtShapes<T> {
    /// The value kept for `overrides` (in any order), or the one `make` derives, kept.
    ///
    /// # Errors
    /// `make`'s (nothing is kept then).
    pub fn get_or_make(
        &self,
        overrides: &[ShapeOverride],
        make: impl FnOnce() -> PluginResult<T>,
    ) -> PluginResult<Arc<T>> {
        let mut key = overrides.to_vec();
        key.sort();
        // A panic while the lock was held leaves the list whole (it is only pushed to and
        // reordered), so a poisoned lock is safe to use.
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = kept.iter().position(|(k, _)| *k == key) {
            let hit = kept.remove(i);
            let value = Arc::clone(&hit.1);
            kept.push(hit);
            return Ok(value);
        }
        let value = Arc::new(make()?);
        if kept.len() >= OVERRIDE_PLANS {
            kept.remove(0);
        }
        kept.push((key, Arc::clone(&value)));
        Ok(value)
    }
}

impl ReferenceContext {
    /// Builds a context from a verified graph.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` as the applicability check.
    pub fn new(graph: &OperationGraph) -> PluginResult<Self> {
        Ok(ReferenceContext {
            plan: plan::Plan::from_graph(&graph.graph())?,
            graph: graph.clone(),
            at_shapes: KeptAtShapes::default(),
        })
    }

    /// The serialized `Graph` this plan runs.
    pub fn graph_bytes(&self) -> &[u8] {
        self.graph.bytes()
    }

    /// The plan at the shapes `overrides` give: parsed once per distinct set of overrides
    /// ([`plan::Plan::with_overrides`]) and kept.
    fn plan_at(&self, overrides: &[ShapeOverride]) -> PluginResult<Arc<plan::Plan>> {
        self.at_shapes.get_or_make(overrides, || {
            plan::Plan::with_overrides(&self.graph.graph(), overrides)
        })
    }
}

impl ExecutionContext for ReferenceContext {
    fn workspace_size(&self) -> usize {
        0
    }

    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        exec::execute(&self.plan, args.tensors)
    }

    /// Runs the graph at the shapes `overrides` give: the plan at those shapes (derived once
    /// per distinct set, see the `reshape` module) on the bound buffers, each checked against
    /// its override extent. Bits equal a build at those shapes.
    fn execute_with_overrides(
        &self,
        args: ExecuteArgs<'_, '_>,
        overrides: &[ShapeOverride],
    ) -> PluginResult<()> {
        let plan = self.plan_at(overrides)?;
        exec::execute(&plan, args.tensors)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn capture_refusal(&self) -> Option<String> {
        Some(CAPTURE_REFUSAL.into())
    }

    fn source_graph(&self) -> Option<&[u8]> {
        Some(self.graph.bytes())
    }
}

/// Every tensor's dims and strides (UID → `(dims, strides)`, in elements) at the shapes
/// `overrides` give: overridden tensors as given, virtual ones derived node by node as this
/// engine derives them (the `reshape` module), after the RFC 0008 checks against the built
/// shapes and a parse of the graph at the new shapes. What another engine re-prepares its
/// launches for (the GPU engine's execute-time shape overrides).
///
/// # Errors
/// `BAD_PARAM` with a message starting `shape override` (the RFC rules, a virtual shape this
/// engine does not derive, shapes a node refuses);
/// `NOT_APPLICABLE` when this engine cannot parse the graph at its built shapes.
pub fn shapes_at(
    graph: &hipdnn_schema::graph::Graph<'_>,
    overrides: &[ShapeOverride],
) -> PluginResult<hipdnn_backend::graph::TensorShapes> {
    let plan = plan::Plan::with_overrides(graph, overrides)?;
    let as_i64 = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
    Ok(plan
        .tensors
        .iter()
        .map(|(&uid, t)| (uid, (as_i64(&t.dims), as_i64(&t.strides))))
        .collect())
}

/// Why a CPU reference plan cannot be captured into a device graph.
pub const CAPTURE_REFUSAL: &str = "the CPU reference engine computes on the host during execute; \
     a device graph cannot record that work (execute this plan directly)";

impl Engine for ReferenceEngine {
    fn name(&self) -> &str {
        ENGINE_NAME
    }

    fn check_applicable(&self, graph: &OperationGraph) -> PluginResult<()> {
        plan::Plan::from_graph(&graph.graph()).map(|_| ())
    }

    fn supports_shape_overrides(&self) -> bool {
        true
    }

    /// The reference engine computes on the host: every binding is host memory.
    fn needs_host_memory(&self) -> bool {
        true
    }

    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        vec![BehaviorNote::SupportsExecutionPlanSerialization]
    }

    /// `WINOGRAD` when a 3×3 stride-1 convolution (fprop or dgrad) of the graph may run
    /// Winograd F(2×2, 3×3); nothing else: every step is deterministic (1 and N threads give
    /// the same bits), sums are f32 or f64, no input is narrowed.
    fn numerical_notes(
        &self,
        graph: &OperationGraph,
        _config: &EngineConfig,
    ) -> Vec<NumericalNote> {
        match plan::Plan::from_graph(&graph.graph()) {
            Ok(p) if p.may_use_winograd() => vec![NumericalNote::Winograd],
            _ => Vec::new(),
        }
    }

    fn create_execution_context(
        &self,
        config: &EngineConfig,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        if config.engine_id != self.id() {
            return Err(PluginError::not_applicable(format!(
                "engine config names engine id {}, this is {} ({})",
                config.engine_id,
                ENGINE_NAME,
                self.id()
            )));
        }
        if let Some((k, _)) = config.knob_choices.first() {
            return Err(PluginError::not_applicable(format!(
                "{ENGINE_NAME} has no knobs, config sets knob {k}"
            )));
        }
        Ok(Box::new(ReferenceContext::new(graph)?))
    }

    fn serialization(&self) -> Option<&dyn PlanSerialization> {
        Some(self)
    }
}

impl PlanSerialization for ReferenceEngine {
    fn serialize_execution_context(
        &self,
        engine_id: i64,
        ctx: &dyn ExecutionContext,
    ) -> PluginResult<Vec<u8>> {
        if engine_id != self.id() {
            return Err(PluginError::bad_param(format!(
                "save hook of {ENGINE_NAME} called for engine id {engine_id}"
            )));
        }
        let ctx = ctx
            .as_any()
            .downcast_ref::<ReferenceContext>()
            .ok_or_else(|| {
                PluginError::bad_param(format!("execution context was not built by {ENGINE_NAME}"))
            })?;
        Ok(payload::encode(ctx.graph.bytes()))
    }

    fn create_execution_context_from_serialized(
        &self,
        payload: &[u8],
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let graph = payload::decode(payload)?;
        let ctx = ReferenceContext::new(&graph).map_err(|e| match e.status {
            hipdnn_backend::PluginStatus::NotApplicable => {
                PluginError::not_applicable(format!("{}{}", payload::INCOMPATIBLE, e.message))
            }
            _ => PluginError::invalid_value(format!("{}{}", payload::DAMAGED, e.message)),
        })?;
        Ok(Box::new(ctx))
    }
}
