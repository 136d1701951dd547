//! BackendHandle (engine registry, heuristic) and plan execution with a variant pack (reference
//! `backend-c-api.md` §4.7).

mod common;

use common::*;
use hipdnn_backend::{
    BackendHandle, BufferRef, EngineConfig, ExecutionPlanDescriptor, HeuristicMode, OperationGraph,
    Status, VariantPackDescriptor, engine_id_from_name,
};
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn dev(addr: u64) -> BufferRef<'static> {
    BufferRef::Device { addr, len: 16 }
}

fn ws() -> BufferRef<'static> {
    BufferRef::Device {
        addr: 0x10_0000,
        len: WORKSPACE,
    }
}

/// Addresses aligned to 256 (every fixture alignment).
fn aligned_pack() -> VariantPackDescriptor<'static> {
    VariantPackDescriptor::new()
        .with(11, dev(0x1000))
        .with(22, dev(0x2000))
        .with(33, dev(0x3000))
        .with_workspace(ws())
}

#[test]
fn register_engine_rejects_duplicate_ids() {
    let (mut handle, _engine) = counting_handle();
    let e = handle
        .register_engine(Arc::new(CountingEngine::new(COUNTING_ENGINE)))
        .unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message.starts_with("duplicate engine id"),
        "{}",
        e.message
    );
    assert_eq!(handle.engines().len(), 1);
}

#[test]
fn engine_lookup_by_name_and_id() {
    let (handle, _engine) = counting_handle();
    let id = handle.engine_id_by_name(COUNTING_ENGINE).unwrap();
    assert_eq!(id, engine_id_from_name(COUNTING_ENGINE));
    assert_eq!(handle.engine(id).unwrap().name(), COUNTING_ENGINE);
    assert_eq!(
        handle.engine_id_by_name("nope").unwrap_err().status,
        Status::NotSupported
    );
    let e = handle.engine_for(5).err().unwrap();
    assert_eq!(
        (e.status, e.message.as_str()),
        (Status::InternalError, "Invalid engine ID: 5")
    );
}

fn three_engines() -> (BackendHandle, Vec<Arc<CountingEngine>>) {
    let mut handle = BackendHandle::new();
    let engines: Vec<_> = ["test.a", "test.b", "test.c"]
        .iter()
        .map(|n| Arc::new(CountingEngine::new(n)))
        .collect();
    for e in &engines {
        handle.register_engine(e.clone()).unwrap();
    }
    (handle, engines)
}

#[test]
fn fallback_heuristic_lists_applicable_engines_in_registration_order() {
    let (handle, engines) = three_engines();
    engines[1].inapplicable.store(true, Ordering::SeqCst);
    let configs = handle
        .engine_configs(&fixture_graph(), HeuristicMode::Fallback)
        .unwrap();
    let ids: Vec<i64> = configs.iter().map(|c| c.engine_id).collect();
    assert_eq!(
        ids,
        vec![engine_id_from_name("test.a"), engine_id_from_name("test.c")]
    );
    assert!(configs.iter().all(|c| c.knob_choices.is_empty()));
}

#[test]
fn fallback_heuristic_puts_the_preferred_engine_first() {
    let (handle, _engines) = three_engines();
    let g = OperationGraph::from_bytes(&graph_bytes_with(
        &[T(1, 16, false), T(2, 16, false), T(3, 16, false)],
        Some(engine_id_from_name("test.c")),
        false,
    ))
    .unwrap();
    let ids: Vec<i64> = handle
        .engine_configs(&g, HeuristicMode::Fallback)
        .unwrap()
        .iter()
        .map(|c| c.engine_id)
        .collect();
    assert_eq!(
        ids,
        vec![
            engine_id_from_name("test.c"),
            engine_id_from_name("test.a"),
            engine_id_from_name("test.b")
        ]
    );
}

#[test]
fn fallback_heuristic_without_an_applicable_engine_is_not_supported_with_reasons() {
    let (handle, engines) = three_engines();
    for e in &engines {
        e.inapplicable.store(true, Ordering::SeqCst);
    }
    let e = handle
        .engine_configs(&fixture_graph(), HeuristicMode::Fallback)
        .unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(
        e.message
            .starts_with("no engine is applicable to the graph")
    );
    assert!(
        e.message.contains("test.b does not serve this graph"),
        "{}",
        e.message
    );
}

#[test]
fn execute_routes_to_the_plan_context_on_the_handle_stream() {
    let (mut handle, engine) = counting_handle();
    handle.set_stream(0xABCD);
    let plan = built_plan(&handle);
    plan.execute(&handle, aligned_pack()).unwrap();
    assert_eq!(engine.executes(), 1);
    assert_eq!(engine.counters.last_stream.load(Ordering::SeqCst), 0xABCD);
}

#[test]
fn execute_enforces_tensor_alignments() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    // uid 33 needs 256-byte alignment; 0x3010 is only 16-aligned.
    let pack = VariantPackDescriptor::new()
        .with(11, dev(0x1000))
        .with(33, dev(0x3010))
        .with_workspace(ws());
    let e = plan.execute(&handle, pack).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("variant pack tensor uid 33 at address 0x3010 is not aligned to 256")
    );
    assert_eq!(engine.executes(), 0);
    // A null address is not checked (upstream skips null pointers).
    let pack = VariantPackDescriptor::new()
        .with(33, dev(0))
        .with_workspace(ws());
    plan.execute(&handle, pack).unwrap();
}

