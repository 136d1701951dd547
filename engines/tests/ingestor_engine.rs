//! The ingestor engine end to end with a fake device: build from a graph, execute, benchmark,
//! save through the hook, load on a new engine, run again (reference `ingestor-payload.md`
//! §7, §8, §12, §14 "Hook round trip").

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::engine::{
    BehaviorNote, BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding,
};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::ingestor::descriptor::KernelDescriptor;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::{IngestorEngine, KNOB_BENCHMARK};
use hipdnn_engines::ingestor::payload::{decode_payload, sha256_hex};
use hipdnn_engines::ingestor::plan::{IngestorExecutionContext, IngestorPlan};
use hipdnn_schema::flatbuffers::FlatBufferBuilder;
use hipdnn_schema::graph as g;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::*;

const CODE: &[u8] = b"\x7fELF pointwise add";

fn pointwise_graph(dims: &[i64]) -> OperationGraph {
    let mut b = FlatBufferBuilder::new();
    let tensors: Vec<_> = [11i64, 12, 13]
        .iter()
        .map(|uid| {
            let d = b.create_vector(dims);
            let s = b.create_vector(&vec![1i64; dims.len()]);
            g::TensorAttributes::create(
                &mut b,
                &g::TensorAttributesArgs {
                    uid: *uid,
                    data_type: g::DataType::FLOAT,
                    dims: Some(d),
                    strides: Some(s),
                    alignment: 16,
                    ..Default::default()
                },
            )
        })
        .collect();
    let tensors = b.create_vector(&tensors);
    let attrs = g::PointwiseAttributes::create(
        &mut b,
        &g::PointwiseAttributesArgs {
            operation: g::PointwiseMode::ADD,
            in_0_tensor_uid: 11,
            in_1_tensor_uid: Some(12),
            out_0_tensor_uid: 13,
            ..Default::default()
        },
    );
    let node = g::Node::create(
        &mut b,
        &g::NodeArgs {
            attributes_type: g::NodeAttributes::PointwiseAttributes,
            attributes: Some(attrs.as_union_value()),
            ..Default::default()
        },
    );
    let nodes = b.create_vector(&[node]);
    let root = g::Graph::create(
        &mut b,
        &g::GraphArgs {
            tensors: Some(tensors),
            nodes: Some(nodes),
            ..Default::default()
        },
    );
    b.finish(root, None);
    OperationGraph::from_bytes(b.finished_data()).unwrap()
}

fn descriptor(id: &str) -> KernelDescriptor {
    let text = format!(
        r#"{{"id":"{id}","name":"pw","dispatch":"hipkernel.pointwise.dispatch","archs":["gfx90a"],"kernel_source":{{"kind":"kpack","library":"pw.kpack","toc_key":"pw","symbol":"pointwise_add","sha256":"{}","signature":[{{"kind":"global_buffer","size":8,"offset":0}},{{"kind":"global_buffer","size":8,"offset":8}},{{"kind":"global_buffer","size":8,"offset":16}}]}}}}"#,
        sha256_hex(CODE)
    );
    KernelDescriptor::parse(Path::new("/t"), Path::new("/t/pw.json"), &text).unwrap()
}

fn engine_on(device: Arc<FakeDevice>, kernels: Vec<KernelDescriptor>) -> IngestorEngine {
    let mut r = FakeReader::default();
    r.entries
        .insert((PathBuf::from("/t/pw.kpack"), "pw".into()), CODE.to_vec());
    IngestorEngine::new(
        "hipkernel:Pointwise",
        kernels,
        Arc::new(FixedDevice(device)),
        Arc::new(hipdnn_engines::registry::native_packs()),
        Arc::new(r),
    )
}

fn bindings() -> Vec<TensorBinding<'static>> {
    [11i64, 12, 13]
        .iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x100 * *uid as u64,
                len: 4,
            },
        })
        .collect()
}

