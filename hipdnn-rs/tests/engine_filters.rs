//! Engine filters and numerical notes (issue 35, deliverable 2): `deselect_engines`,
//! `deselect_workspace_greater_than`, `select/deselect_numeric_notes`,
//! `deselect_behavior_notes`, the deterministic-only handle, and the notes each shipped
//! engine states.

use hipdnn::*;
use hipdnn_backend::engine::{BehaviorNote, Engine, EngineConfig, ExecuteArgs, ExecutionContext};
use hipdnn_backend::{OperationGraph, PluginResult};
use hipdnn_engines::reference::ReferenceEngine;
use std::any::Any;
use std::sync::Arc;

/// A test engine: the CPU reference engine under another name, noted as `notes` and asking
/// for `workspace` bytes.
struct Noted {
    name: &'static str,
    notes: Vec<NumericalNote>,
    workspace: usize,
    inner: ReferenceEngine,
}

struct NotedContext {
    inner: Box<dyn ExecutionContext>,
    workspace: usize,
}

impl ExecutionContext for NotedContext {
    fn workspace_size(&self) -> usize {
        self.workspace
    }
    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        self.inner.execute(args)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Engine for Noted {
    fn name(&self) -> &str {
        self.name
    }
    fn check_applicable(&self, graph: &OperationGraph) -> PluginResult<()> {
        self.inner.check_applicable(graph)
    }
    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        vec![BehaviorNote::RuntimeCompilation]
    }
    fn numerical_notes(&self, _graph: &OperationGraph, _c: &EngineConfig) -> Vec<NumericalNote> {
        self.notes.clone()
    }
    fn create_execution_context(
        &self,
        config: &EngineConfig,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let inner_config = EngineConfig {
            engine_id: self.inner.id(),
            knob_choices: config.knob_choices.clone(),
        };
        Ok(Box::new(NotedContext {
            inner: self.inner.create_execution_context(&inner_config, graph)?,
            workspace: self.workspace,
        }))
    }
}

const CPU: &str = "hipdnn.reference.cpu";
const NONDET: &str = "test.nondeterministic";

/// A CPU handle with the noted test engine registered after the reference engine.
fn handle_with_test_engine() -> Handle {
    let mut h = Handle::cpu().unwrap();
    h.backend_mut()
        .register_engine(Arc::new(Noted {
            name: NONDET,
            notes: vec![NumericalNote::Nondeterministic],
            workspace: 256,
            inner: ReferenceEngine::new(),
        }))
        .unwrap();
    h
}

/// `x (1, c, 8, 8) * w (k, c, f, f)` (padding f/2) as a graph with uids 1, 2, 3.
fn conv(c: i64, k: i64, f: i64) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(TensorAttributes::new("x").uid(1).dims([1, c, 8, 8]));
    let w = g.tensor(TensorAttributes::new("w").uid(2).dims([k, c, f, f]));
    let p = f / 2;
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .pre_padding([p, p])
            .post_padding([p, p])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 3);
    g
}

fn relu() -> Graph {
    let mut g = Graph::new();
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([2, 3])
            .data_type(DataType::Float),
    );
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(y, true).set_uid(y, 2);
    g
}

/// Runs the ReLU graph's plan on the CPU and checks the values (a filtered build still runs).
fn run_relu(g: &Graph, h: &Handle) {
    let x = Buffer::from_slice(&[-1f32, 2., -3., 4., 0., 5.]);
    let mut y = Buffer::<f32>::zeros(6);
    let mut ws = Buffer::<u8>::zeros(g.workspace_size().unwrap());
    g.execute(
        h,
        VariantPack::new().input(1, &x).output(2, &mut y),
        Some(&mut ws),
    )
    .unwrap();
    assert_eq!(y.to_vec().unwrap(), [0., 2., 0., 4., 0., 5.]);
}

fn build_err(g: &mut Graph, h: &Handle) -> Error {
    let e = g.build(h).unwrap_err();
    assert_eq!(e.code, ErrorCode::GraphNotSupported, "{}", e.message);
    e
}

#[test]
fn cpu_engine_notes_winograd_only_where_a_3x3_stride_1_conv_may_use_it() {
    let h = Handle::cpu().unwrap();
    for (c, k, f, want) in [
        (16, 16, 3, vec![NumericalNote::Winograd]),
        (16, 15, 3, vec![]), // too few output channels
        (16, 16, 1, vec![]), // 1×1
        (3, 16, 3, vec![]),  // too few input channels
    ] {
        let mut g = conv(c, k, f);
        g.build(&h).unwrap();
        assert_eq!(g.numerical_notes().unwrap(), want, "c {c} k {k} {f}×{f}");
    }
    let mut g = relu();
    g.build(&h).unwrap();
    assert_eq!(g.numerical_notes().unwrap(), []);
    // Saved and loaded, by both routes, the notes are the same (the CPU engine keeps its graph).
    let mut g = conv(16, 16, 3);
    g.build(&h).unwrap();
    let full = Graph::from_binary(&h, &g.to_binary().unwrap()).unwrap();
    assert_eq!(full.numerical_notes().unwrap(), [NumericalNote::Winograd]);
    let bare = Graph::from_compiled_plan_binary(&h, &g.to_compiled_plan_binary().unwrap()).unwrap();
    assert_eq!(bare.numerical_notes().unwrap(), [NumericalNote::Winograd]);
    // Without a plan.
    let e = relu().numerical_notes().unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
}

