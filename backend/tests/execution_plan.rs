//! ExecutionPlanDescriptor behaviour: finalize, attributes, the serialized-plan cache and the
//! ordered envelope checks (reference `backend-c-api.md` §4, §5, §8; upstream PRs #13315 and
//! #14517).

mod common;

use common::*;
use hipdnn_backend::{
    BackendError, BackendHandle, EngineConfig, ExecutionPlanDescriptor, PlanEnvelope, SharedBytes,
    Status, engine_id_from_name,
};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};

fn err_of<T: std::fmt::Debug>(r: Result<T, BackendError>) -> BackendError {
    r.expect_err("expected an error")
}

fn assert_err<T: std::fmt::Debug>(r: Result<T, BackendError>, status: Status, prefix: &str) {
    let e = err_of(r);
    assert_eq!(e.status, status, "message: {}", e.message);
    assert!(
        e.message.starts_with(prefix),
        "message {:?} does not start with {prefix:?}",
        e.message
    );
}

// ---- finalize and attributes ----

#[test]
fn finalize_collects_uids_alignments_workspace_and_engine_id() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    assert_eq!(plan.workspace_size(), 1024);
    assert_eq!(plan.engine_id(), engine_id_from_name(COUNTING_ENGINE));
    assert_eq!(plan.tensor_uids(), &UIDS);
    assert_eq!(plan.tensor_alignments(), &ALIGNMENTS);
    assert!(!plan.is_override_shape_enabled());
    assert_eq!(
        plan.engine_config(),
        Some(&EngineConfig {
            engine_id: engine.counters_id(),
            knob_choices: vec![]
        })
    );
    assert_eq!(engine.creates(), 1);
    assert!(
        !plan.is_serialized_plan_cached(),
        "a built plan caches only on its first save"
    );
}

trait Id {
    fn counters_id(&self) -> i64;
}
impl Id for CountingEngine {
    fn counters_id(&self) -> i64 {
        engine_id_from_name(&self.name)
    }
}

#[test]
fn finalize_gives_runtime_pass_by_value_tensors_alignment_zero() {
    let (handle, _engine) = counting_handle();
    let g = hipdnn_backend::OperationGraph::from_bytes(&graph_bytes_with(
        &[T(1, 16, false), T(2, 32, true), T(3, 8, false)],
        None,
        true,
    ))
    .unwrap();
    let id = engine_id_from_name(COUNTING_ENGINE);
    let plan = ExecutionPlanDescriptor::finalize(
        &handle,
        &EngineConfig {
            engine_id: id,
            knob_choices: vec![],
        },
        &g,
    )
    .unwrap();
    assert_eq!(plan.tensor_uids(), &[1, 2, 3]);
    assert_eq!(plan.tensor_alignments(), &[16, 0, 8]);
    assert!(plan.is_override_shape_enabled());
}

#[test]
fn finalize_with_an_unknown_engine_id_is_internal_error() {
    let (handle, engine) = counting_handle();
    let r = ExecutionPlanDescriptor::finalize(
        &handle,
        &EngineConfig {
            engine_id: 42,
            knob_choices: vec![],
        },
        &fixture_graph(),
    );
    assert_err(r, Status::InternalError, "Invalid engine ID: 42");
    assert_eq!(engine.creates(), 0);
}

#[test]
fn finalize_keeps_the_engine_message_when_context_creation_fails() {
    let (handle, engine) = counting_handle();
    engine.refuse_create.store(true, Ordering::SeqCst);
    let id = engine_id_from_name(COUNTING_ENGINE);
    let e = err_of(ExecutionPlanDescriptor::finalize(
        &handle,
        &EngineConfig {
            engine_id: id,
            knob_choices: vec![],
        },
        &fixture_graph(),
    ));
    assert_eq!(e.status, Status::PluginError);
    assert!(
        e.message
            .starts_with("engine could not create an execution context")
    );
    assert!(
        e.message
            .contains("counting engine cannot build this graph"),
        "{}",
        e.message
    );
}

// ---- save: first save, cache, size query ----