#[test]
fn builds_executes_saves_and_restores_a_pointwise_plan() {
    let dev = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    let engine = engine_on(
        dev.clone(),
        vec![descriptor("11111111-0000-0000-0000-000000000001")],
    );
    let graph = pointwise_graph(&[1, 1, 1, 1]);
    engine.check_applicable(&graph).unwrap();
    assert_eq!(
        engine.behavior_notes(&graph),
        vec![BehaviorNote::SupportsExecutionPlanSerialization]
    );
    let ctx = engine
        .create_execution_context(
            &EngineConfig {
                engine_id: engine.id(),
                knob_choices: vec![],
            },
            &graph,
        )
        .unwrap();
    assert_eq!(ctx.workspace_size(), 1024);
    let mut ws = vec![0u8; 1024];
    let mut t = bindings();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: Some(BufferRef::HostMut(&mut ws)),
        tensors: &mut t,
    })
    .unwrap();
    let first = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(first.0.block, [256, 1, 1]);
    assert_eq!(
        first.1,
        vec![
            KernelArgValue::Pointer(0xB00),
            KernelArgValue::Pointer(0xC00),
            KernelArgValue::Pointer(0xD00)
        ]
    );

    let ser = engine.serialization().unwrap();
    let bytes = ser
        .serialize_execution_context(engine.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.target, "gfx90a");
    assert_eq!(p.workspace_bytes, 1024);

    // A new engine with no kernels (no archive) on a new device restores and runs it.
    let dev2 = FakeDevice::new("gfx90a", 0);
    let engine2 = engine_on(dev2.clone(), vec![]);
    let restored = engine2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    assert_eq!(restored.workspace_size(), 1024);
    let mut t = bindings();
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::HostMut(&mut ws)),
            tensors: &mut t,
        })
        .unwrap();
    assert_eq!(dev2.launches.lock().unwrap()[0], first);
    assert_eq!(dev2.loads(), 1);
    // Damaged bytes create nothing.
    let e = engine2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&[0u8; 64])
        .err()
        .unwrap();
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert!(e.message.contains("not an ingestor plan"), "{}", e.message);
}

#[test]
fn a_benchmarking_plan_chooses_a_winner_on_first_execute_and_then_saves() {
    let dev = FakeDevice::new("gfx942:sramecc+:xnack-", 0);
    let engine = engine_on(
        dev.clone(),
        vec![
            descriptor("11111111-0000-0000-0000-000000000001"),
            descriptor("11111111-0000-0000-0000-000000000002"),
        ],
    );
    let graph = pointwise_graph(&[1, 1, 1, 1, 1]);
    let ctx = engine
        .create_execution_context(
            &EngineConfig {
                engine_id: engine.id(),
                knob_choices: vec![(KNOB_BENCHMARK, 1)],
            },
            &graph,
        )
        .unwrap();
    let ser = engine.serialization().unwrap();
    let e = ser
        .serialize_execution_context(engine.id(), ctx.as_ref())
        .unwrap_err();
    assert_eq!(e.status, PluginStatus::NotApplicable);
    assert!(
        e.message.contains("has not chosen a kernel yet"),
        "{}",
        e.message
    );
    let mut ws = vec![0u8; 1024];
    let mut t = bindings();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: Some(BufferRef::HostMut(&mut ws)),
        tensors: &mut t,
    })
    .unwrap();
    match &ctx
        .as_any()
        .downcast_ref::<IngestorExecutionContext>()
        .unwrap()
        .plan
    {
        IngestorPlan::Benchmark(b) => assert!(b.winner().is_some()),
        other => panic!("{other:?}"),
    }
    let p = decode_payload(
        &ser.serialize_execution_context(engine.id(), ctx.as_ref())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(p.target, "gfx942");
}

#[test]
fn pointwise_v1_refuses_a_larger_tensor() {
    let engine = engine_on(
        FakeDevice::new("gfx90a", 0),
        vec![descriptor("11111111-0000-0000-0000-000000000001")],
    );
    let e = engine
        .check_applicable(&pointwise_graph(&[1, 1, 2, 1]))
        .unwrap_err();
    assert_eq!(e.status, PluginStatus::NotApplicable);
    assert!(
        e.message.contains("single-element tensors"),
        "{}",
        e.message
    );
}
