//! The pointwise_fused Triton family (`hipkernel.pointwise.dispatch.v3`) without a device:
//! launch values round trip with the exact kernel arguments, exact refusal texts at restore,
//! the graph matcher's program (slots, rounding codes, parameters, merged dims and strides),
//! the static rule's entry per graph on a fake sm_90 device with the committed archive, the
//! refusals of graphs the pack does not serve (message prefixes), a spec plan's alignment
//! check, save → restore on an engine without kernels → the identical launch, and every case
//! of the GPU test's matrix building as a v3 plan and running on the CPU reference engine.

#[path = "ingestor_support.rs"]
mod support;

mod pointwise_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::pointwise_v3::{
    POINTWISE_V3, PointwiseOpCode, PointwiseV3Handler, PointwiseV3Inputs, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as M};
use pointwise_support::{PwCase, PwNode, PwTensor, Y, bias_relu_scale, dag4, t};
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";

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

fn og(c: &PwCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

/// relu(x + b) * s over 4 × 64 f16 elements, b a [1, 64] row (stride 0 on dim 0), s one f32
/// element, an f16 intermediate; `spec` or generic config.
fn inputs(spec: bool) -> PointwiseV3Inputs {
    let name = if spec {
        "pointwise_fused_f16_spec_512x1x1_g1_w4_s1_sh0_ws32"
    } else {
        "pointwise_fused_f16_generic_256x1x1_g1_w4_s1_sh0_ws32"
    };
    let op = |mode, slots, rnd, params| PointwiseOpCode {
        mode,
        slots,
        rnd,
        params,
    };
    PointwiseV3Inputs {
        input_uids: vec![1, 2, 3],
        y_uid: Y,
        dtype: 2,
        dims: [1, 1, 1, 4, 64],
        strides: [
            [0, 0, 0, 64, 1],
            if spec {
                [0, 0, 0, 64, 1]
            } else {
                [0, 0, 0, 0, 1]
            },
            [0; 5],
            [0; 5],
        ],
        y_strides: [0, 0, 0, 64, 1],
        types: [0, 0, 1, 0, 0],
        program: vec![
            op(M::ADD, [0, 1, 0], 1, [0.0; 3]),
            op(M::RELU_FWD, [4, 0, 0], 1, [0.0, f32::MAX, 0.0]),
            op(M::MUL, [5, 2, 0], 0, [0.0; 3]),
        ],
        config: TritonConfig::parse(name).unwrap(),
    }
}

#[test]
fn pointwise_v3_launch_values_round_trip_and_give_the_geometry() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, POINTWISE_V3);
        let back = PointwiseV3Handler
            .restore_launch(POINTWISE_V3, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        let block = if spec { 512 } else { 256 };
        assert_eq!(l.geometry.grid, [256 / block, 1, 1].map(|v: u32| v.max(1)));
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(l.workspace_bytes, 0);
        assert_eq!(l.pointer_uids, vec![1, 2, 3, Y]);
        // flags: x2 f32 (bits 4-5 = 1), x2 one element (bit 14, spec only), 3 inputs, 3 nodes.
        let flags = (1 << 4) | (3 << 16) | (3 << 20) | if spec { 1 << 14 } else { 0 };
        assert_eq!(l.launch_values.get("flags"), Some(&LaunchValue::Int(flags)));
        let ops = [
            2 | 1 << 12 | 1 << 20,
            34 | 4 << 8 | 1 << 20,
            30 | 5 << 8 | 2 << 12,
            0,
        ];
        let mut ints: Vec<i64> = vec![256];
        if !spec {
            ints.extend([1, 1, 4, 64]);
            ints.extend([0, 0, 0, 64, 1, 0, 0, 0, 0, 1]);
            ints.extend([0; 10]);
            ints.extend([0, 0, 0, 64, 1]);
        }
        ints.push(flags);
        ints.extend(ops);
        let mut want: Vec<KernelArgValue> = ints
            .iter()
            .map(|v| KernelArgValue::I32(*v as i32))
            .collect();
        want.extend([0.0, 0.0, 0.0, 0.0, f32::MAX, 0.0].map(KernelArgValue::F32));
        want.extend([KernelArgValue::F32(0.0); 6]);
        assert_eq!(l.scalar_args, want);
        let sig = PointwiseV3Handler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(spec));
        let n_ints = if spec { 6 } else { 35 };
        assert_eq!(sig.len(), 5 + n_ints + 12 + 2);
        let last: Vec<(String, u32, u32)> = sig[sig.len() - 3..]
            .iter()
            .map(|a| (a.name.clone(), a.size, a.offset))
            .collect();
        // The scratch pointers start at the next multiple of 8 after the last float.
        let end = 40 + 4 * (n_ints + 12) as u32;
        let base = end.div_ceil(8) * 8;
        assert_eq!(
            last,
            [
                ("p32".to_string(), 4, end - 4),
                ("global_scratch".to_string(), 8, base),
                ("profile_scratch".to_string(), 8, base + 8)
            ]
        );
        // Kernel arguments: three inputs, a null fourth, y, the scalars, two null scratch.
        let tb: Vec<TensorBinding<'_>> = [1i64, 2, 3, Y]
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: 0x1000 * *u as u64,
                    len: 1 << 20,
                },
            })
            .collect();
        let args = PointwiseV3Handler.kernel_args(&l, &tb).unwrap();
        assert_eq!(
            &args[..5],
            &[
                KernelArgValue::Pointer(0x1000),
                KernelArgValue::Pointer(0x2000),
                KernelArgValue::Pointer(0x3000),
                KernelArgValue::Pointer(0),
                KernelArgValue::Pointer(0xA000),
            ]
        );
        assert_eq!(args.len(), sig.len());
        assert_eq!(&args[args.len() - 2..], &[KernelArgValue::Pointer(0); 2]);
    }
}