#[test]
fn first_save_of_a_built_plan_calls_the_save_hook_once() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    let a = plan.to_bytes().unwrap();
    assert_eq!(engine.saves(), 1);
    assert!(plan.is_serialized_plan_cached());
    let b = plan.to_bytes().unwrap();
    assert_eq!(engine.saves(), 1, "a later save copies the cache");
    assert_eq!(a, b);
    // The bytes are a version 2 envelope describing the plan.
    let env = PlanEnvelope::parse(&a).unwrap();
    assert_eq!(env.version, 2);
    assert_eq!(env.engine_id, engine_id_from_name(COUNTING_ENGINE));
    assert_eq!(env.workspace_size, 1024);
    assert_eq!(env.tensor_uids, UIDS);
    assert_eq!(env.tensor_alignments.as_deref(), Some(&ALIGNMENTS[..]));
    assert_eq!(env.plugin_payload, &SAVE_PAYLOAD);
    assert!(!env.is_override_shape_enabled);
}

#[test]
fn serialize_caches_plan_and_serializes_context_once() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    let mut rounds = Vec::new();
    for _ in 0..2 {
        let n = plan.serialize_into(None).unwrap();
        let mut buf = vec![0u8; n];
        assert_eq!(plan.serialize_into(Some(&mut buf)).unwrap(), n);
        rounds.push(buf);
    }
    assert_eq!(engine.saves(), 1);
    assert_eq!(rounds[0], rounds[1]);
}

#[test]
fn size_query_returns_exactly_the_written_length() {
    let (handle, _engine) = counting_handle();
    let plan = built_plan(&handle);
    let n = plan.serialize_into(None).unwrap();
    let mut big = vec![0xAAu8; n + 16];
    assert_eq!(plan.serialize_into(Some(&mut big)).unwrap(), n);
    assert_eq!(&big[..n], &plan.to_bytes().unwrap()[..]);
    assert!(
        big[n..].iter().all(|&b| b == 0xAA),
        "bytes past the size are untouched"
    );
}

#[test]
fn short_buffer_gives_size_insufficient_with_the_needed_size() {
    let (handle, _engine) = counting_handle();
    let plan = built_plan(&handle);
    let n = plan.serialize_into(None).unwrap();
    for short in [1usize, n - 1] {
        let mut buf = vec![0x55u8; short];
        let e = err_of(plan.serialize_into(Some(&mut buf)));
        assert_eq!(e.status, Status::BadParamSizeInsufficient);
        assert_eq!(e.required_size, Some(n));
        assert!(
            e.message.contains(&format!("{n} bytes needed")),
            "{}",
            e.message
        );
        assert!(
            buf.iter().all(|&b| b == 0x55),
            "a failed save leaves the output untouched"
        );
    }
    assert!(
        plan.is_serialized_plan_cached(),
        "the cache stays filled after a short buffer"
    );
}

#[test]
fn sixteen_concurrent_saves_call_the_save_hook_once_and_agree() {
    for _ in 0..50 {
        let (handle, engine) = counting_handle();
        let plan = Arc::new(built_plan(&handle));
        let barrier = Arc::new(Barrier::new(16));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let plan = Arc::clone(&plan);
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    plan.to_bytes().unwrap()
                })
            })
            .collect();
        let results: Vec<Vec<u8>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(engine.saves(), 1);
        assert!(results.iter().all(|r| r == &results[0]));
    }
}

#[test]
fn failed_save_leaves_the_cache_empty_and_the_next_save_retries() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    engine.refuse_save.store(true, Ordering::SeqCst);
    let e = err_of(plan.to_bytes());
    assert_eq!(e.status, Status::PluginError);
    assert!(
        e.message
            .starts_with("engine could not save the execution plan")
    );
    assert!(
        e.message.contains("counting engine refuses to save"),
        "{}",
        e.message
    );
    assert!(!plan.is_serialized_plan_cached());
    assert_eq!(engine.saves(), 1);
    engine.refuse_save.store(false, Ordering::SeqCst);
    let bytes = plan.to_bytes().unwrap();
    assert_eq!(engine.saves(), 2, "the retry calls the save hook again");
    assert_eq!(
        PlanEnvelope::parse(&bytes).unwrap().plugin_payload,
        &SAVE_PAYLOAD
    );
}

