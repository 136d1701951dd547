//! The gather family (`hipkernel.gather.dispatch.v1`, the `hipdnn_rs.gather` custom op) with a
//! fake sm_90 device (no GPU): the static rule's entry per row length and layout, the launch a
//! plan makes (grid, block, arguments, null scratch), the refusal of an unaligned table on a
//! spec plan, save → restore on an engine with no kernels → the same launch, the contract's
//! refusal of saved values that break the spec variant; and the kernel under Triton's
//! interpreter (`engines/kernels/triton/interpret_gather.py`).

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::gather::{GATHER_V1, GatherInputs};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, run_graph};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::DataType as DT;
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

fn engine(dev: Arc<FakeDevice>, kernels: Vec<KernelDescriptor>) -> IngestorEngine {
    IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        Arc::new(FixedDevice(dev)),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    )
}

fn sm90() -> Vec<KernelDescriptor> {
    load_triton_descriptors(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90"))
        .unwrap()
}

/// table (UID 1, (v, h), row-major or column-major) gathered by index (UID 2, (n), INT32 or
/// INT64) into y (UID 3, (n, h) of `y_dt`), the node's data `data`.
fn gather_builder(
    dt: DT,
    (v, h, n): (i64, i64, i64),
    idx: DT,
    column_major: bool,
    y_dt: DT,
    data: &'static [u8],
) -> GraphBuilder {
    let mut t = TensorSpec::new(1, "table", dt, &[v, h]);
    if column_major {
        t = t.strides(&[1, v]);
    }
    let mut g = GraphBuilder::new("gather");
    g.tensor(t)
        .tensor(TensorSpec::new(2, "ids", idx, &[n]))
        .tensor(TensorSpec::new(3, "y", y_dt, &[n, h]));
    g.custom_op("gather", GATHER_OP_ID, &[1, 2], &[3], data);
    g
}

fn gather_graph(dt: DT, v: i64, h: i64, n: i64, idx: DT, column_major: bool) -> OperationGraph {
    let g = gather_builder(dt, (v, h, n), idx, column_major, dt, &[]);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

/// The CPU reference engine on graphs the SDK's validation never sees (a graph read from
/// bytes): it copies the rows (zero rows outside the table) and refuses a malformed gather
/// with NOT_APPLICABLE naming the node and the tensor.
#[test]
fn the_cpu_reference_engine_gathers_and_names_what_it_refuses() {
    let table: Vec<f32> = (0..12).map(|v| v as f32 * 0.5).collect(); // (4, 3)
    let ids = vec![2.0, 4.0, -1.0, 0.0];
    let b = gather_builder(DT::FLOAT, (4, 3, 4), DT::INT64, false, DT::FLOAT, &[]);
    let y = run_graph(b, &[(1, table.clone()), (2, ids.clone())], &[3]).unwrap();
    assert_eq!(
        y[0],
        vec![3.0, 3.5, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 1.0]
    );
    let refused = |b: GraphBuilder| {
        let e = run_graph(b, &[(1, table.clone()), (2, ids.clone())], &[3]).unwrap_err();
        assert_eq!(e.status, PluginStatus::NotApplicable, "{}", e.message);
        e.message
    };
    let cases: [(GraphBuilder, &str); 3] = [
        (
            gather_builder(DT::FLOAT, (4, 3, 4), DT::FLOAT, false, DT::FLOAT, &[]),
            "custom_op 'gather': index (uid 2) data_type F32 is not supported by the CPU reference engine",
        ),
        (
            gather_builder(DT::FLOAT, (4, 3, 4), DT::INT32, false, DT::HALF, &[]),
            "custom_op 'gather': y (uid 3) is F16, the table F32; the gather copies the table's elements",
        ),
        (
            gather_builder(DT::FLOAT, (4, 3, 4), DT::INT32, false, DT::FLOAT, &[7]),
            "custom_op 'gather': hipdnn_rs.gather data of 1 bytes is not supported by the CPU reference engine",
        ),
    ];
    for (b, want) in cases {
        assert_eq!(refused(b), want);
    }
}

fn plan_bytes(e: &IngestorEngine, graph: &OperationGraph) -> Vec<u8> {
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            graph,
        )
        .unwrap();
    e.serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap()
}

fn int(p: &hipdnn_engines::ingestor::payload::IngestorPlanPayload, k: &str) -> i64 {
    match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    }
}

fn bindings(table_offset: u64) -> Vec<TensorBinding<'static>> {
    [1i64, 2, 3]
        .iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *uid as u64 + if *uid == 1 { table_offset } else { 0 },
                len: 1 << 27,
            },
        })
        .collect()
}

