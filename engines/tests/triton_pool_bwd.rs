//! The pool_bwd Triton family (`hipkernel.resample_bwd.dispatch.v1`) without a device: launch
//! values round trip with the geometry and kernel arguments, exact restore refusals, every
//! GPU-test case built on a fake sm_90 and gfx942 device with the committed archives (element
//! order per layout), the graphs refused by name, save → restore on an engine without kernels
//! → the identical launch, the pack's launches of the GPU-test cases through `pool_bwd.py` under
//! Triton's interpreter against the CPU reference engine, and `interpret_pool_bwd.py` (the
//! kernel against float64 numpy).

#[path = "ingestor_support.rs"]
mod support;

mod pool_bwd_support;

use hipdnn_backend::engine::{Engine, EngineConfig};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::pool_bwd::{
    PoolBwdHandler, PoolBwdInputs, RESAMPLE_BWD_V1, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{DispatchHandler, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{DataType as DT, ResampleMode};
use pool_bwd_support::{DX, DY, IDX, PoolBwdCase, gpu_cases};
use std::sync::Arc;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

/// Max pooling 3×3 stride 2 pad 1 of an NHWC f16 (2, 64, 112, 112) dx with an INT64 index.
fn inputs() -> PoolBwdInputs {
    let (c, h, w, oh, ow) = (64, 112, 112, 56, 56);
    PoolBwdInputs {
        uids: [DX, DY],
        index_uid: Some(IDX),
        dtype: 2,
        op: 8,
        cl: true,
        shape: [2, c, 1, h, w, 1, oh, ow],
        window: [1, 3, 3, 1, 2, 2, 0, 1, 1],
        strides: [
            h * w * c,
            1,
            0,
            w * c,
            c,
            oh * ow * c,
            1,
            0,
            ow * c,
            c,
            oh * ow * c,
            1,
            0,
            ow * c,
            c,
        ],
        config: TritonConfig::parse("pool_bwd_f16_generic_1024x1x1_g1_w4_s1_sh0_ws32").unwrap(),
    }
}

#[test]
fn pool_bwd_launch_values_round_trip_and_give_the_launch() {
    let l = inputs().to_launch().unwrap();
    assert_eq!(l.dispatch, RESAMPLE_BWD_V1);
    assert_eq!(
        PoolBwdHandler
            .restore_launch(RESAMPLE_BWD_V1, &l.launch_values)
            .unwrap(),
        l
    );
    assert_eq!(l.geometry.grid, [2 * 64 * 112 * 112 / 1024, 1, 1]);
    assert_eq!(l.geometry.block, [128, 1, 1]);
    assert_eq!(l.workspace_bytes, 0);
    assert_eq!(l.pointer_uids, vec![DX, DY, IDX]);
    let sig = PoolBwdHandler.launch_signature_for(&l.launch_values);
    assert_eq!(sig, signature());
    // Three pointers, 17 shape/window values, 15 strides, cl, op, two scratch pointers.
    assert_eq!(sig.len(), 3 + 17 + 15 + 2 + 2);
    assert_eq!(l.scalar_args.len(), 17 + 15 + 2);
    assert_eq!(l.scalar_args[17 + 15], KernelArgValue::I32(1), "cl");
    assert_eq!(l.scalar_args[17 + 15 + 1], KernelArgValue::I32(8), "op");
    // Average pooling: no index value, a null index pointer.
    let mut a = inputs();
    a.index_uid = None;
    a.op = 3;
    a.strides[10..].fill(0);
    let l = a.to_launch().unwrap();
    assert!(!l.launch_values.contains_key("index.uid"));
    assert_eq!(l.pointer_uids, vec![DX, DY]);
    assert_eq!(
        PoolBwdHandler
            .restore_launch(RESAMPLE_BWD_V1, &l.launch_values)
            .unwrap(),
        l
    );
}

#[test]
fn pool_bwd_launch_value_refusals_are_exact() {
    let l = inputs().to_launch().unwrap();
    let with = |k: &str, v: Option<i64>| {
        let mut x = l.launch_values.clone();
        match v {
            Some(v) => x.insert(k.to_string(), LaunchValue::Int(v)),
            None => x.remove(k),
        };
        err(PoolBwdHandler.restore_launch(RESAMPLE_BWD_V1, &x))
    };
    let d = RESAMPLE_BWD_V1;
    assert_eq!(
        with("op", Some(1)),
        format!(
            "{LOAD}launch value 'op' of dispatch '{d}' must be a mode 0, 2 or 3 with bit 8 (INT64 index) only for mode 0; the plan holds 1"
        )
    );
    assert_eq!(
        with("op", Some(10)),
        format!(
            "{LOAD}launch value 'op' of dispatch '{d}' must be a mode 0, 2 or 3 with bit 8 (INT64 index) only for mode 0; the plan holds 10"
        )
    );
    assert_eq!(
        with("index.uid", None),
        format!(
            "{LOAD}launch value 'index.uid' of dispatch '{d}' must be present exactly when the mode is 0; op is 8"
        )
    );
    assert_eq!(
        with("batch", Some(1 << 20)),
        format!(
            "{LOAD}launch values of dispatch '{d}' give 841813590016 dx elements; the contract takes at most 2147483647"
        )
    );
}

fn og(c: &PoolBwdCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

/// The kernel a fake `arch` engine's build gives `c`, its saved plan, and its `cl` value.
fn chosen(arch: &str, c: &PoolBwdCase) -> (String, Vec<u8>, i64) {
    let (e, _) = support::fake_gpu_engine(arch);
    let cfg = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    };
    let ctx = e
        .create_execution_context(&cfg, &og(c))
        .unwrap_or_else(|x| panic!("{arch} {c:?}: {}", x.message));
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&saved).unwrap();
    let name = e
        .kernels()
        .iter()
        .find(|k| *k.id.as_bytes() == p.kernel_descriptor_id)
        .unwrap()
        .name
        .clone();
    let cl = match p.launch_values.get("cl") {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("cl: {v:?}"),
    };
    (name, saved, cl)
}

/// Every GPU-test case builds on the fake sm_90 and gfx942 engines as a pool_bwd plan (the
/// element order channels-last exactly for the channels-last layout) and runs on the CPU
/// reference engine, so the one GPU run meets no graph error.
#[test]
fn every_gpu_pool_bwd_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let cases = gpu_cases();
    assert_eq!(cases.len(), 17);
    for (i, c) in cases.iter().enumerate() {
        for arch in ["sm_90", "gfx942"] {
            let (name, _, cl) = chosen(arch, c);
            let dt = match c.dt {
                DT::FLOAT => "f32",
                DT::HALF => "f16",
                _ => "bf16",
            };
            assert!(
                name.starts_with(&format!("pool_bwd_{dt}_generic_1024x1x1")),
                "case {i} {arch}: {name}"
            );
            assert_eq!(cl, i64::from(c.layout == 1), "case {i}: {c:?}");
        }
        let out = run_graph(c.graph(), &c.inputs(i as u64), &[DX])
            .unwrap_or_else(|e| panic!("case {i}: {c:?}: {}", e.message));
        assert!(out[0].iter().all(|v| v.is_finite()), "case {i}");
    }
}