#[test]
fn empty_payload_from_the_save_hook_is_plugin_error_and_not_cached() {
    let (handle, engine) = counting_handle();
    let plan = built_plan(&handle);
    engine.empty_save.store(true, Ordering::SeqCst);
    assert_err(
        plan.serialize_into(None),
        Status::PluginError,
        "engine could not save the execution plan",
    );
    assert!(!plan.is_serialized_plan_cached());
}

#[test]
fn save_of_a_plan_whose_engine_has_no_hooks_is_not_supported() {
    let engine = Arc::new(CountingEngine::new("test.nohooks").without_hooks());
    let mut handle = BackendHandle::new();
    handle.register_engine(engine.clone()).unwrap();
    let plan = ExecutionPlanDescriptor::finalize(
        &handle,
        &EngineConfig {
            engine_id: engine_id_from_name("test.nohooks"),
            knob_choices: vec![],
        },
        &fixture_graph(),
    )
    .unwrap();
    assert_err(
        plan.to_bytes(),
        Status::NotSupported,
        "Engine plugin does not support execution context serialization",
    );
}

#[test]
fn save_round_trips_the_override_shape_flag() {
    let (handle, _engine) = counting_handle();
    let g = hipdnn_backend::OperationGraph::from_bytes(&graph_bytes_with(
        &[T(11, 16, false), T(22, 64, false), T(33, 256, false)],
        None,
        true,
    ))
    .unwrap();
    let plan = ExecutionPlanDescriptor::finalize(
        &handle,
        &EngineConfig {
            engine_id: engine_id_from_name(COUNTING_ENGINE),
            knob_choices: vec![],
        },
        &g,
    )
    .unwrap();
    let loaded = ExecutionPlanDescriptor::from_bytes(&handle, &plan.to_bytes().unwrap()).unwrap();
    assert!(loaded.is_override_shape_enabled());
}

// ---- load and re-save ----

#[test]
fn resave_of_a_loaded_plan_is_byte_identical_and_never_calls_the_save_hook() {
    let (handle, engine) = counting_handle();
    let saved = built_plan(&handle).to_bytes().unwrap();
    assert_eq!(engine.saves(), 1);
    let (handle2, engine2) = counting_handle();
    let loaded = ExecutionPlanDescriptor::from_bytes(&handle2, &saved).unwrap();
    assert!(loaded.is_serialized_plan_cached());
    assert_eq!(loaded.to_bytes().unwrap(), saved);
    let n = loaded.serialize_into(None).unwrap();
    let mut buf = vec![0; n];
    loaded.serialize_into(Some(&mut buf)).unwrap();
    assert_eq!(buf, saved);
    assert_eq!(engine2.saves(), 0);
    assert_eq!(engine2.loads(), 1);
    // Load the re-saved bytes again: still identical.
    let reloaded = ExecutionPlanDescriptor::from_bytes(&handle2, &buf).unwrap();
    assert_eq!(reloaded.to_bytes().unwrap(), saved);
    assert_eq!(engine2.saves(), 0);
}

#[test]
fn loaded_v1_envelope_resaves_as_identical_v1_bytes() {
    for flag in [false, true] {
        let (handle, engine) = counting_handle();
        let v1 = Env {
            override_shape: flag,
            ..Env::v1()
        }
        .bytes();
        let loaded = ExecutionPlanDescriptor::from_bytes(&handle, &v1).unwrap();
        assert_eq!(loaded.is_override_shape_enabled(), flag);
        assert!(
            loaded.tensor_alignments().is_empty(),
            "v1 carries no alignments"
        );
        let again = loaded.to_bytes().unwrap();
        assert_eq!(again, v1);
        assert_eq!(PlanEnvelope::parse(&again).unwrap().version, 1);
        assert_eq!(engine.saves(), 0);
    }
}

