//! Shared test support: a counting test engine and small Graph FlatBuffers.
//!
//! Fixture values follow upstream's `TestExecutionPlanDescriptor.cpp`: uids {11, 22, 33},
//! alignments {16, 64, 256}, load payload {4, 5, 6}, save payload {9, 8, 7, 6}, workspace 1024.

#![allow(dead_code)]

use hipdnn_backend::{
    BackendHandle, BehaviorNote, Engine, EngineConfig, ExecuteArgs, ExecutionContext,
    OperationGraph, PlanSerialization, PluginError, PluginResult,
};
use hipdnn_schema::execution_plan::{SerializedExecutionPlan, SerializedExecutionPlanArgs};
use hipdnn_schema::graph::{
    DataType, Graph, GraphArgs, Node, NodeArgs, NodeAttributes, PointwiseAttributes,
    PointwiseAttributesArgs, PointwiseMode, TensorAttributes, TensorAttributesArgs,
};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub const UIDS: [i64; 3] = [11, 22, 33];
pub const ALIGNMENTS: [i64; 3] = [16, 64, 256];
pub const SAVE_PAYLOAD: [u8; 4] = [9, 8, 7, 6];
pub const LOAD_PAYLOAD: [u8; 3] = [4, 5, 6];
pub const WORKSPACE: usize = 1024;
pub const COUNTING_ENGINE: &str = "test.counting";

/// Call counters shared by the engine and its contexts.
#[derive(Default)]
pub struct Counters {
    pub save_hook: AtomicUsize,
    pub load_hook: AtomicUsize,
    pub create_context: AtomicUsize,
    pub execute: AtomicUsize,
    pub last_stream: AtomicU64,
    /// (address, length) of the last payload the load hook received.
    pub last_load_payload: Mutex<Option<(usize, Vec<u8>)>>,
    /// Tensor count of the graph the last load with a graph received.
    pub last_load_graph_nodes: Mutex<Option<usize>>,
}

/// A test engine that counts its calls and can be told to refuse save, load or applicability.
pub struct CountingEngine {
    pub name: String,
    pub counters: Arc<Counters>,
    pub refuse_save: AtomicBool,
    pub empty_save: AtomicBool,
    pub refuse_load: AtomicBool,
    pub refuse_create: AtomicBool,
    pub inapplicable: AtomicBool,
    pub has_hooks: bool,
    pub workspace: usize,
}

impl CountingEngine {
    pub fn new(name: &str) -> Self {
        CountingEngine {
            name: name.to_string(),
            counters: Arc::default(),
            refuse_save: AtomicBool::new(false),
            empty_save: AtomicBool::new(false),
            refuse_load: AtomicBool::new(false),
            refuse_create: AtomicBool::new(false),
            inapplicable: AtomicBool::new(false),
            has_hooks: true,
            workspace: WORKSPACE,
        }
    }
    pub fn without_hooks(mut self) -> Self {
        self.has_hooks = false;
        self
    }
    pub fn saves(&self) -> usize {
        self.counters.save_hook.load(Ordering::SeqCst)
    }
    pub fn loads(&self) -> usize {
        self.counters.load_hook.load(Ordering::SeqCst)
    }
    pub fn creates(&self) -> usize {
        self.counters.create_context.load(Ordering::SeqCst)
    }
    pub fn executes(&self) -> usize {
        self.counters.execute.load(Ordering::SeqCst)
    }
}

pub struct CountingContext {
    pub counters: Arc<Counters>,
    pub workspace: usize,
    /// The payload a save of this context returns.
    pub payload: Vec<u8>,
}

