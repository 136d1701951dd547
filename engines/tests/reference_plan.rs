//! CPU reference engine: plans, saved payloads, buffers, refusals and determinism.

use hipdnn_backend::{
    BehaviorNote, BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, OperationGraph,
    PluginStatus, TensorBinding,
};
use hipdnn_engines::reference::payload::{self, DAMAGED, HEADER_SIZE, INCOMPATIBLE};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values};
use hipdnn_engines::reference::{ENGINE_NAME, ReferenceEngine};
use hipdnn_schema::graph::{
    ConvMode, ConvolutionFwdAttributes, ConvolutionFwdAttributesArgs, DataType as DT,
    NodeAttributes, PointwiseAttributesArgs, PointwiseMode, SdpaAttributes, SdpaAttributesArgs,
};

const X: i64 = 1;
const W: i64 = 2;
const Y: i64 = 3;
const Z: i64 = 4;

/// conv (1×3×9×8 ⋆ 4×3×3×3, pad 1) → relu, with the conv output virtual.
fn conv_relu() -> GraphBuilder {
    let mut g = GraphBuilder::new("conv_relu");
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &[1, 3, 9, 8]).channels_last())
        .tensor(TensorSpec::new(W, "w", DT::FLOAT, &[4, 3, 3, 3]))
        .tensor(TensorSpec::new(Y, "y", DT::FLOAT, &[1, 4, 9, 8]).virtual_())
        .tensor(TensorSpec::new(Z, "z", DT::FLOAT, &[1, 4, 9, 8]));
    g.node(
        "conv",
        Box::new(|fbb| {
            let pad = fbb.create_vector(&[1i64, 1]);
            let one = fbb.create_vector(&[1i64, 1]);
            let a = ConvolutionFwdAttributes::create(
                fbb,
                &ConvolutionFwdAttributesArgs {
                    x_tensor_uid: X,
                    w_tensor_uid: W,
                    y_tensor_uid: Y,
                    pre_padding: Some(pad),
                    post_padding: Some(pad),
                    stride: Some(one),
                    dilation: Some(one),
                    conv_mode: ConvMode::CROSS_CORRELATION,
                },
            );
            (NodeAttributes::ConvolutionFwdAttributes, a.as_union_value())
        }),
    );
    g.pointwise(
        "relu",
        PointwiseAttributesArgs {
            operation: PointwiseMode::RELU_FWD,
            in_0_tensor_uid: Y,
            out_0_tensor_uid: Z,
            ..Default::default()
        },
    );
    g
}

struct Bufs {
    x: Vec<u8>,
    w: Vec<u8>,
}

fn inputs(g: &GraphBuilder) -> Bufs {
    Bufs {
        x: g.spec(X).encode(&random_values(216, 1, -1.0, 1.0)),
        w: g.spec(W).encode(&random_values(108, 2, -1.0, 1.0)),
    }
}

fn run(ctx: &dyn ExecutionContext, b: &Bufs, zlen: usize) -> Vec<u8> {
    let mut z = vec![0u8; zlen];
    let mut t = vec![
        TensorBinding {
            uid: X,
            data: BufferRef::Host(&b.x),
        },
        TensorBinding {
            uid: W,
            data: BufferRef::Host(&b.w),
        },
        TensorBinding {
            uid: Z,
            data: BufferRef::HostMut(&mut z),
        },
    ];
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .expect("execute");
    z
}

fn built() -> (GraphBuilder, OperationGraph, Box<dyn ExecutionContext>) {
    let g = conv_relu();
    let bytes = conv_relu().build();
    let graph = OperationGraph::from_bytes(&bytes).expect("graph");
    let e = ReferenceEngine::new();
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &graph,
        )
        .expect("ctx");
    (g, graph, ctx)
}

#[test]
fn engine_identity_notes_and_workspace() {
    let e = ReferenceEngine::new();
    assert_eq!(e.name(), "hipdnn.reference.cpu");
    assert_eq!(ENGINE_NAME, e.name());
    let (_, graph, ctx) = built();
    assert_eq!(
        e.behavior_notes(&graph),
        vec![BehaviorNote::SupportsExecutionPlanSerialization]
    );
    assert_eq!(ctx.workspace_size(), 0);
    assert!(e.check_applicable(&graph).is_ok());
}

