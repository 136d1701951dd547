//! The ingestor hands each launch the kernel's *recorded* signature (the kernel descriptor's,
//! or the saved payload's), so a device can check the argument values against the record
//! rather than against themselves. The recorded names (`x`, `b`, `y`) exist only in the record,
//! never in the argument values, which shows where the signature the device sees comes from.

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::ingestor::descriptor::KernelDescriptor;
use hipdnn_engines::ingestor::device::FixedDevice;
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::payload::sha256_hex;
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
        r#"{{"id":"{id}","name":"pw","dispatch":"hipkernel.pointwise.dispatch","archs":["gfx90a"],"kernel_source":{{"kind":"kpack","library":"pw.kpack","toc_key":"pw","symbol":"pointwise_add","sha256":"{}","signature":[{{"kind":"global_buffer","size":8,"offset":0,"name":"x"}},{{"kind":"global_buffer","size":8,"offset":8,"name":"b"}},{{"kind":"global_buffer","size":8,"offset":16,"name":"y"}}]}}}}"#,
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

fn recorded() -> Vec<KernelArgument> {
    vec![
        KernelArgument::named("global_buffer", 8, 0, "x"),
        KernelArgument::named("global_buffer", 8, 8, "b"),
        KernelArgument::named("global_buffer", 8, 16, "y"),
    ]
}

#[test]
fn built_and_restored_plans_launch_with_the_recorded_signature() {
    let dev = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    let engine = engine_on(
        dev.clone(),
        vec![descriptor("11111111-0000-0000-0000-0000000000aa")],
    );
    let graph = pointwise_graph(&[1, 1, 1, 1]);
    let ctx = engine
        .create_execution_context(
            &EngineConfig {
                engine_id: engine.id(),
                knob_choices: vec![],
            },
            &graph,
        )
        .unwrap();
    let mut ws = vec![0u8; 1024];
    let mut t = bindings();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: Some(BufferRef::HostMut(&mut ws)),
        tensors: &mut t,
    })
    .unwrap();
    assert_eq!(*dev.signatures.lock().unwrap(), vec![recorded()]);

    // Saved and restored on another device: the payload's recorded signature is handed over.
    let bytes = engine
        .serialization()
        .unwrap()
        .serialize_execution_context(engine.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("gfx90a", 0);
    let engine2 = engine_on(dev2.clone(), vec![]);
    let restored = engine2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let mut t = bindings();
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::HostMut(&mut ws)),
            tensors: &mut t,
        })
        .unwrap();
    assert_eq!(*dev2.signatures.lock().unwrap(), vec![recorded()]);
}
