//! The bn_bwd Triton family (`hipkernel.bn_bwd.dispatch.v1`) without a device: launch values
//! round trip, the static rule's entry and splits per layout on a fake sm_90 device with the
//! committed archive, the two recorded launches (phase 0 then phase 1, one grid) with the
//! workspace, the graphs refused by name (for the CPU reference engine), a restore refusal,
//! and every GPU-test case run through `bn_bwd.py` under Triton's interpreter against the CPU
//! reference engine (NCHW and NHWC, f32/f16/bf16, with and without the fused ReLU backward).

#[path = "ingestor_support.rs"]
mod support;

mod bn_bwd_support;

use bn_bwd_support::{BnBwdCase, DSCALE, DX, DY, R, SCALE};
use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::bn_bwd::{BN_BWD_V1, BnBwdHandler, signature};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{TensorSpec, run_graph};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::DataType as DT;
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";
const WS: u64 = 0x7_0000_0000;

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

fn og(c: &BnBwdCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

fn addr(u: i64) -> u64 {
    0x1000_0000 * u as u64
}

fn binds(c: &BnBwdCase) -> Vec<TensorBinding<'static>> {
    let mut u = c.inputs();
    u.extend(c.outputs());
    u.iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: addr(*uid),
                len: 1 << 26,
            },
        })
        .collect()
}

/// (spec, block_m, block_n, flags, splits) of the plan the engine builds for `c`.
type Chosen = (i64, i64, i64, i64, i64);

fn chosen(e: &IngestorEngine, c: &BnBwdCase) -> Chosen {
    let ctx = e
        .create_execution_context(&cfg(e), &og(c))
        .unwrap_or_else(|err| panic!("{c:?}: {}", err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, BN_BWD_V1);
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let want = ["hipdnn_bn_bwd", "hipdnn_bn_bwd_cl", "hipdnn_bn_bwd_cf"][int("spec") as usize];
    assert_eq!(p.symbol, want, "{c:?}");
    (
        int("spec"),
        int("block_m"),
        int("block_n"),
        int("flags"),
        int("splits"),
    )
}

#[test]
fn the_static_rule_picks_the_variant_by_layout_and_the_tile_by_spatial_size() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let nhwc = |c: BnBwdCase| BnBwdCase {
        channels_last: true,
        ..c
    };
    let relu = |c: BnBwdCase| BnBwdCase { relu: true, ..c };
    let f32s = 4 | 8 | 16 | 32 | 64 | 128 | 256;
    let cases: Vec<(BnBwdCase, Chosen)> = vec![
        // ResNet-like NCHW f32: 14x14 = 196 positions (not a multiple of 16: generic,
        // channels-first path, bit 2) take the 256 tile (pads within 4/3), 8 channels per
        // tile; one split per image.
        (
            BnBwdCase::new(DT::FLOAT, &[8, 64, 14, 14]),
            (0, 256, 8, 2 | f32s, 8),
        ),
        // 16x16 = 256 positions: the nchw variant, the 256 tile.
        (
            BnBwdCase::new(DT::FLOAT, &[2, 32, 16, 16]),
            (2, 256, 8, f32s, 2),
        ),
        // NHWC f16, C a multiple of 16: spec, 16 channels x 128 positions; the batch merged
        // into 1568 positions: 13 pairs on 7 splits of 2 (none empty).
        (
            nhwc(BnBwdCase::new(DT::HALF, &[8, 64, 14, 14])),
            (1, 16, 128, 0, 7),
        ),
        // With the ReLU backward (flags bit 1; r f32 with f32 x).
        (
            relu(nhwc(BnBwdCase::new(DT::FLOAT, &[8, 64, 14, 14]))),
            (1, 16, 128, 1 | 512 | f32s, 7),
        ),
        // Odd C: generic, channels-first path (bit 2) over 35 positions: the 16 tile.
        (
            BnBwdCase::new(DT::BFLOAT16, &[1, 3, 7, 5]),
            (0, 16, 128, 2, 2),
        ),
        // Odd C in NHWC: generic channels-last path.
        (
            nhwc(BnBwdCase::new(DT::HALF, &[2, 5, 3, 3])),
            (0, 16, 128, 0, 1),
        ),
        // 2-D x: one position per channel, the batch merged: channels-last path.
        (BnBwdCase::new(DT::FLOAT, &[4, 17]), (0, 16, 128, f32s, 1)),
    ];
    let got: Vec<Chosen> = cases.iter().map(|(c, _)| chosen(&e, c)).collect();
    let want: Vec<Chosen> = cases.iter().map(|(_, w)| *w).collect();
    assert_eq!(got, want);
}