impl ExecutionContext for CountingContext {
    fn workspace_size(&self) -> usize {
        self.workspace
    }
    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        self.counters.execute.fetch_add(1, Ordering::SeqCst);
        self.counters
            .last_stream
            .store(args.stream, Ordering::SeqCst);
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PlanSerialization for CountingEngine {
    fn serialize_execution_context(
        &self,
        _engine_id: i64,
        ctx: &dyn ExecutionContext,
    ) -> PluginResult<Vec<u8>> {
        self.counters.save_hook.fetch_add(1, Ordering::SeqCst);
        if self.refuse_save.load(Ordering::SeqCst) {
            return Err(PluginError::not_applicable(
                "counting engine refuses to save",
            ));
        }
        if self.empty_save.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        let ctx = ctx
            .as_any()
            .downcast_ref::<CountingContext>()
            .expect("own context");
        Ok(ctx.payload.clone())
    }

    fn create_execution_context_from_serialized(
        &self,
        payload: &[u8],
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        self.counters.load_hook.fetch_add(1, Ordering::SeqCst);
        *self.counters.last_load_payload.lock().unwrap() =
            Some((payload.as_ptr() as usize, payload.to_vec()));
        if self.refuse_load.load(Ordering::SeqCst) {
            return Err(PluginError::invalid_value(
                "counting engine refuses this payload",
            ));
        }
        Ok(Box::new(CountingContext {
            counters: Arc::clone(&self.counters),
            workspace: self.workspace,
            payload: payload.to_vec(),
        }))
    }

    fn create_execution_context_with_graph(
        &self,
        payload: &hipdnn_backend::SharedBytes,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        *self.counters.last_load_graph_nodes.lock().unwrap() = Some(graph.tensor_uids().len());
        self.create_execution_context_from_shared(payload)
    }
}

impl Engine for CountingEngine {
    fn name(&self) -> &str {
        &self.name
    }
    fn check_applicable(&self, _graph: &OperationGraph) -> PluginResult<()> {
        if self.inapplicable.load(Ordering::SeqCst) {
            Err(PluginError::not_applicable(format!(
                "{} does not serve this graph",
                self.name
            )))
        } else {
            Ok(())
        }
    }
    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        if self.has_hooks {
            vec![BehaviorNote::SupportsExecutionPlanSerialization]
        } else {
            vec![]
        }
    }
    fn create_execution_context(
        &self,
        _config: &EngineConfig,
        _graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        self.counters.create_context.fetch_add(1, Ordering::SeqCst);
        if self.refuse_create.load(Ordering::SeqCst) {
            return Err(PluginError::not_applicable(
                "counting engine cannot build this graph",
            ));
        }
        Ok(Box::new(CountingContext {
            counters: Arc::clone(&self.counters),
            workspace: self.workspace,
            payload: SAVE_PAYLOAD.to_vec(),
        }))
    }
    fn serialization(&self) -> Option<&dyn PlanSerialization> {
        if self.has_hooks { Some(self) } else { None }
    }
}

/// A handle with one counting engine; returns both.
pub fn counting_handle() -> (BackendHandle, Arc<CountingEngine>) {
    let engine = Arc::new(CountingEngine::new(COUNTING_ENGINE));
    let mut handle = BackendHandle::new();
    handle.register_engine(engine.clone()).unwrap();
    (handle, engine)
}

/// One tensor of a test graph: uid, alignment, runtime pass-by-value.
#[derive(Clone, Copy)]
pub struct T(pub i64, pub i64, pub bool);