#[test]
fn deserialize_restores_the_serialized_execution_plan() {
    let (handle, engine) = counting_handle();
    let bytes = Env::v2().bytes();
    let plan = ExecutionPlanDescriptor::from_bytes(&handle, &bytes).unwrap();
    assert_eq!(plan.tensor_uids(), &UIDS);
    assert_eq!(plan.tensor_alignments(), &ALIGNMENTS);
    assert!(!plan.is_override_shape_enabled());
    assert_eq!(plan.workspace_size(), 1024);
    assert_eq!(plan.engine_id(), engine_id_from_name(COUNTING_ENGINE));
    assert_eq!(
        plan.engine_config(),
        None,
        "a loaded plan has no engine config"
    );
    assert_eq!(engine.loads(), 1);
    let (_, payload) = engine
        .counters
        .last_load_payload
        .lock()
        .unwrap()
        .clone()
        .unwrap();
    assert_eq!(
        payload, LOAD_PAYLOAD,
        "the engine gets exactly the 3 payload bytes"
    );
    assert_eq!(plan.execution_context().workspace_size(), 1024);
}

#[test]
fn load_hook_receives_the_payload_borrowed_from_the_input() {
    let (handle, engine) = counting_handle();
    let bytes = Env::v2().bytes();
    let _plan = ExecutionPlanDescriptor::from_bytes(&handle, &bytes).unwrap();
    let (addr, _) = engine
        .counters
        .last_load_payload
        .lock()
        .unwrap()
        .clone()
        .unwrap();
    let start = bytes.as_ptr() as usize;
    assert!(
        addr >= start && addr + LOAD_PAYLOAD.len() <= start + bytes.len(),
        "payload was copied instead of borrowed"
    );
}

#[test]
fn shared_load_seeds_the_cache_with_a_view_of_the_loaded_buffer_and_copies_nothing() {
    let (handle, engine) = counting_handle();
    let loaded = SharedBytes::copy_from_slice(&Env::v2().bytes());
    assert_eq!(Arc::strong_count(loaded.buffer()), 1);
    let plan = ExecutionPlanDescriptor::from_shared(&handle, loaded.clone()).unwrap();
    assert_eq!(engine.loads(), 1);
    // The load hook got the payload as a view of the one buffer (no temporary copy).
    let (addr, payload) = engine
        .counters
        .last_load_payload
        .lock()
        .unwrap()
        .clone()
        .unwrap();
    assert_eq!(payload, LOAD_PAYLOAD);
    let start = loaded.as_ptr() as usize;
    assert!(
        addr >= start && addr + LOAD_PAYLOAD.len() <= start + loaded.len(),
        "payload was copied instead of viewed"
    );
    // The cache is that same view: the buffer has two holders (the caller and the cache).
    assert_eq!(Arc::strong_count(loaded.buffer()), 2);
    let cached = plan.serialized_bytes().unwrap();
    assert!(cached.same_view(&loaded), "{cached:?} vs {loaded:?}");
    drop(cached);
    assert_eq!(plan.to_bytes().unwrap(), &loaded[..]);
    assert_eq!(
        engine.saves(),
        0,
        "a loaded plan never reaches the save hook"
    );
    assert_eq!(plan.tensor_uids(), &UIDS);
    assert_eq!(plan.workspace_size(), 1024);
    drop(plan);
    assert_eq!(Arc::strong_count(loaded.buffer()), 1);
}

#[test]
fn shared_load_of_a_view_keeps_only_that_view() {
    let (handle, engine) = counting_handle();
    let plan_bytes = Env::v1().bytes();
    let mut padded = vec![0xEEu8; 5];
    padded.extend_from_slice(&plan_bytes);
    padded.extend_from_slice(&[0xEE; 3]);
    let buffer = SharedBytes::copy_from_slice(&padded);
    let view = buffer.slice(5..5 + plan_bytes.len()).unwrap();
    let plan = ExecutionPlanDescriptor::from_shared(&handle, view.clone()).unwrap();
    let cached = plan.serialized_bytes().unwrap();
    assert!(cached.same_view(&view));
    assert_eq!(cached.range(), 5..5 + plan_bytes.len());
    assert_eq!(
        plan.to_bytes().unwrap(),
        plan_bytes,
        "v1 stays v1, unaligned view"
    );
    assert_eq!(engine.saves(), 0);
}