#[test]
fn the_static_rule_picks_the_tile_by_row_length_and_spec_by_layout() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    // (graph, spec, block_m, block_n)
    let cases = [
        (
            gather_graph(DT::FLOAT, 30522, 384, 4096, DT::INT32, false),
            1,
            8,
            128,
        ),
        (
            gather_graph(DT::HALF, 1000, 64, 33, DT::INT64, false),
            1,
            32,
            32,
        ),
        (
            gather_graph(DT::BFLOAT16, 1000, 65, 33, DT::INT32, false),
            0,
            8,
            128,
        ),
        (
            gather_graph(DT::FLOAT, 50, 7, 1, DT::INT32, false),
            0,
            32,
            32,
        ),
        (
            gather_graph(DT::FLOAT, 512, 384, 9, DT::INT32, true),
            0,
            8,
            128,
        ),
    ];
    for (i, (g, spec, bm, bn)) in cases.iter().enumerate() {
        let p = decode_payload(&plan_bytes(&e, g)).unwrap();
        assert_eq!(p.dispatch_symbol, GATHER_V1, "case {i}");
        assert_eq!(p.symbol, "hipdnn_gather", "case {i}");
        assert_eq!(
            (int(&p, "spec"), int(&p, "block_m"), int(&p, "block_n")),
            (*spec, *bm, *bn),
            "case {i}"
        );
    }
    let p = decode_payload(&plan_bytes(&e, &cases[4].0)).unwrap();
    assert_eq!(
        (int(&p, "stv"), int(&p, "sth")),
        (1, 512),
        "column-major strides"
    );
    let p = decode_payload(&plan_bytes(&e, &cases[1].0)).unwrap();
    assert_eq!(
        (int(&p, "idx64"), int(&p, "vocab"), int(&p, "dtype")),
        (1, 1000, 2)
    );
}

#[test]
fn a_gather_plan_launches_restores_without_kernels_and_refuses_an_unaligned_table() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let g = gather_graph(DT::FLOAT, 30522, 384, 4096, DT::INT32, false);
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .unwrap();
    assert_eq!(ctx.workspace_size(), 0);
    let mut t = bindings(0);
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    let (geom, args) = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(geom.grid, [512, 3, 1]);
    assert_eq!(geom.block, [128, 1, 1]);
    // table, index, y; N H V stv si syr (spec: sth and syc are constants) idx64; scratch.
    assert_eq!(
        args,
        vec![
            KernelArgValue::Pointer(0x1000_0000),
            KernelArgValue::Pointer(0x2000_0000),
            KernelArgValue::Pointer(0x3000_0000),
            KernelArgValue::I32(4096),
            KernelArgValue::I32(384),
            KernelArgValue::I32(30522),
            KernelArgValue::I32(384),
            KernelArgValue::I32(1),
            KernelArgValue::I32(384),
            KernelArgValue::I32(0),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
        ]
    );
    let mut t = bindings(8);
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert_eq!(
        err.message,
        "tensor UID 1 is at 0x10000008; this plan runs the specialized gather kernel, which needs a 16-byte aligned table and y"
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 1, "nothing launched");

    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e2 = engine(dev2.clone(), vec![]);
    let restored = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let mut t = bindings(0);
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap();
    assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
}

#[test]
fn saved_values_that_break_the_contract_are_refused() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let p = decode_payload(&plan_bytes(
        &e,
        &gather_graph(DT::FLOAT, 100, 384, 10, DT::INT32, false),
    ))
    .unwrap();
    let ok = GatherInputs::from_values(GATHER_V1, &p.launch_values).unwrap();
    assert_eq!(ok.to_values(), p.launch_values);
    let mut v = p.launch_values.clone();
    v.insert("sth".into(), LaunchValue::Int(2));
    let err = GatherInputs::from_values(GATHER_V1, &v).unwrap_err();
    assert!(
        err.message.ends_with(
            "launch values of dispatch 'hipkernel.gather.dispatch.v1' name the spec variant, whose 'sth' and 'syc' must be 1"
        ),
        "{}",
        err.message
    );
    let mut v = p.launch_values.clone();
    v.insert("idx64".into(), LaunchValue::Int(2));
    let err = GatherInputs::from_values(GATHER_V1, &v).unwrap_err();
    assert!(
        err.message.contains(
            "launch value 'idx64' of dispatch 'hipkernel.gather.dispatch.v1' must be int in [0, 1]"
        ),
        "{}",
        err.message
    );
    let mut v = p.launch_values.clone();
    v.insert("cols".into(), LaunchValue::Int(128 * 65_536));
    let err = GatherInputs::from_values(GATHER_V1, &v).unwrap_err();
    assert!(
        err.message.ends_with(
            "launch values 'cols' and 'block_n' of dispatch 'hipkernel.gather.dispatch.v1' give 65536 column blocks; the grid takes at most 65535"
        ),
        "{}",
        err.message
    );
}

/// Runs `engines/kernels/triton/interpret_gather.py` (every dtype and tile config, INT32 and
/// INT64 indices with values outside the table, strided tables and outputs, bit-exact; 96
/// cases). Prints `skipped: …` and passes when the system python cannot import numpy and the
/// pack venv's triton.
#[test]
fn the_kernel_matches_numpy_under_the_triton_interpreter() {
    support::run_interpreter_check("interpret_gather.py", 96);
}