#[test]
fn pointwise_v3_launch_value_refusals_are_exact() {
    let d = POINTWISE_V3;
    let restore = |v| PointwiseV3Handler.restore_launch(d, &v);
    let base = || inputs(false).to_launch().unwrap().launch_values;
    let flags = (1 << 4) | (3 << 16) | (3 << 20);
    let mut v = base();
    v.remove("x2.uid");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'x2.uid' of dispatch '{d}' must be present exactly for the 3 inputs that 'flags' names; flags is {flags}"
        )
    );
    let mut v = base();
    v.insert("flags".into(), LaunchValue::Int(flags | 1 << 30));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'flags' of dispatch '{d}' holds {}, which sets an unknown bit or type code",
            flags | 1 << 30
        )
    );
    // Node 1 reading node 1's own result (slot 5).
    let bad = 34 | 5 << 8 | 1 << 20;
    let mut v = base();
    v.insert("op1".into(), LaunchValue::Int(bad));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'op1' of dispatch '{d}' holds {bad}, which is not a node program entry for node 1 of 3 over 3 inputs"
        )
    );
    // The last node rounding its result (the store rounds).
    let bad = 30 | 5 << 8 | 2 << 12 | 1 << 20;
    let mut v = base();
    v.insert("op2".into(), LaunchValue::Int(bad));
    assert!(
        err(restore(v))
            .ends_with("which is not a node program entry for node 2 of 3 over 3 inputs")
    );
    let mut v = base();
    v.insert("p11".into(), LaunchValue::Float(0.1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'p11' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds 0.1"
        )
    );
    // The spec variant with a broadcast (not dense, not one element) input.
    let mut v = base();
    v.insert("spec".into(), LaunchValue::Int(1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' name the spec variant, whose tensors must be dense or one element over a multiple of 16 elements"
        )
    );
    // The light group for a 3-node program.
    let mut v = base();
    v.insert("group".into(), LaunchValue::Int(2));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' name the light group (2), which runs one node of a light mode"
        )
    );
    let mut v = base();
    v.insert("d0".into(), LaunchValue::Int(1 << 20));
    v.insert("d1".into(), LaunchValue::Int(1 << 20));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' give 281474976710656 elements; the contract takes fewer than 2147418112"
        )
    );
    let mut v = base();
    v.insert("warp_size".into(), LaunchValue::Int(48));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values 'warp_size' and 'num_warps' of dispatch '{d}' give 192 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"
        )
    );
    let mut v = base();
    v.insert("x9.uid".into(), LaunchValue::Int(1));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch value 'x9.uid' is not part of the contract of dispatch '{d}'")
    );
}