/// A plan executes as two launches of one kernel on one grid: phase 0 (the partials), then
/// phase 1; the workspace holds 2·splits·C f32 and is passed to both; the restored plan gives
/// the same launches.
#[test]
fn bn_bwd_runs_two_launches_with_the_workspace_and_restores_identically() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let c = BnBwdCase {
        relu: true,
        ..BnBwdCase::new(DT::HALF, &[8, 64, 14, 14])
    };
    let (spec, _, _, _, splits) = chosen(&e, &c);
    let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
    assert_eq!(ctx.workspace_size(), (2 * splits * 64 * 4) as usize);
    let run = |ctx: &dyn hipdnn_backend::engine::ExecutionContext| {
        let n0 = dev.launches.lock().unwrap().len();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::Device {
                addr: WS,
                len: ctx.workspace_size(),
            }),
            tensors: &mut binds(&c),
        })
        .unwrap();
        dev.launches.lock().unwrap()[n0..].to_vec()
    };
    let l = run(ctx.as_ref());
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].0.grid, l[1].0.grid);
    assert_eq!(l[0].0.grid, [8, splits as u32, 1]);
    let sig = signature(spec);
    let phase = sig.iter().position(|a| a.name == "phase").unwrap();
    assert_eq!(l[0].1[phase], KernelArgValue::I32(0));
    assert_eq!(l[1].1[phase], KernelArgValue::I32(1));
    let ws = sig.iter().position(|a| a.name == "ws_ptr").unwrap();
    let r = sig.iter().position(|a| a.name == "r_ptr").unwrap();
    let dy = sig.iter().position(|a| a.name == "dy_ptr").unwrap();
    for (_, args) in &l {
        assert_eq!(args.len(), sig.len());
        assert_eq!(args[ws], KernelArgValue::Pointer(WS));
        assert_eq!(args[r], KernelArgValue::Pointer(addr(R)));
        assert_eq!(
            args[dy],
            KernelArgValue::Pointer(addr(bn_bwd_support::DY_IN))
        );
    }
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let e2 = engine(dev.clone(), Vec::new());
    let restored = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&saved)
        .unwrap();
    assert_eq!(run(restored.as_ref()), l);
    // No workspace bound: refused by name.
    let m = err(ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut binds(&c),
    }));
    assert!(m.contains("workspace"), "{m}");
}

/// `c`'s graph with `t` in place of the tensor of its UID.
fn swap(c: &BnBwdCase, t: TensorSpec) -> OperationGraph {
    let c = BnBwdCase {
        replace: vec![t],
        ..c.clone()
    };
    og(&c)
}

/// What the pack leaves to the CPU reference engine, refused by name.
#[test]
fn bn_bwd_refuses_by_name_what_the_cpu_engine_serves() {
    let prep = |c: &BnBwdCase| err(BnBwdHandler.prepare(&og(c)));
    let m = prep(&BnBwdCase {
        peer: true,
        ..BnBwdCase::new(DT::FLOAT, &[2, 3, 4, 4])
    });
    assert!(m.contains("does not serve peer statistics"), "{m}");
    // A scale of one value for every channel.
    let c = BnBwdCase::new(DT::FLOAT, &[2, 3, 4, 4]);
    let m = err(BnBwdHandler.prepare(&swap(
        &c,
        TensorSpec::new(SCALE, "scale", DT::FLOAT, &[1, 1, 1, 1]),
    )));
    assert!(
        m.contains("needs scale with one value per channel") && m.contains("holds C = 3)"),
        "{m}"
    );
    // The ReLU backward over a stored intermediate.
    let c = BnBwdCase {
        relu: true,
        ..BnBwdCase::new(DT::FLOAT, &[2, 3, 4, 4])
    };
    let m = err(BnBwdHandler.prepare(&swap(
        &c,
        TensorSpec::new(DY, "dy", DT::FLOAT, &[2, 3, 4, 4]),
    )));
    assert!(m.contains("only over a virtual dy"), "{m}");
    // dx of other dims than x.
    let c = BnBwdCase::new(DT::FLOAT, &[2, 3, 4, 4]);
    let m = err(BnBwdHandler.prepare(&swap(
        &c,
        TensorSpec::new(DX, "dx", DT::FLOAT, &[2, 3, 4, 5]),
    )));
    assert!(m.contains("the bn_bwd pack: dx dims"), "{m}");
    // dscale of another count.
    let m = err(BnBwdHandler.prepare(&swap(
        &c,
        TensorSpec::new(DSCALE, "dscale", DT::FLOAT, &[1, 4, 1, 1]),
    )));
    assert!(m.contains("needs dscale with C = 3 values"), "{m}");
}

/// Saved launch values whose `r.uid` disagrees with flags bit 1 are refused on restore.
#[test]
fn bn_bwd_restore_refuses_r_uid_without_the_relu_flag() {
    let c = BnBwdCase::new(DT::FLOAT, &[2, 3, 4, 4]);
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let mut values = decode_payload(&bytes).unwrap().launch_values;
    values.insert("r.uid".to_string(), LaunchValue::Int(R));
    let m = err(BnBwdHandler.restore_launch(BN_BWD_V1, &values));
    assert!(
        m.starts_with(LOAD)
            && m.contains("launch value 'r.uid' of dispatch 'hipkernel.bn_bwd.dispatch.v1' must be present exactly when 'flags' bit 1 is set"),
        "{m}"
    );
}