#[test]
fn save_load_execute_is_bit_identical_and_resave_is_byte_identical() {
    let (g, _, ctx) = built();
    let e = ReferenceEngine::new();
    let b = inputs(&g);
    let zlen = g.spec(Z).bytes_len();
    let want = run(ctx.as_ref(), &b, zlen);
    let ser = e.serialization().expect("hooks");
    let p = ser
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let loaded = ser
        .create_execution_context_from_serialized(&p)
        .expect("load");
    assert_eq!(run(loaded.as_ref(), &b, zlen), want);
    assert_eq!(
        ser.serialize_execution_context(e.id(), loaded.as_ref())
            .expect("resave"),
        p
    );
    // The relu really ran: no negative outputs, some positive.
    let z = g.spec(Z).decode(&want);
    assert!(z.iter().all(|&v| v >= 0.0) && z.iter().any(|&v| v > 0.0));
}

#[test]
fn execution_is_bit_identical_across_thread_counts() {
    let (g, _, ctx) = built();
    let b = inputs(&g);
    let zlen = g.spec(Z).bytes_len();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| run(ctx.as_ref(), &b, zlen));
    let four = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
        .install(|| run(ctx.as_ref(), &b, zlen));
    assert_eq!(one, four);
    assert_eq!(run(ctx.as_ref(), &b, zlen), one);
}

#[test]
fn payload_header_bytes_are_pinned() {
    // If this test fails, you changed the format — bump the version, do not edit the expected bytes.
    let p = payload::encode(b"abc");
    let mut want = Vec::new();
    want.extend_from_slice(b"HRCP");
    want.extend_from_slice(&[1, 0, 0, 0, 52, 0, 0, 0]);
    want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
    // SHA-256("abc")
    want.extend_from_slice(&[
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22,
        0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00,
        0x15, 0xad,
    ]);
    want.extend_from_slice(b"abc");
    assert_eq!(p, want);
    assert_eq!(HEADER_SIZE, 52);
}

fn load_err(p: &[u8]) -> (PluginStatus, String) {
    let e = ReferenceEngine::new();
    match e
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(p)
    {
        Ok(_) => panic!("payload of {} bytes loaded", p.len()),
        Err(err) => (err.status, err.message),
    }
}

fn saved() -> Vec<u8> {
    let (_, _, ctx) = built();
    let e = ReferenceEngine::new();
    e.serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap()
}

#[test]
fn every_truncation_is_refused_as_damaged() {
    let p = saved();
    for n in 0..p.len() {
        let (st, msg) = load_err(&p[..n]);
        assert_eq!(st, PluginStatus::InvalidValue, "len {n}: {msg}");
        assert!(msg.starts_with(DAMAGED), "len {n}: {msg}");
    }
    let mut ext = p.clone();
    ext.push(0);
    let (st, msg) = load_err(&ext);
    assert_eq!(st, PluginStatus::InvalidValue);
    assert!(msg.contains("body extended"), "{msg}");
}

#[test]
fn each_damaged_header_field_is_refused_as_damaged() {
    let p = saved();
    // (offset, replacement byte, expected message part)
    for (at, byte, part) in [
        (0usize, b'X', "magic"),
        (8, 51, "header size"),
        (9, 1, "body truncated"),
        (10, 1, "reserved"),
        (12, 0, "body"),
        (19, 1, "body"),
        (20, 0, "checksum"),
        (51, 0, "checksum"),
        (HEADER_SIZE + 5, 0xff, "checksum"),
    ] {
        let mut d = p.clone();
        d[at] = if d[at] == byte { byte ^ 0x55 } else { byte };
        let (st, msg) = load_err(&d);
        assert_eq!(st, PluginStatus::InvalidValue, "byte {at}: {msg}");
        assert!(
            msg.starts_with(DAMAGED) && msg.contains(part),
            "byte {at}: {msg}"
        );
    }
}

#[test]
fn other_major_version_is_valid_but_not_loadable_and_damage_wins() {
    let p = saved();
    let mut v2 = p.clone();
    v2[4] = 2;
    let (st, msg) = load_err(&v2);
    assert_eq!(st, PluginStatus::NotApplicable);
    assert!(
        msg.starts_with(INCOMPATIBLE) && msg.contains("2.0"),
        "{msg}"
    );
    // A newer minor loads.
    let mut minor = p.clone();
    minor[6] = 7;
    assert!(
        ReferenceEngine::new()
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&minor)
            .is_ok()
    );
    // Damage and incompatibility together: damage is reported.
    v2[HEADER_SIZE + 1] ^= 1;
    let (st, msg) = load_err(&v2);
    assert_eq!(st, PluginStatus::InvalidValue, "{msg}");
}