/// The config and program the engine's static rule gives `c` on sm_90:
/// (`spec`, `block`, `group`, `flags`, op values).
fn chosen(e: &IngestorEngine, c: &PwCase) -> (i64, i64, i64, i64, [i64; 4]) {
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &og(c),
        )
        .unwrap_or_else(|err| panic!("{}: {}", c.name, err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, POINTWISE_V3, "{}", c.name);
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let sym = if int("spec") == 1 {
        "hipdnn_pointwise_flat"
    } else {
        "hipdnn_pointwise"
    };
    assert_eq!(p.symbol, sym, "{}", c.name);
    (
        int("spec"),
        int("block"),
        int("group"),
        int("flags"),
        [int("op0"), int("op1"), int("op2"), int("op3")],
    )
}

#[test]
fn the_static_rule_and_the_program_per_graph() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let single = PwCase::single;
    // A dense ADD: the light spec entry, 1024 block (2048, or 4096 for 16-bit types, only from
    // 2^20 elements).
    assert_eq!(
        chosen(
            &e,
            &single(M::ADD, DT::FLOAT, &[4, 64], &[&[4, 64], &[4, 64]])
        ),
        (1, 1024, 2, 2 << 16 | 1 << 20, [2 | 1 << 12, 0, 0, 0])
    );
    let big = single(
        M::ADD,
        DT::HALF,
        &[1024, 1024],
        &[&[1024, 1024], &[1024, 1024]],
    );
    assert_eq!(
        chosen(&e, &big).1,
        4096,
        "16-bit types: the 4096-element entry"
    );
    let big32 = single(
        M::ADD,
        DT::FLOAT,
        &[1024, 1024],
        &[&[1024, 1024], &[1024, 1024]],
    );
    assert_eq!(chosen(&e, &big32).1, 2048, "f32: the 2048-element entry");
    // A broadcast bias: the light generic entry.
    let (spec, block, group, ..) =
        chosen(&e, &single(M::ADD, DT::FLOAT, &[4, 64], &[&[4, 64], &[64]]));
    assert_eq!((spec, block, group), (0, 512, 2));
    // A scalar second operand keeps the spec entry (bit 13: x1 is one element).
    let (spec, _, group, flags, _) = chosen(
        &e,
        &single(M::MUL, DT::BFLOAT16, &[4, 64], &[&[4, 64], &[1]]),
    );
    assert_eq!((spec, group, flags & 1 << 13), (1, 2, 1 << 13));
    // A heavy mode: the full spec entry.
    let (spec, block, group, ..) = chosen(
        &e,
        &single(M::SIGMOID_FWD, DT::HALF, &[16, 16], &[&[16, 16]]),
    );
    assert_eq!((spec, block, group), (1, 512, 1));
    // The chain: bias over channels (generic), f16 intermediates rounded (rnd 1).
    let (spec, block, group, flags, ops) =
        chosen(&e, &bias_relu_scale(DT::HALF, DT::HALF, &[2, 16, 8, 8]));
    assert_eq!((spec, block, group), (0, 256, 1));
    assert_eq!(flags, 1 << 4 | 3 << 16 | 3 << 20);
    assert_eq!(
        ops,
        [
            2 | 1 << 12 | 1 << 20,
            34 | 4 << 8 | 1 << 20,
            30 | 5 << 8 | 2 << 12,
            0
        ]
    );
    // The DAG: 4 nodes over 4 inputs numbered in first-use order (UIDs 1, 2, 4, 3), node 3
    // reading node 0's f32 result (slot 4).
    let (_, _, group, flags, ops) = chosen(&e, &dag4(DT::FLOAT, &[7, 33]));
    assert_eq!((group, flags), (1, 4 << 16 | 4 << 20));
    assert_eq!(
        ops,
        [
            30 | 1 << 12,
            37 | 4 << 8,
            4 | 5 << 8 | 2 << 12 | 3 << 16,
            20 | 6 << 8 | 4 << 12
        ]
    );
    // 6-D dims that merge to 2-D: (2·3·5, 2·3·16) is dense → spec.
    let c = single(
        M::SUB,
        DT::FLOAT,
        &[2, 3, 5, 2, 3, 16],
        &[&[2, 3, 5, 2, 3, 16]],
    );
    assert_eq!(chosen(&e, &c).0, 1);
}