#[test]
fn a_built_plan_launches_once_and_restores_without_kernels() {
    let c = &gpu_cases()[1];
    let (e, dev) = support::fake_gpu_engine("sm_90");
    let cfg = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    };
    let ctx = e.create_execution_context(&cfg, &og(c)).unwrap();
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let t = [(DX, 1usize << 24), (DY, 1 << 24)];
    support::fake_execute(ctx.as_ref(), &t).unwrap();
    let launches = dev.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 1);
    let n: u32 = 2 * 5 * 13 * 11;
    assert_eq!(launches[0].0.grid, [n.div_ceil(1024), 1, 1]);
    let dev2 = support::FakeDevice::new("sm_90", 0);
    let e2 = IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        vec![],
        Arc::new(FixedDevice(dev2.clone())),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    let restored = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&saved)
        .unwrap();
    support::fake_execute(restored.as_ref(), &t).unwrap();
    assert_eq!(*dev2.launches.lock().unwrap(), launches);
}

/// The refusal of the sm_90 f32 pool_bwd entry for `c`.
fn refusal(c: &PoolBwdCase) -> String {
    let (e, _) = support::fake_gpu_engine("sm_90");
    let k = e
        .kernels()
        .iter()
        .find(|k| k.name.starts_with("pool_bwd_f32_"))
        .unwrap()
        .clone();
    err(PoolBwdInputs::for_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_by_name() {
    let base = PoolBwdCase::new(&[1, 2, 6, 6], &[2, 2], &[2, 2], &[0, 0], &[0, 0]);
    let mut c = base.clone();
    c.idx_dt = DT::INT8;
    assert_eq!(
        refusal(&c),
        "the pool_bwd pack needs an INT32 or INT64 index, not INT8"
    );
    let mut c = base.clone();
    c.window = vec![2, 2, 2];
    assert_eq!(
        refusal(&c),
        "the pool_bwd pack needs window with 2 entries (one per spatial dim), each at least 1; the node has [2, 2, 2]"
    );
    let mut c = base.clone();
    c.mode = ResampleMode::AVGPOOL_EXCLUDE_PADDING;
    let mut b = c.graph();
    b.tensor(hipdnn_engines::reference::testing::TensorSpec::new(
        IDX,
        "index",
        DT::INT32,
        &c.yd(),
    ));
    let g = OperationGraph::from_bytes(&{
        let mut b2 = hipdnn_engines::reference::testing::GraphBuilder::new("pool_bwd");
        for u in [DY, DX] {
            b2.tensor(b.spec(u).clone());
        }
        b2.tensor(b.spec(IDX).clone());
        b2.resample_bwd("bwd", DY, Some(IDX), DX, &c.spec());
        b2.build()
    })
    .unwrap();
    let (e, _) = support::fake_gpu_engine("sm_90");
    let k = e
        .kernels()
        .iter()
        .find(|k| k.name.starts_with("pool_bwd_f32_"))
        .unwrap()
        .clone();
    assert_eq!(
        err(PoolBwdInputs::for_kernel(&k, &g)),
        "the pool_bwd pack reads an index for MAXPOOL only; this node has an index tensor with AVGPOOL_EXCLUDE_PADDING"
    );
    let mut c = base.clone();
    c.mode = ResampleMode::AVGPOOL_INCLUDE_PADDING;
    c.dt = DT::HALF;
    assert!(
        refusal(&c).ends_with("is built for f32, the graph is HALF"),
        "{}",
        refusal(&c)
    );
}

/// Writes the launches of the GPU-test cases (but the ResNet stem pool, too slow for the
/// interpreter) as the fake sm_90 device records them, with the input bytes and the CPU
/// reference engine's dx, as JSON to `path` (`launch_replay.py`'s format).
fn dump_launches(path: &std::path::Path) {
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let mut out = Vec::new();
    let cases = gpu_cases();
    for (i, c) in cases.iter().enumerate().take(cases.len() - 1) {
        let (e, dev) = support::fake_gpu_engine("sm_90");
        let cfg = EngineConfig {
            engine_id: e.id(),
            knob_choices: vec![],
        };
        let ctx = e.create_execution_context(&cfg, &og(c)).unwrap();
        let b = c.graph();
        let ins = c.inputs(30 + i as u64);
        let mut uids: Vec<i64> = ins.iter().map(|(u, _)| *u).collect();
        uids.push(DX);
        let t: Vec<(i64, usize)> = uids.iter().map(|u| (*u, 1 << 26)).collect();
        support::fake_execute(ctx.as_ref(), &t).unwrap();
        let launches = support::recorded_launches(&dev, &signature());
        let want = run_graph(c.graph(), &ins, &[DX]).unwrap();
        let tensors = support::tensors_json(&b, &uids, &ins);
        out.push(
            serde_json::json!({"case": format!("{c:?}"), "block_m": 1024,
            "dtype": dtn(c.dt), "workspace": 0, "launches": launches, "tensors": tensors,
            "outputs": [DX], "reference": {DX.to_string(): want[0]}}),
        );
    }
    std::fs::write(path, serde_json::to_string(&out).unwrap()).unwrap();
}

/// The GPU-test cases' recorded launches through `pool_bwd.py` under Triton's interpreter
/// against the CPU reference engine's dx. Prints `skipped: …` and passes without the pack
/// venv's numpy and triton.
#[test]
fn the_gpu_cases_launches_match_the_reference_under_the_triton_interpreter() {
    let dir = std::env::temp_dir().join(format!("hipdnn-pool-bwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("launches.json");
    dump_launches(&file);
    support::run_python_check(
        "engines/tests/pool_bwd_support/interpret_launches.py",
        &[file.to_str().unwrap()],
        &format!(
            "{} cases, 0 outputs out of tolerance",
            gpu_cases().len() - 1
        ),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a check by itself: writes the interpreter test's JSON to the file named by
/// `HIPDNN_POOL_BWD_LAUNCHES`, for running `interpret_launches.py` by hand.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_pool_bwd_launches_for_the_interpreter() {
    let path = std::env::var("HIPDNN_POOL_BWD_LAUNCHES")
        .expect("HIPDNN_POOL_BWD_LAUNCHES names the JSON file to write");
    dump_launches(std::path::Path::new(&path));
}

#[test]
fn the_kernel_matches_float64_under_the_triton_interpreter() {
    support::run_interpreter_check("interpret_pool_bwd.py", 11);
}