#[test]
fn deselect_numeric_notes_and_select_numeric_notes_filter_by_the_engines_notes() {
    let h = Handle::cpu().unwrap();
    let mut g = conv(16, 16, 3);
    g.deselect_numeric_notes([NumericalNote::Winograd]);
    let e = build_err(&mut g, &h);
    assert_eq!(
        e.message,
        format!(
            "No engine is left after the engine filters: {CPU}: noted WINOGRAD (deselect_numeric_notes)"
        )
    );
    assert!(!g.has_plan());
    // The same filter lets a 1×1 conv through.
    let mut g1 = conv(16, 16, 1);
    g1.deselect_numeric_notes([NumericalNote::Winograd])
        .build(&h)
        .unwrap();

    let mut g = relu();
    g.select_numeric_notes([NumericalNote::TensorCore]);
    let e = build_err(&mut g, &h);
    assert_eq!(
        e.message,
        format!(
            "No engine is left after the engine filters: {CPU}: not noted TENSOR_CORE (select_numeric_notes)"
        )
    );
    let mut g = conv(16, 16, 3);
    g.select_numeric_notes([NumericalNote::Winograd])
        .build(&h)
        .unwrap();
}

#[test]
fn deselect_engines_by_name_and_clear_engine_filters() {
    let h = handle_with_test_engine();
    let mut g = relu();
    g.deselect_engines([CPU]);
    g.build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), NONDET);
    run_relu(&g, &h);
    g.deselect_engines([NONDET]);
    let e = build_err(&mut g, &h);
    assert_eq!(
        e.message,
        format!(
            "No engine is left after the engine filters: {CPU}: deselected by name \
             (deselect_engines); {NONDET}: deselected by name (deselect_engines)"
        )
    );
    // Filters are build settings, not graph content.
    assert_eq!(g, relu());
    g.clear_engine_filters().build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
}

#[test]
fn a_deterministic_only_handle_refuses_an_engine_noted_nondeterministic_by_name() {
    let mut h = handle_with_test_engine();
    let mut g = relu();
    g.deselect_engines([CPU]);
    h.set_deterministic_only(true);
    let e = build_err(&mut g, &h);
    assert_eq!(
        e.message,
        format!(
            "No engine is left after the engine filters: {CPU}: deselected by name \
             (deselect_engines); {NONDET}: noted NONDETERMINISTIC and the handle is \
             deterministic-only (Handle::set_deterministic_only)"
        )
    );
    // Without the name filter the deterministic CPU engine serves the graph.
    g.clear_engine_filters().build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
    // The same refusal through deselect_numeric_notes, on a handle not in the mode.
    h.set_deterministic_only(false);
    let mut g = relu();
    g.deselect_engines([CPU])
        .deselect_numeric_notes([NumericalNote::Nondeterministic]);
    let e = build_err(&mut g, &h);
    assert!(
        e.message.ends_with(&format!(
            "{NONDET}: noted NONDETERMINISTIC (deselect_numeric_notes)"
        )),
        "{}",
        e.message
    );
}

#[test]
fn deselect_workspace_greater_than_keeps_plans_within_the_limit_or_names_the_size() {
    let h = handle_with_test_engine();
    // The CPU engine needs no workspace: a limit of 0 keeps it.
    let mut g = relu();
    g.deselect_workspace_greater_than(0).build(&h).unwrap();
    assert_eq!(
        (g.engine_name().unwrap(), g.workspace_size().unwrap()),
        (CPU, 0)
    );
    // The test engine's plan needs 256 bytes.
    let mut g = relu();
    g.deselect_engines([CPU])
        .deselect_workspace_greater_than(255);
    let e = build_err(&mut g, &h);
    assert_eq!(
        e.message,
        format!(
            "No engine is left after the engine filters: {CPU}: deselected by name \
             (deselect_engines); {NONDET}: its plan needs a workspace of 256 bytes, more than \
             255 (deselect_workspace_greater_than)"
        )
    );
    g.deselect_workspace_greater_than(256).build(&h).unwrap();
    assert_eq!(
        (g.engine_name().unwrap(), g.workspace_size().unwrap()),
        (NONDET, 256)
    );
    run_relu(&g, &h);
}

#[test]
fn deselect_behavior_notes_skips_engines_with_the_note() {
    let h = handle_with_test_engine();
    let mut g = relu();
    g.deselect_engines([CPU])
        .deselect_behavior_notes([BehaviorNote::RuntimeCompilation]);
    let e = build_err(&mut g, &h);
    assert!(
        e.message.ends_with(&format!(
            "{NONDET}: noted RuntimeCompilation (deselect_behavior_notes)"
        )),
        "{}",
        e.message
    );
    let mut g = relu();
    g.deselect_behavior_notes([BehaviorNote::RuntimeCompilation])
        .build(&h)
        .unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
}