/// The refusal of the first sm_90 pointwise_fused generic full entry for `c`.
fn refusal(c: &PwCase) -> String {
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pointwise_fused_f32_generic_256x1x1_g1"))
        .unwrap();
    err(PointwiseV3Handler.prepare_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_with_the_reason() {
    // Five nodes.
    let mut tensors = vec![t(1, &[4], DT::FLOAT), t(Y, &[4], DT::FLOAT)];
    let mut nodes = Vec::new();
    let mut prev = 1;
    for k in 0..5 {
        let out = if k == 4 { Y } else { 20 + k };
        if k < 4 {
            tensors.push(PwTensor {
                is_virtual: true,
                ..t(out, &[4], DT::FLOAT)
            });
        }
        nodes.push(PwNode::new(M::NEG, &[prev], out));
        prev = out;
    }
    let c = PwCase {
        name: "five negations".into(),
        tensors,
        nodes,
    };
    assert_eq!(
        refusal(&c),
        "the pointwise_fused pack fuses 1 to 4 pointwise nodes into one launch; this graph has 5 nodes"
    );
    // A stored (non-virtual) intermediate.
    let mut c = bias_relu_scale(DT::FLOAT, DT::FLOAT, &[2, 4, 3, 3]);
    c.tensor_mut(21).is_virtual = false;
    assert_eq!(
        refusal(&c),
        "the pointwise_fused pack never stores intermediates; node 'pw1' writes tensor uid 21, which is not virtual"
    );
    // Two sinks.
    let mut c = bias_relu_scale(DT::FLOAT, DT::FLOAT, &[2, 4, 3, 3]);
    c.tensors.push(t(11, &[2, 4, 3, 3], DT::FLOAT));
    c.nodes.push(PwNode::new(M::EXP, &[20], 11));
    assert_eq!(
        refusal(&c),
        "the pointwise_fused pack needs exactly one node output that no node reads (the launch stores one tensor); this graph has 2"
    );
    // Mixed 16-bit types.
    let mut c = PwCase::single(M::ADD, DT::HALF, &[4], &[&[4], &[4]]);
    c.tensor_mut(2).dt = DT::BFLOAT16;
    assert_eq!(
        refusal(&c),
        "the pointwise_fused pack needs one 16-bit float type per graph; this graph has HALF and BFLOAT16"
    );
    // An input that does not broadcast.
    let c = PwCase::single(M::ADD, DT::FLOAT, &[4, 6], &[&[4, 6], &[3]]);
    assert_eq!(
        refusal(&c),
        "the pointwise_fused pack: input tensor uid 2 dims [3] strides [1] do not broadcast to the output dims [4, 6]"
    );
    // An INT32 input.
    let mut c = PwCase::single(M::ADD, DT::FLOAT, &[4], &[&[4], &[4]]);
    c.tensor_mut(2).dt = DT::INT32;
    assert_eq!(
        refusal(&c),
        "the pointwise_fused pack serves f32, f16, bf16 and BOOLEAN tensors; tensor uid 2 is INT32"
    );
    // Seven merged dims cannot happen from a packed tensor; a transposed 6-D one stays 6-D.
    let dims = [2i64, 3, 2, 3, 2, 3];
    let mut c = PwCase::single(M::NEG, DT::FLOAT, &dims, &[&dims]);
    c.tensor_mut(1).strides = Some(vec![1, 2, 6, 12, 36, 72]);
    assert!(
        refusal(&c).starts_with(
            "the pointwise_fused pack runs at most 5 dims after merging contiguous ones; output dims [2, 3, 2, 3, 2, 3] give"
        ),
        "{}",
        refusal(&c)
    );
    // A graph with a non-pointwise node names it.
    // (Built with the conv/matmul helpers elsewhere; the light-entry and spec refusals:)
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pointwise_fused_f32_spec_1024x1x1_g2"))
        .unwrap();
    let c = PwCase::single(M::EXP, DT::FLOAT, &[4, 64], &[&[4, 64]]);
    let m = err(PointwiseV3Handler.prepare_kernel(&k, &og(&c)));
    assert!(
        m.ends_with("is a light entry (one node of a light mode); this graph has mode EXP"),
        "{m}"
    );
    let c = PwCase::single(M::ADD, DT::FLOAT, &[4, 61], &[&[4, 61], &[4, 61]]);
    let m = err(PointwiseV3Handler.prepare_kernel(&k, &og(&c)));
    assert!(
        m.ends_with("is the spec variant; the graph's layout does not satisfy its hints (every input dense or one element, a dense output, no BOOLEAN tensor, a multiple of 16 elements)"),
        "{m}"
    );
    let k2048 = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pointwise_fused_f32_spec_2048x1x1_g2"))
        .unwrap();
    let c = PwCase::single(M::ADD, DT::FLOAT, &[4, 64], &[&[4, 64], &[4, 64]]);
    let m = err(PointwiseV3Handler.prepare_kernel(&k2048, &og(&c)));
    assert!(
        m.ends_with(": static rule: a 2048-element block for 256 elements; a smaller block serves this graph"),
        "{m}"
    );
    let k16 = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pointwise_fused_f16_generic"))
        .unwrap();
    let m = err(PointwiseV3Handler.prepare_kernel(&k16, &og(&c)));
    assert!(m.ends_with("is built for f16, the graph is FLOAT"), "{m}");
}

fn binds(c: &PwCase, misalign: u64) -> Vec<TensorBinding<'static>> {
    let mut u = c.inputs();
    u.extend(c.outputs());
    u.iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *uid as u64 + if *uid == 2 { misalign } else { 0 },
                len: 1 << 24,
            },
        })
        .collect()
}

