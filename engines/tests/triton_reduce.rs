//! The reduce_fwd Triton family (`hipkernel.reduce_fwd.dispatch.v1`) without a device: launch
//! values round trip, exact refusal texts, the graph matcher's kept/reduced groups and op codes,
//! the static rule's entry per reduced extent on a fake sm_90 device with the committed
//! archive, the recorded launch of a softmax graph, save → restore on an engine without
//! kernels → the identical launch, and every case of the GPU test's matrix built on the fake
//! device and run on the CPU reference engine.

#[path = "ingestor_support.rs"]
mod support;

mod reduce_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::packs::reduce_fwd::{
    REDUCE_FWD_V1, ReduceFwdHandler, ReduceFwdInputs, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{DataType as DT, ReductionMode as RM};
use reduce_support::{Kind, ReduceCase, Tweak, X, Y};
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

fn cfg(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

fn og(c: &ReduceCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

/// Softmax f16 over 4096-element rows of a (2, 3, 4096) x, f32 y, spec 1x4096.
fn inputs(spec: bool) -> ReduceFwdInputs {
    let mut config =
        TritonConfig::parse("reduce_fwd_f16_spec_1x4096x1_g1_w8_s1_sh32_ws32").unwrap();
    config.spec = spec;
    ReduceFwdInputs {
        uids: [1, 2],
        dtype: 2,
        op: 16 | 32,
        shape: [6, 6, 1, 4096],
        strides: [0, 4096, 0, 1, 0, 4096, 0, 1],
        config,
    }
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

#[test]
fn reduce_launch_values_round_trip_and_give_the_geometry() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, REDUCE_FWD_V1);
        let back = ReduceFwdHandler
            .restore_launch(REDUCE_FWD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.geometry.grid, [6, 1, 1], "one row per program");
        assert_eq!(l.geometry.block, [256, 1, 1]);
        assert_eq!(l.geometry.shared_mem_bytes, 32);
        assert_eq!(l.workspace_bytes, 0);
        assert_eq!(l.pointer_uids, vec![1, 2]);
        let ints: &[i32] = if spec {
            &[6, 6, 1, 4096, 0, 4096, 0, 0, 4096, 0, 48]
        } else {
            &[6, 6, 1, 4096, 0, 4096, 0, 1, 0, 4096, 0, 1, 0, 48]
        };
        let want: Vec<KernelArgValue> = ints.iter().map(|v| KernelArgValue::I32(*v)).collect();
        assert_eq!(l.scalar_args, want);
        let sig = ReduceFwdHandler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(spec));
        let last: Vec<(String, u32, u32)> = sig[sig.len() - 3..]
            .iter()
            .map(|a| (a.name.clone(), a.size, a.offset))
            .collect();
        // 2 pointers (16 bytes), then 11 (spec) or 14 ints (yal), op the last at 16 + 4·10
        // or 16 + 4·13, the scratch pointers 8-aligned after it.
        let base = if spec { 64 } else { 72 };
        let op_at = if spec { 56 } else { 68 };
        assert_eq!(
            last,
            [
                ("op".to_string(), 4, op_at),
                ("global_scratch".to_string(), 8, base),
                ("profile_scratch".to_string(), 8, base + 8)
            ]
        );
        let t: Vec<TensorBinding<'_>> = [1i64, 2]
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: 0x1000 * *u as u64,
                    len: 1 << 20,
                },
            })
            .collect();
        let args = ReduceFwdHandler.kernel_args(&l, &t).unwrap();
        assert_eq!(
            &args[..2],
            &[
                KernelArgValue::Pointer(0x1000),
                KernelArgValue::Pointer(0x2000)
            ]
        );
        assert_eq!(args.len(), signature(spec).len());
        assert_eq!(&args[args.len() - 2..], &[KernelArgValue::Pointer(0); 2]);
    }
}

fn values(spec: bool) -> LaunchValues {
    inputs(spec).to_launch().unwrap().launch_values
}