#[test]
fn checksummed_garbage_body_is_damaged_graph() {
    let p = payload::encode(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let (st, msg) = load_err(&p);
    assert_eq!(st, PluginStatus::InvalidValue);
    assert!(msg.starts_with(&format!("{DAMAGED}graph")), "{msg}");
}

#[test]
fn device_buffers_short_buffers_and_missing_tensors_are_refused() {
    let (g, _, ctx) = built();
    let b = inputs(&g);
    let mut z = vec![0u8; g.spec(Z).bytes_len()];
    let mut t = vec![
        TensorBinding {
            uid: X,
            data: BufferRef::Device {
                addr: 0x1000,
                len: b.x.len(),
            },
        },
        TensorBinding {
            uid: W,
            data: BufferRef::Host(&b.w),
        },
        TensorBinding {
            uid: Z,
            data: BufferRef::HostMut(&mut z),
        },
    ];
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert!(
        err.message.contains("tensor uid 1") && err.message.contains("device buffer"),
        "{}",
        err.message
    );

    let short = &b.w[..b.w.len() - 1];
    let mut t = vec![
        TensorBinding {
            uid: X,
            data: BufferRef::Host(&b.x),
        },
        TensorBinding {
            uid: W,
            data: BufferRef::Host(short),
        },
        TensorBinding {
            uid: Z,
            data: BufferRef::HostMut(&mut z),
        },
    ];
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert!(
        err.message
            .starts_with("tensor uid 2 ('w'): buffer holds 431 bytes"),
        "{}",
        err.message
    );
    assert!(z.iter().all(|&v| v == 0), "nothing written on failure");

    let mut t = vec![
        TensorBinding {
            uid: X,
            data: BufferRef::Host(&b.x),
        },
        TensorBinding {
            uid: Z,
            data: BufferRef::HostMut(&mut z),
        },
    ];
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.message, "tensor uid 2 ('w') is not in the variant pack");
}

#[test]
fn sdpa_dropout_is_refused_naming_op_attribute_and_value() {
    let mut g = GraphBuilder::new("sdpa");
    for (u, n) in [(1, "q"), (2, "k"), (3, "v"), (4, "o")] {
        g.tensor(TensorSpec::new(u, n, DT::FLOAT, &[1, 1, 4, 8]));
    }
    g.node(
        "Sdpa_0",
        Box::new(|fbb| {
            let a = SdpaAttributes::create(
                fbb,
                &SdpaAttributesArgs {
                    q_tensor_uid: 1,
                    k_tensor_uid: 2,
                    v_tensor_uid: 3,
                    o_tensor_uid: 4,
                    dropout_probability: Some(0.1),
                    ..Default::default()
                },
            );
            (NodeAttributes::SdpaAttributes, a.as_union_value())
        }),
    );
    let graph = OperationGraph::from_bytes(&g.build()).unwrap();
    let err = ReferenceEngine::new().check_applicable(&graph).unwrap_err();
    assert_eq!(err.status, PluginStatus::NotApplicable);
    assert_eq!(
        err.message,
        "sdpa 'Sdpa_0': dropout_probability 0.1 is not supported by the CPU reference engine"
    );
}

#[test]
fn unsupported_data_type_and_unproduced_virtual_tensor_are_refused() {
    let mut g = GraphBuilder::new("fp4");
    g.tensor(TensorSpec::new(1, "a", DT::FP4_E2M1, &[4]))
        .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[4]));
    g.pointwise(
        "id",
        PointwiseAttributesArgs {
            operation: PointwiseMode::IDENTITY,
            in_0_tensor_uid: 1,
            out_0_tensor_uid: 2,
            ..Default::default()
        },
    );
    let err = ReferenceEngine::new()
        .check_applicable(&OperationGraph::from_bytes(&g.build()).unwrap())
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::NotApplicable);
    assert!(
        err.message
            .starts_with("tensor uid 1 ('a'): data_type FP4_E2M1 is not supported"),
        "{}",
        err.message
    );

    let mut g = GraphBuilder::new("virt");
    g.tensor(TensorSpec::new(1, "a", DT::FLOAT, &[4]).virtual_())
        .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[4]));
    g.pointwise(
        "id",
        PointwiseAttributesArgs {
            operation: PointwiseMode::IDENTITY,
            in_0_tensor_uid: 1,
            out_0_tensor_uid: 2,
            ..Default::default()
        },
    );
    let err = ReferenceEngine::new()
        .check_applicable(&OperationGraph::from_bytes(&g.build()).unwrap())
        .unwrap_err();
    assert!(
        err.message
            .contains("virtual tensor uid 1 ('a') is read but no node writes it"),
        "{}",
        err.message
    );
}