#[test]
fn copied_load_keeps_one_copy_that_the_engine_saw_and_refuses_like_from_bytes() {
    let (handle, engine) = counting_handle();
    let bytes = Env::v2().bytes();
    let container = hipdnn_backend::write_graph_and_plan(&graph_bytes(), Some(&bytes));
    for input in [&bytes, &container] {
        let plan = ExecutionPlanDescriptor::from_copy(&handle, input).unwrap();
        let cached = plan.serialized_bytes().unwrap();
        assert_eq!(&cached[..], &bytes[..], "the plan part only");
        assert_eq!(
            cached.buffer().len(),
            bytes.len(),
            "one copy, of the plan part"
        );
        let (addr, _) = engine
            .counters
            .last_load_payload
            .lock()
            .unwrap()
            .clone()
            .unwrap();
        let start = cached.as_ptr() as usize;
        assert!(
            addr >= start && addr + LOAD_PAYLOAD.len() <= start + cached.len(),
            "the engine saw the kept copy, not a temporary one"
        );
    }
    assert_eq!(engine.saves(), 0);
    let graph_only = hipdnn_backend::write_graph_and_plan(&graph_bytes(), None);
    let mut v0 = Env::v2();
    v0.version = 0;
    for bad in [
        vec![],
        graph_only,
        v0.bytes(),
        bytes[..bytes.len() / 2].to_vec(),
    ] {
        let a = err_of(ExecutionPlanDescriptor::from_copy(&handle, &bad));
        let b = err_of(ExecutionPlanDescriptor::from_bytes(&handle, &bad));
        assert_eq!((a.status, &a.message), (b.status, &b.message));
    }
}

#[test]
fn failed_shared_load_keeps_no_view() {
    let (handle, engine) = counting_handle();
    engine.refuse_load.store(true, Ordering::SeqCst);
    let loaded = SharedBytes::copy_from_slice(&Env::v2().bytes());
    let e = err_of(ExecutionPlanDescriptor::from_shared(
        &handle,
        loaded.clone(),
    ));
    assert_eq!(e.status, Status::PluginError);
    assert!(
        e.message
            .starts_with("engine refused to restore the execution plan"),
        "{}",
        e.message
    );
    assert_eq!(Arc::strong_count(loaded.buffer()), 1);
    let empty = SharedBytes::copy_from_slice(&[]);
    assert_err(
        ExecutionPlanDescriptor::from_shared(&handle, empty),
        Status::BadParam,
        "Serialized execution plan is empty.",
    );
}