#[test]
fn reduce_launch_value_refusals_are_exact() {
    let d = REDUCE_FWD_V1;
    let restore = |v| ReduceFwdHandler.restore_launch(d, &v);
    let mut v = values(true);
    v.insert("op".into(), LaunchValue::Int(10));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'op' of dispatch '{d}' must be a reduction mode 1..9, 16 (softmax) or 17 (log-softmax), with bit 32 for an f32 y; the plan holds 10"
        )
    );
    let mut v = values(true);
    v.insert("op".into(), LaunchValue::Int(64));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'op' of dispatch '{d}' must be int in [1, 63], and the plan holds 64"
        )
    );
    let mut v = values(true);
    v.insert("kin".into(), LaunchValue::Int(4));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'kin' of dispatch '{d}' must divide 'rows' (6); the plan holds 4"
        )
    );
    let mut v = values(false);
    v.insert("op".into(), LaunchValue::Int(1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' name a reduction, whose 'syro' and 'syri' must be 0"
        )
    );
    let mut v = values(true);
    v.insert("syri".into(), LaunchValue::Int(2));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' name the spec variant, whose 'sxri' (and for softmax 'syri') must be 1, 'rin', 'sxo', 'sxi', 'sxro' (and for softmax 'syo', 'syi', 'syro') multiples of 16"
        )
    );
    // A spec softmax whose y rows are not 16 elements apart (a reduction's y may be).
    let mut v = values(true);
    v.insert("syi".into(), LaunchValue::Int(4100));
    assert_eq!(
        err(restore(v.clone())),
        format!(
            "{LOAD}launch values of dispatch '{d}' name the spec variant, whose 'sxri' (and for softmax 'syri') must be 1, 'rin', 'sxo', 'sxi', 'sxro' (and for softmax 'syo', 'syi', 'syro') multiples of 16"
        )
    );
    v.insert("op".into(), LaunchValue::Int(1));
    v.insert("syi".into(), LaunchValue::Int(1));
    v.insert("syri".into(), LaunchValue::Int(0));
    assert!(restore(v).is_ok(), "a spec reduction with y stride 1");
    let mut v = values(false);
    v.insert("sxo".into(), LaunchValue::Int(-1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'sxo' of dispatch '{d}' must be int in [0, 2147483647], and the plan holds -1"
        )
    );
    let mut v = values(false);
    v.insert("rin".into(), LaunchValue::Int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'rin' of dispatch '{d}' must be int in [1, 2147483647], and the plan holds 0"
        )
    );
    let mut v = values(false);
    v.insert("k".into(), LaunchValue::Int(1));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch value 'k' is not part of the contract of dispatch '{d}'")
    );
    let mut v = values(false);
    v.insert("num_warps".into(), LaunchValue::Int(16));
    v.insert("warp_size".into(), LaunchValue::Int(64));
    assert!(
        restore(v.clone()).is_ok(),
        "16 × 64 = 1024 threads is the limit"
    );
    v.insert("warp_size".into(), LaunchValue::Int(48));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values 'warp_size' and 'num_warps' of dispatch '{d}' give 768 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"
        )
    );
    assert!(
        err(ReduceFwdHandler.restore_launch("hipkernel.reduce_fwd.dispatch.v2", &values(false)))
            .ends_with("names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.reduce_fwd.dispatch.v1'")
    );
}