#[test]
fn execute_of_a_v1_loaded_plan_does_not_enforce_alignment() {
    let (handle, engine) = counting_handle();
    let plan = ExecutionPlanDescriptor::from_bytes(&handle, &Env::v1().bytes()).unwrap();
    let pack = VariantPackDescriptor::new()
        .with(33, dev(0x3001))
        .with_workspace(ws());
    plan.execute(&handle, pack).unwrap();
    assert_eq!(engine.executes(), 1);
}

#[test]
fn execute_of_a_v2_loaded_plan_enforces_alignment() {
    let (handle, _engine) = counting_handle();
    let plan = ExecutionPlanDescriptor::from_bytes(&handle, &Env::v2().bytes()).unwrap();
    let pack = VariantPackDescriptor::new()
        .with(22, dev(0x2020))
        .with_workspace(ws());
    assert_eq!(
        plan.execute(&handle, pack).unwrap_err().status,
        Status::BadParam
    );
}

#[test]
fn execute_rejects_unknown_and_duplicate_uids() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    let e = plan
        .execute(
            &handle,
            VariantPackDescriptor::new()
                .with(99, dev(0x1000))
                .with_workspace(ws()),
        )
        .unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("variant pack tensor uid 99 is not a tensor of the plan")
    );
    let e = plan
        .execute(
            &handle,
            VariantPackDescriptor::new()
                .with(11, dev(0x1000))
                .with(11, dev(0x2000))
                .with_workspace(ws()),
        )
        .unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("variant pack binds tensor uid 11 twice")
    );
    assert_eq!(engine.executes(), 0);
}

#[test]
fn execute_rejects_a_too_small_workspace() {
    let (handle, _engine) = counting_handle();
    let plan = built_plan(&handle);
    let pack = VariantPackDescriptor::new().with(11, dev(0x1000));
    let e = plan.execute(&handle, pack).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("the plan needs a workspace of 1024 bytes; 0 bytes were given")
    );
}

#[test]
fn execute_through_a_handle_without_the_engine_is_internal_error() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    let other = BackendHandle::new();
    let e = plan.execute(&other, aligned_pack()).unwrap_err();
    assert_eq!(e.status, Status::InternalError);
    assert!(e.message.starts_with("Invalid engine ID: "));
    assert_eq!(engine.executes(), 0);
}

#[test]
fn built_plan_keeps_its_engine_config() {
    let (handle, _engine) = counting_handle();
    let cfg = handle
        .engine_configs(&fixture_graph(), HeuristicMode::Fallback)
        .unwrap()
        .remove(0);
    let plan = ExecutionPlanDescriptor::finalize(&handle, &cfg, &fixture_graph()).unwrap();
    assert_eq!(
        plan.engine_config(),
        Some(&EngineConfig {
            engine_id: cfg.engine_id,
            knob_choices: vec![]
        })
    );
}

/// The fixture's tensors in a graph with the override-shape flag.
fn flagged_graph() -> OperationGraph {
    OperationGraph::from_bytes(&graph_bytes_with(
        &[T(1, 16, false), T(2, 16, false), T(3, 16, false)],
        None,
        true,
    ))
    .unwrap()
}

#[test]
fn a_graph_with_the_override_flag_is_offered_only_to_engines_that_execute_overrides() {
    let (handle, _engines) = three_engines();
    assert_eq!(
        handle
            .engine_configs(&fixture_graph(), HeuristicMode::Fallback)
            .unwrap()
            .len(),
        3
    );
    let e = handle
        .engine_configs(&flagged_graph(), HeuristicMode::Fallback)
        .unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert_eq!(
        e.message,
        "no engine is applicable to the graph: test.a: the graph has the override-shape flag and \
         this engine does not execute shape overrides; test.b: the graph has the override-shape \
         flag and this engine does not execute shape overrides; test.c: the graph has the \
         override-shape flag and this engine does not execute shape overrides"
    );
}

#[test]
fn overrides_need_the_plan_flag_and_an_engine_that_executes_them() {
    let (handle, engine) = counting_handle();
    let ov = [hipdnn_backend::ShapeOverride::new(1, [2], [1])];
    // No flag: NOT_SUPPORTED before the engine runs.
    let plan = built_plan(&handle);
    let (mut t, w) = aligned_pack().into_parts();
    let e = plan
        .execute_bindings_with_overrides(&handle, &mut t, w, &ov)
        .unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(
        e.message.starts_with(
            "shape overrides need a plan whose graph was built with the override-shape flag"
        ),
        "{}",
        e.message
    );
    // No overrides: the plain execute, flag or not.
    let (mut t, w) = aligned_pack().into_parts();
    plan.execute_bindings_with_overrides(&handle, &mut t, w, &[])
        .unwrap();
    assert_eq!(engine.executes(), 1);
    // A flagged plan (finalized directly, past the heuristic's filter) of an engine without
    // override support: NOT_SUPPORTED naming it.
    let id = handle.engine_id_by_name(COUNTING_ENGINE).unwrap();
    let flagged = ExecutionPlanDescriptor::finalize(
        &handle,
        &EngineConfig {
            engine_id: id,
            knob_choices: vec![],
        },
        &flagged_graph(),
    )
    .unwrap();
    let (mut t, w) = aligned_pack().into_parts();
    let e = flagged
        .execute_bindings_with_overrides(&handle, &mut t, w, &ov)
        .unwrap_err();
    assert_eq!(
        (e.status, e.message),
        (
            Status::NotSupported,
            format!("engine \"{COUNTING_ENGINE}\" does not execute shape overrides")
        )
    );
    assert_eq!(engine.executes(), 1, "the engine did not run");
}