#[test]
fn failed_restore_yields_no_descriptor_and_keeps_the_engine_message() {
    let (handle, engine) = counting_handle();
    engine.refuse_load.store(true, Ordering::SeqCst);
    let e = err_of(ExecutionPlanDescriptor::from_bytes(
        &handle,
        &Env::v2().bytes(),
    ));
    assert_eq!(e.status, Status::PluginError);
    assert!(
        e.message
            .starts_with("engine refused to restore the execution plan"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("counting engine refuses this payload"),
        "{}",
        e.message
    );
    assert_eq!(engine.loads(), 1);
    assert_eq!(engine.saves(), 0);
}

#[test]
fn unknown_engine_id_on_load_is_not_supported_and_no_hook_is_called() {
    let (handle, engine) = counting_handle();
    let bytes = Env {
        engine_id: 777,
        ..Env::v2()
    }
    .bytes();
    let e = err_of(ExecutionPlanDescriptor::from_bytes(&handle, &bytes));
    assert_eq!(e.status, Status::NotSupported, "message: {}", e.message);
    assert_eq!(
        e.message,
        "Invalid engine ID: 777: the plan was saved by an engine this handle does not have \
         (it has \"test.counting\"); load it on a handle that registers that engine"
    );
    assert_eq!(engine.loads(), 0);
}

#[test]
fn a_plan_of_an_engine_noted_absent_names_that_engine_and_the_note() {
    let (mut handle, engine) = counting_handle();
    handle.note_absent_engine(
        "test.gpu",
        "this handle is on the CPU: load it on a GPU handle",
    );
    let id = engine_id_from_name("test.gpu");
    let bytes = Env {
        engine_id: id,
        ..Env::v2()
    }
    .bytes();
    let e = err_of(ExecutionPlanDescriptor::from_bytes(&handle, &bytes));
    assert_eq!(e.status, Status::NotSupported, "message: {}", e.message);
    assert_eq!(
        e.message,
        format!(
            "Invalid engine ID: {id}: the plan was saved by engine \"test.gpu\", which this \
             handle does not have (it has \"test.counting\"); this handle is on the CPU: load \
             it on a GPU handle"
        )
    );
    assert_eq!(engine.loads(), 0);
}

#[test]
fn load_for_an_engine_without_hooks_is_not_supported() {
    let engine = Arc::new(CountingEngine::new(COUNTING_ENGINE).without_hooks());
    let mut handle = BackendHandle::new();
    handle.register_engine(engine.clone()).unwrap();
    assert_err(
        ExecutionPlanDescriptor::from_bytes(&handle, &Env::v2().bytes()),
        Status::NotSupported,
        "Engine plugin does not support execution context serialization",
    );
    assert_eq!(engine.loads(), 0);
}

// ---- ordered envelope checks ----

fn load_err(bytes: &[u8]) -> BackendError {
    let (handle, engine) = counting_handle();
    let e = err_of(ExecutionPlanDescriptor::from_bytes(&handle, bytes));
    assert_eq!(
        engine.loads(),
        0,
        "a refused envelope never reaches the engine"
    );
    e
}

fn assert_load_err(bytes: &[u8], status: Status, prefix: &str) {
    let e = load_err(bytes);
    assert_eq!(e.status, status, "{}", e.message);
    assert!(
        e.message.starts_with(prefix),
        "message {:?} does not start with {prefix:?}",
        e.message
    );
}

#[test]
fn deserialize_rejects_empty_input() {
    assert_load_err(&[], Status::BadParam, "Serialized execution plan is empty.");
}

#[test]
fn deserialize_rejects_an_invalid_flatbuffer() {
    assert_load_err(
        &[0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04],
        Status::BadParam,
        "Serialized execution plan FlatBuffer is invalid.",
    );
}

#[test]
fn deserialize_rejects_unsupported_versions() {
    for v in [0u32, 3, 99] {
        assert_load_err(
            &Env {
                version: v,
                ..Env::v2()
            }
            .bytes(),
            Status::NotSupported,
            &format!("Unsupported serialized execution plan version: {v}"),
        );
    }
}

#[test]
fn deserialize_rejects_missing_plugin_payload() {
    assert_load_err(
        &Env {
            payload: None,
            ..Env::v2()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan has no plugin payload.",
    );
}

#[test]
fn deserialize_rejects_empty_plugin_payload() {
    assert_load_err(
        &Env {
            payload: Some(vec![]),
            ..Env::v2()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan has no plugin payload.",
    );
}

#[test]
fn deserialize_rejects_missing_tensor_uids() {
    assert_load_err(
        &Env {
            uids: None,
            alignments: None,
            ..Env::v1()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan has no tensor UIDs.",
    );
}

#[test]
fn deserialize_rejects_empty_tensor_uids() {
    assert_load_err(
        &Env {
            uids: Some(vec![]),
            alignments: Some(vec![]),
            ..Env::v2()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan has no tensor UIDs.",
    );
}

#[test]
fn deserialize_rejects_missing_tensor_alignments_in_v2() {
    assert_load_err(
        &Env {
            alignments: None,
            ..Env::v2()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan has no tensor alignments.",
    );
}

#[test]
fn deserialize_rejects_mismatched_tensor_alignments_in_v2() {
    assert_load_err(
        &Env {
            alignments: Some(vec![16, 64]),
            ..Env::v2()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan tensor alignment count (2) does not match its tensor UID count (3).",
    );
}

#[test]
fn deserialize_rejects_negative_workspace_size() {
    assert_load_err(
        &Env {
            workspace_size: -1,
            ..Env::v2()
        }
        .bytes(),
        Status::BadParam,
        "Serialized execution plan has a negative workspace size: -1",
    );
}

#[test]
fn deserialize_checks_run_in_upstream_order() {
    // Unsupported version beats missing payload; missing payload beats missing uids; missing
    // uids beat missing alignments; alignments beat a negative workspace.
    assert_eq!(
        load_err(
            &Env {
                version: 7,
                payload: None,
                ..Env::v2()
            }
            .bytes()
        )
        .status,
        Status::NotSupported
    );
    assert!(
        load_err(
            &Env {
                payload: None,
                uids: None,
                ..Env::v2()
            }
            .bytes()
        )
        .message
        .contains("plugin payload")
    );
    assert!(
        load_err(
            &Env {
                uids: None,
                alignments: None,
                ..Env::v2()
            }
            .bytes()
        )
        .message
        .contains("tensor UIDs")
    );
    assert!(
        load_err(
            &Env {
                alignments: None,
                workspace_size: -5,
                ..Env::v2()
            }
            .bytes()
        )
        .message
        .contains("alignments")
    );
}

#[test]
fn every_truncation_of_an_envelope_is_an_error() {
    let (handle, engine) = counting_handle();
    let bytes = built_plan(&handle).to_bytes().unwrap();
    for n in 0..bytes.len() {
        match ExecutionPlanDescriptor::from_bytes(&handle, &bytes[..n]) {
            Err(e) => assert!(
                matches!(e.status, Status::BadParam | Status::NotSupported),
                "truncation to {n}: {e}"
            ),
            Ok(_) => panic!("truncation to {n} of {} bytes was accepted", bytes.len()),
        }
    }
    assert_eq!(engine.loads(), 0);
}

#[test]
fn every_single_byte_flip_of_an_envelope_is_an_error_or_a_faithful_plan() {
    // A flip must never panic. Flips of data bytes (a UID, the workspace size, a payload byte)
    // can give another valid envelope; then the loaded plan re-saves exactly the flipped bytes.
    let (handle, _engine) = counting_handle();
    let bytes = built_plan(&handle).to_bytes().unwrap();
    let mut errors = 0;
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut damaged = bytes.clone();
            damaged[i] ^= mask;
            match ExecutionPlanDescriptor::from_bytes(&handle, &damaged) {
                Err(_) => errors += 1,
                Ok(plan) => assert_eq!(plan.to_bytes().unwrap(), damaged),
            }
        }
    }
    assert!(errors > bytes.len(), "only {errors} flips were refused");
}

#[test]
fn envelope_writer_bytes_are_pinned() {
    // If this test fails, you changed what a save writes (or the flatbuffers crate did): plans
    // saved before must still load, and a wire change needs EXECUTION_PLAN_WRITE_VERSION
    // bumped. Do not just edit the expected bytes.
    let bytes = hipdnn_backend::write_envelope(7, 1024, &UIDS, &ALIGNMENTS, true, &SAVE_PAYLOAD);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, PINNED_ENVELOPE_HEX, "{hex}");
    let env = PlanEnvelope::parse(&bytes).unwrap();
    assert_eq!(
        (env.version, env.engine_id, env.workspace_size),
        (2, 7, 1024)
    );
    assert!(env.is_override_shape_enabled);
}

const PINNED_ENVELOPE_HEX: &str = concat!(
    "18000000000012002c000800180020000c001000070014001200000000000001",
    "0200000040000000580000001800000007000000000000000004000000000000",
    "0000000003000000100000000000000040000000000000000001000000000000",
    "00000000030000000b0000000000000016000000000000002100000000000000",
    "0400000009080706",
);

#[test]
fn a_load_with_its_graph_hands_the_graph_to_the_engine_and_a_plain_load_does_not() {
    let (handle, engine) = counting_handle();
    let loaded = SharedBytes::copy_from_slice(&Env::v2().bytes());
    let _plain = ExecutionPlanDescriptor::from_shared(&handle, loaded.clone()).unwrap();
    assert_eq!(*engine.counters.last_load_graph_nodes.lock().unwrap(), None);
    let graph = fixture_graph();
    let plan =
        ExecutionPlanDescriptor::from_shared_with_graph(&handle, loaded.clone(), &graph).unwrap();
    assert_eq!(
        *engine.counters.last_load_graph_nodes.lock().unwrap(),
        Some(graph.tensor_uids().len())
    );
    assert_eq!(engine.loads(), 2);
    // Otherwise the same load: the cache is a view of the loaded bytes.
    assert_eq!(plan.to_bytes().unwrap(), &loaded[..]);
    assert_eq!(plan.tensor_uids(), &UIDS);
}