/// The saved launch values the engine builds `c` with on the fake sm_90.
fn chosen(e: &IngestorEngine, c: &ReduceCase) -> LaunchValues {
    let ctx = e
        .create_execution_context(&cfg(e), &og(c))
        .unwrap_or_else(|err| panic!("{c:?}: {}", err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, REDUCE_FWD_V1);
    assert_eq!(p.symbol, "hipdnn_reduce_fwd");
    p.launch_values
}

fn ints(v: &LaunchValues, names: &[&str]) -> Vec<i64> {
    names
        .iter()
        .map(|n| match v.get(*n) {
            Some(LaunchValue::Int(x)) => *x,
            o => panic!("{n}: {o:?}"),
        })
        .collect()
}

const GROUPS: [&str; 13] = [
    "op", "rows", "kin", "rout", "rin", "sxo", "sxi", "sxro", "sxri", "syo", "syi", "syro", "syri",
];

#[test]
fn the_graph_matcher_collapses_axes_into_kept_and_reduced_groups() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let r = ReduceCase::reduce;
    let cases: Vec<(ReduceCase, [i64; 13])> = vec![
        // Last axis: one kept, one reduced group.
        (
            r(RM::ADD, DT::FLOAT, &[3, 1000], &[1]),
            [1, 3, 3, 1, 1000, 0, 1000, 0, 1, 0, 1, 0, 0],
        ),
        // First axis: the kept axis is the contiguous one.
        (
            r(RM::MAX_OP, DT::HALF, &[33, 5], &[0]),
            [4, 5, 5, 1, 33, 0, 1, 0, 5, 0, 1, 0, 0],
        ),
        // Middle axis: two kept groups (2 × 129).
        (
            r(RM::AVG, DT::BFLOAT16, &[2, 5, 129], &[1]),
            [6, 258, 129, 1, 5, 645, 1, 0, 129, 129, 1, 0, 0],
        ),
        // Leading + trailing: kept (4, 5) merges, reduced 3 and 6 stay two groups.
        (
            r(RM::NORM2, DT::FLOAT, &[3, 4, 5, 6], &[0, 3]),
            [8, 20, 20, 3, 6, 0, 6, 120, 1, 0, 1, 0, 0],
        ),
        // Two middle axes: one reduced group of 20.
        (
            r(RM::MUL_NO_ZEROS, DT::FLOAT, &[3, 4, 5, 6], &[1, 2]),
            [9, 18, 6, 1, 20, 120, 1, 0, 6, 6, 1, 0, 0],
        ),
        // Every axis: one output.
        (
            r(RM::NORM1, DT::FLOAT, &[4, 6, 11], &[0, 1, 2]),
            [7, 1, 1, 1, 264, 0, 0, 0, 1, 0, 0, 0, 0],
        ),
        // An f32 y behind f16 x.
        (
            ReduceCase {
                y_f32: true,
                ..r(RM::MUL, DT::HALF, &[17, 7], &[1])
            },
            [2 | 32, 17, 17, 1, 7, 0, 7, 0, 1, 0, 1, 0, 0],
        ),
        // Softmax over a middle axis: y's strides too.
        (
            ReduceCase::softmax(false, DT::FLOAT, &[2, 300, 5], &[1]),
            [16, 10, 5, 1, 300, 1500, 1, 0, 5, 1500, 1, 0, 5],
        ),
        // Log-softmax over the rows of a transposed x / y.
        (
            ReduceCase {
                strides: Some(vec![1, 9]),
                ..ReduceCase::softmax(true, DT::FLOAT, &[9, 100], &[1])
            },
            [17, 9, 9, 1, 100, 0, 1, 0, 9, 0, 1, 0, 9],
        ),
    ];
    for (i, (c, want)) in cases.iter().enumerate() {
        assert_eq!(ints(&chosen(&e, c), &GROUPS), want, "case {i}: {c:?}");
    }
}