/// Every case of the GPU test's shape matrix builds on the fake sm_90 engine as a bn_bwd
/// plan and runs on the CPU reference engine with outputs of the expected sizes, so the one
/// GPU run meets no graph error.
#[test]
fn every_gpu_bn_bwd_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = bn_bwd_support::gpu_cases();
    assert_eq!(cases.len(), 96);
    for (i, c) in cases.iter().enumerate() {
        let (spec, _, _, flags, _) = chosen(&e, c);
        let aligned = c.c() % 16 == 0 && c.dims.len() > 2;
        if c.channels_last && aligned {
            assert_eq!(spec, 1, "case {i}: {c:?}");
        }
        assert_eq!(flags & 1 != 0, c.relu, "case {i}");
        let out = run_graph(c.graph(), &c.input_values(i as u64), &c.outputs())
            .unwrap_or_else(|err| panic!("case {i}: {c:?}: {}", err.message));
        let n = c.count(bn_bwd_support::X);
        assert_eq!(
            out.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![n, c.c(), c.c()],
            "case {i}"
        );
        assert!(out.iter().flatten().all(|v| v.is_finite()), "case {i}");
    }
}

/// Writes the launches of every GPU-test case as the fake sm_90 device records them (both
/// launches by parameter name, grids, entry), the input bytes in each tensor's layout, and the
/// CPU reference engine's outputs, as JSON to `path`.
fn dump_launches(path: &std::path::Path) {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let mut out = Vec::new();
    for (i, c) in bn_bwd_support::gpu_cases().iter().enumerate() {
        let b = c.graph();
        let (spec, bm, bn, _, _) = chosen(&e, c);
        let ctx = e.create_execution_context(&cfg(&e), &og(c)).unwrap();
        let ins = c.input_values(i as u64);
        let n0 = dev.launches.lock().unwrap().len();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::Device {
                addr: WS,
                len: ctx.workspace_size(),
            }),
            tensors: &mut binds(c),
        })
        .unwrap();
        let sig = signature(spec);
        let launches: Vec<serde_json::Value> = dev.launches.lock().unwrap()[n0..]
            .iter()
            .map(|(geom, args)| {
                let mut named = serde_json::Map::new();
                for (a, v) in sig.iter().zip(args) {
                    let v = match v {
                        KernelArgValue::Pointer(WS) => serde_json::json!({ "ws": true }),
                        KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
                        KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
                        o => panic!("{o:?}"),
                    };
                    named.insert(a.name.clone(), v);
                }
                serde_json::json!({"grid": geom.grid, "args": named})
            })
            .collect();
        let want = run_graph(c.graph(), &ins, &c.outputs()).unwrap();
        let mut uids = c.inputs();
        uids.extend(c.outputs());
        let mut tensors = serde_json::Map::new();
        for u in &uids {
            let s = b.spec(*u);
            let mut o = serde_json::json!({"dt": dtn(s.data_type), "dims": s.dims,
                "strides": s.strides, "bytes_len": s.bytes_len()});
            if let Some((_, v)) = ins.iter().find(|(x, _)| x == u) {
                o["input_hex"] = serde_json::json!(hex::encode(s.encode(v)));
            }
            tensors.insert(u.to_string(), o);
        }
        let reference: serde_json::Map<String, serde_json::Value> = c
            .outputs()
            .iter()
            .zip(&want)
            .map(|(u, v)| (u.to_string(), serde_json::json!(v)))
            .collect();
        out.push(
            serde_json::json!({"case": format!("{c:?}"), "variant": spec,
            "block_m": bm, "block_n": bn, "dtype": dtn(c.dt),
            "workspace": ctx.workspace_size(), "launches": launches, "tensors": tensors,
            "outputs": c.outputs(), "reference": reference}),
        );
    }
    std::fs::write(path, serde_json::to_string(&out).unwrap()).unwrap();
}

/// Runs every GPU-test case's recorded launches through `bn_bwd.py` under Triton's
/// interpreter (`engines/tests/bn_bwd_support/interpret_launches.py`) against the CPU
/// reference engine's outputs ([`support::run_python_check`]: the system `python3` with the
/// pack venv's site-packages ahead of any `PYTHONPATH`). Prints
/// `skipped: …` and passes when that python cannot import numpy and triton; fails when an
/// output is out of tolerance.
#[test]
fn every_gpu_bn_bwd_case_matches_the_reference_under_the_triton_interpreter() {
    let dir = std::env::temp_dir().join(format!("hipdnn-bn-bwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("launches.json");
    dump_launches(&file);
    support::run_python_check(
        "engines/tests/bn_bwd_support/interpret_launches.py",
        &[file.to_str().unwrap()],
        "96 cases, 0 outputs out of tolerance",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a check by itself: writes the interpreter test's JSON to the file named by
/// `HIPDNN_BN_BWD_LAUNCHES`, for running `interpret_launches.py` by hand.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_bn_bwd_launches_for_the_interpreter() {
    let path = std::env::var("HIPDNN_BN_BWD_LAUNCHES")
        .expect("HIPDNN_BN_BWD_LAUNCHES names the JSON file to write");
    dump_launches(std::path::Path::new(&path));
}