#[test]
fn a_spec_plan_checks_alignment_and_restores_without_kernels() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let c = PwCase::single(M::ADD, DT::HALF, &[64, 64], &[&[64, 64], &[64, 64]]);
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &og(&c),
        )
        .unwrap();
    let mut tb = binds(&c, 0);
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut tb,
    })
    .unwrap();
    let (geom, args) = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(geom.grid, [4, 1, 1], "4096 elements, 1024 per program");
    assert_eq!(geom.block, [128, 1, 1]);
    let p = |u: u64| KernelArgValue::Pointer(0x1000_0000 * u);
    assert_eq!(
        &args[..7],
        &[
            p(1),
            p(2),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
            p(Y as u64),
            KernelArgValue::I32(4096),
            KernelArgValue::I32(2 << 16 | 1 << 20),
        ]
    );
    assert_eq!(args.len(), signature(true).len());
    let mut tb = binds(&c, 8);
    let e2 = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut tb,
        })
        .unwrap_err();
    assert_eq!(e2.status, PluginStatus::BadParam);
    assert_eq!(
        e2.message,
        "tensor UID 2 is at 0x20000008; this plan runs the specialized pointwise_fused kernel, which needs every tensor 16-byte aligned"
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 1);
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e3 = engine(dev2.clone(), vec![]);
    let restored = e3
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let mut tb = binds(&c, 0);
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut tb,
        })
        .unwrap();
    assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
}