#[test]
fn the_static_rule_picks_the_chunk_by_reduced_extent_and_spec_by_layout() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let sm = |dt, dims: &[i64]| ReduceCase::softmax(false, dt, dims, &[1]);
    let sum = |dt, dims: &[i64]| ReduceCase::reduce(RM::ADD, dt, dims, &[1]);
    let cases: Vec<(ReduceCase, [i64; 3])> = vec![
        (sm(DT::HALF, &[4096, 1024]), [1, 1, 1024]),
        (sm(DT::FLOAT, &[64, 4096]), [1, 1, 4096]),
        (sm(DT::HALF, &[8, 16384]), [1, 1, 8192]),
        (sm(DT::FLOAT, &[8, 4097]), [0, 1, 8192]),
        (sm(DT::BFLOAT16, &[8, 2048]), [1, 1, 1024]),
        (sm(DT::FLOAT, &[8, 384]), [1, 8, 128]),
        (sm(DT::FLOAT, &[8, 7]), [0, 8, 128]),
        (sum(DT::FLOAT, &[4096, 1024]), [1, 1, 1024]),
        (sum(DT::HALF, &[3, 1000]), [0, 4, 1024]),
        (sum(DT::HALF, &[3, 500]), [0, 8, 128]),
        // Reductions take chunks of at most 1024 (softmax above takes 4096 and 8192).
        (sum(DT::HALF, &[8, 4096]), [1, 1, 1024]),
        (sum(DT::FLOAT, &[2, 20000]), [1, 1, 1024]),
        // The first axis of a (33, 5): strided reduced axis, generic.
        (
            ReduceCase::reduce(RM::ADD, DT::FLOAT, &[32, 16], &[0]),
            [0, 8, 128],
        ),
    ];
    for (i, (c, want)) in cases.iter().enumerate() {
        assert_eq!(
            ints(&chosen(&e, c), &["spec", "block_m", "block_n"]),
            want,
            "case {i}: {c:?}"
        );
    }
}

fn binds(misalign: u64) -> Vec<TensorBinding<'static>> {
    [X, Y]
        .iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *uid as u64 + if *uid == X { misalign } else { 0 },
                len: 1 << 28,
            },
        })
        .collect()
}

#[test]
fn a_softmax_graph_launches_once_as_recorded_and_restores_without_kernels() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    for log in [false, true] {
        let c = ReduceCase::softmax(log, DT::HALF, &[4096, 1024], &[1]);
        let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
        assert_eq!(ctx.workspace_size(), 0);
        let n0 = dev.launches.lock().unwrap().len();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut binds(0),
        })
        .unwrap();
        assert_eq!(dev.launches.lock().unwrap().len(), n0 + 1, "one launch");
        let (geom, args) = dev.launches.lock().unwrap()[n0].clone();
        assert_eq!(geom.grid, [4096, 1, 1], "4096 rows, 1 per program");
        assert_eq!(geom.block, [128, 1, 1], "4 warps of 32");
        let p = |u: i64| KernelArgValue::Pointer(0x1000_0000 * u as u64);
        assert_eq!(&args[..2], &[p(X), p(Y)]);
        let op = if log { 17 } else { 16 };
        let want: Vec<KernelArgValue> = [4096, 4096, 1, 1024, 0, 1024, 0, 0, 1024, 0, op]
            .iter()
            .map(|v| KernelArgValue::I32(*v))
            .collect();
        assert_eq!(&args[2..13], &want[..]);
        assert_eq!(&args[13..], &[KernelArgValue::Pointer(0); 2]);
        // A misaligned x on the spec plan: refused, nothing launched.
        let e2 = ctx
            .execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut binds(4),
            })
            .unwrap_err();
        assert_eq!(e2.status, PluginStatus::BadParam);
        assert_eq!(
            e2.message,
            "tensor UID 1 is at 0x10000004; this plan runs the specialized reduce_fwd kernel, which needs 16-byte aligned x and y"
        );
        assert_eq!(dev.launches.lock().unwrap().len(), n0 + 1);
        // Save → restore on an engine without kernels → the identical launch.
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
        restored
            .execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut binds(0),
            })
            .unwrap();
        assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
    }
}

