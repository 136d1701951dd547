//! Saving plans of engines other than the CPU reference engine: an engine without the
//! `SUPPORTS_EXECUTION_PLAN_SERIALIZATION` behavior note (graph-only save with a warning), an
//! engine with the note whose save hook refuses (no graph-only fallback), and a plan that needs
//! a workspace. The engines are tiny test engines registered on a `Handle::cpu()` and chosen
//! through the graph's preferred engine id.

use hipdnn::{
    BehaviorNote, Buffer, DataType, ErrorCode, Graph, Handle, PointwiseAttributes, PointwiseMode,
    TensorAttributes, VariantPack,
};
use hipdnn_backend::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, OperationGraph,
    PlanSerialization, PluginError, PluginResult, engine_id_from_name, hdgp,
};
use std::any::Any;
use std::sync::{Arc, Mutex, Once};

const GRAPH_ONLY: &str = "test.graph_only";
const REFUSING: &str = "test.refusing_save";
const WORKSPACE: usize = 256;
const FILL: f32 = 1.5;

// ---- log capture -------------------------------------------------------------------------

static LOGS: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        LOGS.lock()
            .unwrap()
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

fn install_logger() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        log::set_logger(&CAPTURE).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

fn warnings_containing(text: &str) -> Vec<String> {
    LOGS.lock()
        .unwrap()
        .iter()
        .filter(|(l, m)| *l == log::Level::Warn && m.contains(text))
        .map(|(_, m)| m.clone())
        .collect()
}

// ---- test engines ------------------------------------------------------------------------

/// Writes [`FILL`] into every output byte group of 4 it is given, after checking the workspace.
struct FillContext;

impl ExecutionContext for FillContext {
    fn workspace_size(&self) -> usize {
        WORKSPACE
    }
    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        match &args.workspace {
            Some(ws) if ws.len() >= WORKSPACE => {}
            _ => {
                return Err(PluginError::bad_param(
                    "test engine: workspace missing or short",
                ));
            }
        }
        for t in args.tensors.iter_mut() {
            if let BufferRef::HostMut(out) = &mut t.data {
                for c in out.chunks_exact_mut(4) {
                    c.copy_from_slice(&FILL.to_le_bytes());
                }
            }
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A test engine; with `note` it claims SUPPORTS_EXECUTION_PLAN_SERIALIZATION and has hooks
/// that refuse.
struct TestEngine {
    name: &'static str,
    note: bool,
}

impl Engine for TestEngine {
    fn name(&self) -> &str {
        self.name
    }
    fn check_applicable(&self, _graph: &OperationGraph) -> PluginResult<()> {
        Ok(())
    }
    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        if self.note {
            vec![BehaviorNote::SupportsExecutionPlanSerialization]
        } else {
            Vec::new()
        }
    }
    fn create_execution_context(
        &self,
        _config: &EngineConfig,
        _graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        Ok(Box::new(FillContext))
    }
    fn serialization(&self) -> Option<&dyn PlanSerialization> {
        if self.note { Some(self) } else { None }
    }
}

impl PlanSerialization for TestEngine {
    fn serialize_execution_context(
        &self,
        _engine_id: i64,
        _ctx: &dyn ExecutionContext,
    ) -> PluginResult<Vec<u8>> {
        Err(PluginError::internal(
            "test engine refuses to save this plan",
        ))
    }
    fn create_execution_context_from_serialized(
        &self,
        _payload: &[u8],
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        Err(PluginError::internal("test engine refuses to load"))
    }
}

fn handle_with_test_engines() -> Handle {
    let mut h = Handle::cpu().unwrap();
    for (name, note) in [(GRAPH_ONLY, false), (REFUSING, true)] {
        h.backend_mut()
            .register_engine(Arc::new(TestEngine { name, note }))
            .unwrap();
    }
    assert_eq!(
        h.engine_names(),
        vec!["hipdnn.reference.cpu", GRAPH_ONLY, REFUSING]
    );
    h
}

/// y = relu(x), x 1×2×2×2 (uid 1), y uid 2.
fn relu_graph(preferred: Option<&str>) -> Graph {
    let mut g = Graph::new();
    g.set_name("relu")
        .set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float)
        .set_preferred_engine_id(preferred.map(engine_id_from_name));
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([1, 2, 2, 2])
            .packed_nchw(),
    );
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(y, true).set_uid(y, 2).set_tensor_name(y, "y");
    g
}