/// Every case of the GPU matrix builds on the fake sm_90 engine as a v3 plan (spec exactly
/// where the layout allows it, the light group exactly for one node of a light mode) and runs
/// on the CPU reference engine, so the one GPU run meets no graph error.
#[test]
fn every_gpu_pointwise_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = pointwise_support::gpu_cases();
    // 3 types × (every mode dense and broadcast + 4 shapes + the DAG) + the chains per
    // (type, intermediate type) pair + 3 f32 layout cases.
    assert_eq!(cases.len(), 3 * (2 * 47 + 4 + 1) + (6 + 4 + 4) + 3);
    for c in &cases {
        let (_, _, group, ..) = chosen(&e, c);
        // The light group serves exactly the modes computed with IEEE operations only (the
        // test's own list, independent of the pack's).
        let light = c.nodes.len() == 1 && pointwise_support::EXACT.contains(&c.nodes[0].mode);
        assert_eq!(group, if light { 2 } else { 1 }, "{}", c.name);
        let ins: Vec<(i64, Vec<f32>)> = c
            .inputs()
            .into_iter()
            .map(|u| {
                (
                    u,
                    (0..c.count(u))
                        .map(|k| (k % 7) as f32 * 0.5 + 0.25)
                        .collect(),
                )
            })
            .collect();
        let out = hipdnn_engines::reference::testing::run_graph(c.graph(), &ins, &c.outputs())
            .unwrap_or_else(|err| panic!("{}: {}", c.name, err.message));
        assert_eq!(out[0].len(), c.count(Y), "{}", c.name);
    }
}

/// Runs `engines/kernels/triton/interpret_pointwise_fused.py` (both kernels, every mode, the
/// chains, under Triton's interpreter against a numpy transcription of the reference engine)
/// with the system `python3` and the pack venv's site-packages (`TRITON_VENV`, else
/// `target/triton-venv`, which `.ci/kernels.sh` creates). Prints `skipped: …` and passes when
/// that python cannot import numpy and triton; fails when the script reports a failure.
#[test]
fn the_kernels_match_the_reference_under_the_triton_interpreter() {
    support::run_interpreter_check("interpret_pointwise_fused.py", 100);
}

/// The GPU test's comparison (`pointwise_support::compare`) can fail: a one-ulp change of an
/// exact mode's output, an f32 error above 2e-5·(1 + |r|), an unwritten (NaN) element and a
/// short output are refused with the element named; an error inside the tolerance passes.
#[test]
fn the_gpu_comparison_refuses_outputs_off_the_reference() {
    use pointwise_support::compare;
    let add = PwCase::single(M::ADD, DT::FLOAT, &[4], &[&[4], &[4]]);
    let want = [1.0f32, -2.5, 3.25, 0.0];
    assert_eq!(compare(&add, &want, &want), Ok(0.0));
    let mut got = want;
    got[2] = f32::from_bits(got[2].to_bits() + 1);
    assert_eq!(
        compare(&add, &got, &want),
        Err(format!(
            "{}: element 2: gpu 3.2500002, cpu 3.25 (exact mode)",
            add.name
        ))
    );
    let exp = PwCase::single(M::EXP, DT::FLOAT, &[4], &[&[4]]);
    let mut got = want;
    got[1] = -2.5 + 3.5 * 1e-5;
    assert!(compare(&exp, &got, &want).is_ok_and(|d| d > 0.9e-5 && d <= 2e-5));
    got[1] = -2.5 + 3.5 * 3e-5;
    assert!(
        compare(&exp, &got, &want)
            .unwrap_err()
            .ends_with("(tol 0.00002)")
    );
    let mut got = want;
    got[3] = f32::NAN;
    assert!(
        compare(&exp, &got, &want)
            .unwrap_err()
            .contains("element 3: gpu NaN, cpu 0")
    );
    assert!(compare(&exp, &want[..3], &want).is_err());
}