/// The refusal of the first sm_90 generic f32 reduce_fwd entry for `c`.
fn refusal(c: &ReduceCase) -> String {
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("reduce_fwd_f32_generic_8x128"))
        .unwrap();
    err(ReduceFwdHandler.prepare_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_with_the_reason() {
    const PAT: &str = "the reduce_fwd pack serves softmax (MAX reduction → SUB → EXP → ADD reduction → DIV) and log-softmax (… ADD reduction → LOG → SUB); this graph ";
    // Three separated reduced groups of a dense 5-D tensor.
    let c = ReduceCase::reduce(RM::ADD, DT::FLOAT, &[2, 3, 4, 5, 6], &[0, 2, 4]);
    assert_eq!(
        refusal(&c),
        "the reduce_fwd pack needs the kept axes and the reduced axes each to collapse to at most two strided groups; x dims [2, 3, 4, 5, 6] strides [360, 120, 30, 6, 1], y strides [15, 5, 5, 1, 1], reduced to [1, 3, 1, 5, 1]: 2 kept and 3 reduced groups"
    );
    // A softmax intermediate in memory.
    let c = ReduceCase {
        tweak: Tweak::SumInMemory,
        ..ReduceCase::softmax(false, DT::FLOAT, &[4, 64], &[1])
    };
    assert_eq!(
        refusal(&c),
        "the reduce_fwd pack runs the softmax pattern as one kernel and needs its intermediate tensor uid 13 to be virtual"
    );
    // MUL where softmax divides.
    let c = ReduceCase {
        tweak: Tweak::MulForDiv,
        ..ReduceCase::softmax(false, DT::FLOAT, &[4, 64], &[1])
    };
    assert_eq!(refusal(&c), format!("{PAT}has no DIV of EXP by its sum"));
    // The sum of x, not of the exponentials.
    let c = ReduceCase {
        tweak: Tweak::SumOfX,
        ..ReduceCase::softmax(true, DT::FLOAT, &[4, 64], &[1])
    };
    assert_eq!(
        refusal(&c),
        format!("{PAT}does not sum the EXP output with the ADD reduction")
    );
    // A data type the entry is not built for.
    let c = ReduceCase::reduce(RM::ADD, DT::HALF, &[4, 64], &[1]);
    assert!(
        refusal(&c).ends_with("is built for f32, the graph is HALF"),
        "{}",
        refusal(&c)
    );
    // The spec entry for a strided reduced axis.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("reduce_fwd_f32_spec_8x128"))
        .unwrap();
    let m = err(ReduceFwdHandler.prepare_kernel(
        &k,
        &og(&ReduceCase::reduce(RM::ADD, DT::FLOAT, &[32, 16], &[0])),
    ));
    assert!(
        m.ends_with("is the spec variant; the graph's layout does not satisfy its hints (unit inner reduced strides, the inner reduced extent and x's other strides multiples of 16; for softmax y's too)"),
        "{m}"
    );
    // The 4096 chunk for a reduction.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("reduce_fwd_f32_spec_1x4096"))
        .unwrap();
    let m = err(ReduceFwdHandler.prepare_kernel(
        &k,
        &og(&ReduceCase::reduce(RM::ADD, DT::FLOAT, &[2, 4096], &[1])),
    ));
    assert!(
        m.ends_with(
            ": static rule: a reduction walks its rows in chunks of at most 1024 elements, not 4096"
        ),
        "{m}"
    );
    // The 8192 chunk for rows of 4096.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("reduce_fwd_f32_spec_1x8192"))
        .unwrap();
    let m = err(ReduceFwdHandler.prepare_kernel(
        &k,
        &og(&ReduceCase::softmax(false, DT::FLOAT, &[2, 4096], &[1])),
    ));
    assert!(
        m.ends_with(": static rule: a 8192-element chunk is at least twice the inner reduced extent of 4096 elements; a narrower chunk serves this graph"),
        "{m}"
    );
}

/// Every case of the GPU test's matrix builds on the fake sm_90 engine as a reduce_fwd plan
/// with the op code of its graph and runs on the CPU reference engine with finite outputs of
/// the expected size, so the one GPU run meets no graph error.
#[test]
fn every_gpu_reduce_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = reduce_support::gpu_cases();
    assert_eq!(cases.len(), 266);
    for (i, c) in cases.iter().enumerate() {
        let v = chosen(&e, c);
        let op = ints(&v, &["op"])[0];
        let want_op = match c.kind {
            Kind::Reduce(m) => i64::from(m.0),
            Kind::Softmax => 16,
            Kind::LogSoftmax => 17,
        } | if c.y_f32 { 32 } else { 0 };
        assert_eq!(op, want_op, "case {i}: {c:?}");
        let [rows, rout, rin] = ints(&v, &["rows", "rout", "rin"])[..] else {
            unreachable!()
        };
        let (nx, ny) = c.counts();
        assert_eq!((rows * rout * rin) as usize, nx, "case {i}");
        assert_eq!((rout * rin) as usize, c.group(), "case {i}");
        let x = c.input(i as u64 + 1);
        let out = run_graph(c.graph(), &[(X, x)], &[Y])
            .unwrap_or_else(|err| panic!("case {i}: {c:?}: {}", err.message));
        assert_eq!(out[0].len(), ny, "case {i}");
        assert!(out[0].iter().all(|v| v.is_finite()), "case {i}");
    }
}