fn run(g: &Graph, h: &Handle, ws_len: Option<usize>) -> hipdnn::Result<Vec<f32>> {
    let x = Buffer::from_slice(&[-2.0f32, -1.0, 0.0, 1.0, 2.0, 3.0, -0.5, 0.5]);
    let mut y = Buffer::<f32>::filled(8, f32::NAN);
    let mut ws = ws_len.map(Buffer::<u8>::zeros);
    g.execute(
        h,
        VariantPack::new().with(1, &x).with(2, &mut y),
        ws.as_mut(),
    )?;
    Ok(y.to_vec().unwrap())
}

#[test]
fn without_a_preferred_engine_the_cpu_engine_is_chosen_and_saved_with_its_plan() {
    let h = handle_with_test_engines();
    let mut g = relu_graph(None);
    g.build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), "hipdnn.reference.cpu");
    assert_eq!(
        run(&g, &h, None).unwrap(),
        vec![0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.5]
    );
    assert!(hdgp::is_graph_and_plan_container(&g.to_binary().unwrap()));
}

#[test]
fn an_engine_without_the_serialization_note_saves_the_graph_only_with_a_warning() {
    install_logger();
    let h = handle_with_test_engines();
    let mut g = relu_graph(Some(GRAPH_ONLY));
    g.build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), GRAPH_ONLY);
    assert_eq!(g.workspace_size().unwrap(), WORKSPACE);
    assert_eq!(
        run(&g, &h, Some(WORKSPACE)).unwrap(),
        vec![FILL; 8],
        "the test engine ran"
    );

    let before = warnings_containing(GRAPH_ONLY).len();
    let saved = g.to_binary().unwrap();
    assert!(!hdgp::is_graph_and_plan_container(&saved));
    assert_eq!(
        saved,
        g.to_graph_bytes().unwrap(),
        "the bare Graph FlatBuffer"
    );
    let warnings = warnings_containing(GRAPH_ONLY);
    assert_eq!(
        warnings.len(),
        before + 1,
        "one warning per save: {warnings:?}"
    );
    assert_eq!(
        warnings.last().unwrap(),
        "hipdnn: engine test.graph_only does not support execution plan serialization; serializing the graph only."
    );

    // The plan alone cannot be saved: the engine has no hooks.
    let e = g.to_compiled_plan_binary().unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
    assert!(e.message.contains("HIPDNN_STATUS_NOT_SUPPORTED"), "{e}");

    // The saved graph loads without a plan and builds again with the same engine.
    let mut g2 = Graph::from_binary(&h, &saved).unwrap();
    assert!(!g2.has_plan());
    assert_eq!(
        g2.preferred_engine_id(),
        Some(engine_id_from_name(GRAPH_ONLY))
    );
    g2.build(&h).unwrap();
    assert_eq!(g2.engine_name().unwrap(), GRAPH_ONLY);
}

#[test]
fn an_engine_with_the_note_whose_save_hook_refuses_fails_to_save_without_fallback() {
    install_logger();
    let h = handle_with_test_engines();
    let mut g = relu_graph(Some(REFUSING));
    g.build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), REFUSING);
    assert_eq!(run(&g, &h, Some(WORKSPACE)).unwrap(), vec![FILL; 8]);
    for e in [
        g.to_binary().unwrap_err(),
        g.to_compiled_plan_binary().unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
        assert!(
            e.message
                .starts_with("Cannot serialize the execution plan (HIPDNN_STATUS_PLUGIN_ERROR): "),
            "{e}"
        );
        assert!(
            e.message.contains("test engine refuses to save this plan"),
            "{e}"
        );
    }
    assert!(
        warnings_containing(REFUSING).is_empty(),
        "no graph-only fallback warning"
    );
}

#[test]
fn a_workspace_smaller_than_the_plan_needs_is_refused() {
    let h = handle_with_test_engines();
    let mut g = relu_graph(Some(GRAPH_ONLY));
    g.build(&h).unwrap();
    let e = run(&g, &h, Some(WORKSPACE - 1)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "the plan needs a workspace of 256 bytes; 255 bytes were given"
    );
    let e = run(&g, &h, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "the plan needs a workspace of 256 bytes; 0 bytes were given"
    );
    assert_eq!(
        run(&g, &h, Some(WORKSPACE + 64)).unwrap(),
        vec![FILL; 8],
        "a larger one is fine"
    );
}