/// A Graph FlatBuffer with the given tensors (float, dims [1, 4]) and one pointwise ADD node
/// (in_0 = first tensor, in_1 = second, out_0 = last).
pub fn graph_bytes_with(tensors: &[T], preferred: Option<i64>, override_shape: bool) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let mut ts = Vec::new();
    for t in tensors {
        let name = fbb.create_string(&format!("t{}", t.0));
        let dims = fbb.create_vector(&[1i64, 4]);
        let strides = fbb.create_vector(&[4i64, 1]);
        ts.push(TensorAttributes::create(
            &mut fbb,
            &TensorAttributesArgs {
                uid: t.0,
                name: Some(name),
                data_type: DataType::FLOAT,
                dims: Some(dims),
                strides: Some(strides),
                is_runtime_pass_by_value: t.2,
                alignment: t.1,
                ..Default::default()
            },
        ));
    }
    let tensors_vec = fbb.create_vector(&ts);
    let pw = PointwiseAttributes::create(
        &mut fbb,
        &PointwiseAttributesArgs {
            operation: PointwiseMode::ADD,
            in_0_tensor_uid: tensors[0].0,
            in_1_tensor_uid: Some(tensors[1 % tensors.len()].0),
            out_0_tensor_uid: tensors[tensors.len() - 1].0,
            ..Default::default()
        },
    );
    let node_name = fbb.create_string("add");
    let node = Node::create(
        &mut fbb,
        &NodeArgs {
            name: Some(node_name),
            compute_data_type: DataType::FLOAT,
            attributes_type: NodeAttributes::PointwiseAttributes,
            attributes: Some(pw.as_union_value()),
        },
    );
    let nodes = fbb.create_vector(&[node]);
    let gname = fbb.create_string("test graph");
    let g = Graph::create(
        &mut fbb,
        &GraphArgs {
            name: Some(gname),
            compute_data_type: DataType::FLOAT,
            intermediate_data_type: DataType::FLOAT,
            io_data_type: DataType::FLOAT,
            tensors: Some(tensors_vec),
            nodes: Some(nodes),
            preferred_engine_id: preferred,
            is_override_shape_enabled: override_shape,
            ..Default::default()
        },
    );
    fbb.finish_minimal(g);
    fbb.finished_data().to_vec()
}

/// The fixture graph: uids {11, 22, 33} with alignments {16, 64, 256}.
pub fn graph_bytes() -> Vec<u8> {
    graph_bytes_with(
        &[
            T(UIDS[0], ALIGNMENTS[0], false),
            T(UIDS[1], ALIGNMENTS[1], false),
            T(UIDS[2], ALIGNMENTS[2], false),
        ],
        None,
        false,
    )
}

pub fn fixture_graph() -> OperationGraph {
    OperationGraph::from_bytes(&graph_bytes()).unwrap()
}

/// Builds a plan on the counting engine from the fixture graph.
pub fn built_plan(handle: &BackendHandle) -> hipdnn_backend::ExecutionPlanDescriptor {
    let id = handle.engine_id_by_name(COUNTING_ENGINE).unwrap();
    hipdnn_backend::ExecutionPlanDescriptor::finalize(
        handle,
        &EngineConfig {
            engine_id: id,
            knob_choices: vec![],
        },
        &fixture_graph(),
    )
    .unwrap()
}

/// Field values of a hand-built envelope; `None` omits a vector field.
#[derive(Clone)]
pub struct Env {
    pub version: u32,
    pub engine_id: i64,
    pub workspace_size: i64,
    pub uids: Option<Vec<i64>>,
    pub payload: Option<Vec<u8>>,
    pub override_shape: bool,
    pub alignments: Option<Vec<i64>>,
}

impl Env {
    /// A valid version 2 envelope for the counting engine with the fixture values.
    pub fn v2() -> Self {
        Env {
            version: 2,
            engine_id: hipdnn_backend::engine_id_from_name(COUNTING_ENGINE),
            workspace_size: WORKSPACE as i64,
            uids: Some(UIDS.to_vec()),
            payload: Some(LOAD_PAYLOAD.to_vec()),
            override_shape: false,
            alignments: Some(ALIGNMENTS.to_vec()),
        }
    }
    /// A valid version 1 envelope (no alignments).
    pub fn v1() -> Self {
        Env {
            version: 1,
            alignments: None,
            ..Self::v2()
        }
    }
    pub fn bytes(&self) -> Vec<u8> {
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let payload = self.payload.as_ref().map(|p| fbb.create_vector(p));
        let uids = self.uids.as_ref().map(|u| fbb.create_vector(u));
        let aligns = self.alignments.as_ref().map(|a| fbb.create_vector(a));
        let root = SerializedExecutionPlan::create(
            &mut fbb,
            &SerializedExecutionPlanArgs {
                version: self.version,
                engine_id: self.engine_id,
                workspace_size: self.workspace_size,
                tensor_uids: uids,
                plugin_payload: payload,
                is_override_shape_enabled: self.override_shape,
                tensor_alignments: aligns,
            },
        );
        fbb.finish_minimal(root);
        fbb.finished_data().to_vec()
    }
}