/// Not a check by itself: writes the launches of every GPU-test case, as the fake sm_90 device
/// records them (the Rust pack's kernel arguments by parameter name, grid, entry), the input
/// bytes in x's layout, the CPU reference engine's y and the GPU test's per-element
/// tolerances, to the JSON file named by `HIPDNN_REDUCE_LAUNCHES`.
/// `engines/tests/reduce_support/interpret_launches.py` runs those exact launches through
/// `reduce_fwd.py` under Triton's interpreter and compares with the reference (the CPU-side
/// check of what `gpu_reduce.rs` checks on a device):
/// `HIPDNN_REDUCE_LAUNCHES=/tmp/r.json cargo test -p hipdnn-engines --test triton_reduce -- --ignored`,
/// then `python3 engines/tests/reduce_support/interpret_launches.py /tmp/r.json`.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_reduce_launches_for_the_interpreter() {
    let path = std::env::var("HIPDNN_REDUCE_LAUNCHES")
        .expect("HIPDNN_REDUCE_LAUNCHES names the JSON file to write");
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let mut out = Vec::new();
    for (i, c) in reduce_support::gpu_cases().iter().enumerate() {
        let b = c.graph();
        let v = chosen(&e, c);
        let [spec, bm, bn] = ints(&v, &["spec", "block_m", "block_n"])[..] else {
            unreachable!()
        };
        let ctx = e.create_execution_context(&cfg(&e), &og(c)).unwrap();
        let x = c.input(i as u64 + 1);
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut binds(0),
        })
        .unwrap();
        let (geom, args) = dev.launches.lock().unwrap().last().unwrap().clone();
        let mut named = serde_json::Map::new();
        for (a, v) in signature(spec == 1).iter().zip(&args) {
            let v = match v {
                KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
                KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
                o => panic!("{o:?}"),
            };
            named.insert(a.name.clone(), v);
        }
        let want = run_graph(c.graph(), &[(X, x.clone())], &[Y]).unwrap()[0].clone();
        let tol = c.tolerances(&x, &want);
        let mut tensors = serde_json::Map::new();
        for u in [X, Y] {
            let s = b.spec(u);
            let mut o = serde_json::json!({"dt": dtn(s.data_type), "dims": s.dims,
                "strides": s.strides, "bytes_len": s.bytes_len()});
            if u == X {
                o["input_hex"] = serde_json::json!(hex::encode(s.encode(&x)));
            }
            tensors.insert(u.to_string(), o);
        }
        out.push(
            serde_json::json!({"case": format!("{c:?}"), "grid": geom.grid,
            "block_m": bm, "block_n": bn, "spec": spec == 1, "dtype": dtn(c.dt),
            "args": named, "tensors": tensors, "reference": want, "tolerance": tol}),
        );
    }
    std::fs::write(&path, serde_json::to_string(&out).unwrap()).unwrap();
}
