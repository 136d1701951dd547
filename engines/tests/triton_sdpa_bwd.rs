//! The sdpa_bwd Triton family (`hipkernel.sdpa_bwd.dispatch.v1`) without a device: launch
//! values round trip, both launches (phase 0: delta and dq on (cdiv(sq, bn), b·h); phase 1:
//! dk and dv on (cdiv(skv, bn), b·h/rep)) with the workspace, exact refusal texts of restore
//! and execute, the graph matcher's shape, strides, band and scale, the static rule's entry
//! per graph on a fake sm_90 and gfx942 device with the committed archives, save → restore on
//! an engine without kernels → the identical launches, and the graphs refused by name. The
//! kernel's arithmetic is checked under Triton's interpreter by
//! `engines/kernels/triton/interpret_sdpa_bwd.py` (run here when the pack venv exists).

#[path = "ingestor_support.rs"]
mod support;

mod sdpa_bwd_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::sdpa_bwd::{
    SDPA_BWD_V1, SdpaBwdHandler, SdpaBwdInputs, param_names, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{DispatchHandler, KpackCodeObjectReader};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::DataType as DT;
use sdpa_bwd_support::*;
use std::sync::Arc;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";
const WS: u64 = 0x7_0000_0000;

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

fn addr(u: i64) -> u64 {
    0x1000_0000 * u as u64
}

/// f16, b 2, h 8 over 2 key/value heads, s_q 300, s_kv 200, d 64, packed, causal, a 32x128
/// tile.
fn inputs(spec: bool) -> SdpaBwdInputs {
    let mut config = TritonConfig::parse("sdpa_bwd_f16_spec_32x128x64_g1_w4_s2_sh0_ws32").unwrap();
    config.spec = spec;
    let (h, hk, sq, skv, d) = (8, 2, 300, 200, 64);
    let q = [h * sq * d, sq * d, d, 1];
    let k = [hk * skv * d, skv * d, d, 1];
    let mut strides = [0i64; 39];
    for (t, s) in [q, k, k, q, q, q, k, k].iter().enumerate() {
        strides[t * 4..t * 4 + 4].copy_from_slice(s);
    }
    strides[32..35].copy_from_slice(&[h * sq, sq, 1]);
    SdpaBwdInputs {
        uids: [Q, K, V, O, DO, ST, DQ, DK, DV],
        scale_uid: None,
        mask_uid: None,
        dtype: 2,
        shape: [2, h, h / hk, sq, skv, d],
        strides,
        misc: [0.125f32.to_bits() as i32 as i64, 0, 8, 0, 0, 0],
        config,
    }
}

#[test]
fn sdpa_bwd_launch_values_round_trip_and_give_both_launches() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, SDPA_BWD_V1);
        let back = SdpaBwdHandler
            .restore_launch(SDPA_BWD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(
            l.geometry.grid,
            [2, 4, 1],
            "phase 1: cdiv(200, 128) key tiles, b·h/rep"
        );
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(l.workspace_bytes, 2 * 8 * 300 * 4, "delta, f32 [B, H, S_q]");
        assert_eq!(l.pointer_uids, vec![Q, K, V, O, DO, ST, DQ, DK, DV]);
        let sig = SdpaBwdHandler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(spec));
        let names = param_names(spec);
        assert_eq!(
            names.len(),
            if spec {
                12 + 5 + 31 + 7 + 2
            } else {
                12 + 5 + 39 + 7 + 2
            }
        );
        assert_eq!((sig[11].name.as_str(), sig[11].offset), ("ws_ptr", 88));
        let t: Vec<TensorBinding<'_>> = l
            .pointer_uids
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: addr(*u),
                    len: 1 << 24,
                },
            })
            .collect();
        let args = SdpaBwdHandler
            .kernel_args_with_workspace(&l, &t, WS)
            .unwrap();
        assert_eq!(args.len(), sig.len());
        let p = |u: i64| KernelArgValue::Pointer(addr(u));
        assert_eq!(
            &args[..12],
            &[
                p(Q),
                p(K),
                p(V),
                p(O),
                p(DO),
                p(ST),
                p(DQ),
                p(DK),
                p(DV),
                KernelArgValue::Pointer(0),
                KernelArgValue::Pointer(0),
                KernelArgValue::Pointer(WS)
            ],
            "the scale and mask pointers are null without those tensors"
        );
        let int = |n: &str| args[names.iter().position(|x| *x == n).unwrap()];
        assert_eq!(int("H"), KernelArgValue::I32(8));
        assert_eq!(int("REP"), KernelArgValue::I32(4));
        assert_eq!(int("SQ"), KernelArgValue::I32(300));
        assert_eq!(int("SKV"), KernelArgValue::I32(200));
        assert_eq!(int("sdvs"), KernelArgValue::I32(64));
        assert_eq!(int("sts"), KernelArgValue::I32(1));
        assert_eq!(int("flags"), KernelArgValue::I32(8));
        assert_eq!(int("phase"), KernelArgValue::I32(1));
        // Phase 0 first: the same arguments with phase 0 on (cdiv(300, 128), b·h).
        let pro = SdpaBwdHandler.prologue_launches(&l, &args);
        assert_eq!(pro.len(), 1);
        assert_eq!(pro[0].0.grid, [3, 16, 1]);
        assert_eq!(pro[0].0.block, [128, 1, 1]);
        let mut want = args.clone();
        let phase = names.iter().position(|x| *x == "phase").unwrap();
        want[phase] = KernelArgValue::I32(0);
        assert_eq!(pro[0].1, want);
        for ws in [0, WS + 2] {
            assert_eq!(
                err(SdpaBwdHandler.kernel_args_with_workspace(&l, &t, ws)),
                format!(
                    "the workspace is at {ws:#x}; this plan runs sdpa_bwd, whose delta rows need a 4-byte aligned device workspace"
                )
            );
        }
    }
    // A device scale tensor: flags bit 0, its pointer passed.
    let mut i = inputs(false);
    i.scale_uid = Some(SCALE);
    i.misc[0] = 0;
    i.misc[2] |= 1;
    i.mask_uid = Some(MASK);
    i.misc[1] = 3;
    i.strides[35..].copy_from_slice(&[0, 0, 200, 1]);
    let l = i.to_launch().unwrap();
    assert_eq!(
        SdpaBwdHandler
            .restore_launch(SDPA_BWD_V1, &l.launch_values)
            .unwrap(),
        l
    );
    assert_eq!(&l.pointer_uids[9..], &[SCALE, MASK]);
}

#[test]
fn sdpa_bwd_launch_value_refusals_are_exact() {
    let l = inputs(true).to_launch().unwrap();
    let restore = |edit: &dyn Fn(&mut hipdnn_engines::ingestor::launch_values::LaunchValues)| {
        let mut v = l.launch_values.clone();
        edit(&mut v);
        err(SdpaBwdHandler.restore_launch(SDPA_BWD_V1, &v))
    };
    let set = |k: &'static str, x: i64| {
        move |v: &mut hipdnn_engines::ingestor::launch_values::LaunchValues| {
            v.insert(k.to_string(), LaunchValue::Int(x));
        }
    };
    assert_eq!(
        restore(&set("rep", 3)),
        format!(
            "{LOAD}launch values of dispatch '{SDPA_BWD_V1}': 'rep' must divide 'h' and 'd' must not exceed 'block_k'"
        )
    );
    assert_eq!(
        restore(&set("sqd", 2)),
        format!(
            "{LOAD}launch values of dispatch '{SDPA_BWD_V1}' name the spec variant, whose head-dim strides must be 1"
        )
    );
    assert_eq!(
        restore(&set("mask_kind", 2)),
        format!(
            "{LOAD}launch values of dispatch '{SDPA_BWD_V1}': 'mask.uid' is present iff 'mask_kind' is not 0"
        )
    );
    assert_eq!(
        restore(&set("flags", 9)),
        format!(
            "{LOAD}launch values of dispatch '{SDPA_BWD_V1}': 'scale.uid' is present iff 'flags' bit 0"
        )
    );
    assert_eq!(
        restore(&set("flags", 10)),
        format!(
            "{LOAD}launch values of dispatch '{SDPA_BWD_V1}': 'flags' has bits 1 or 2 set (10)"
        )
    );
    assert_eq!(
        restore(&set("h", 40000)),
        format!(
            "{LOAD}launch values 'b' and 'h' of dispatch '{SDPA_BWD_V1}' give 80000 batch-heads; the grid takes at most 65535"
        )
    );
    assert!(
        restore(&set("flags", 32)).starts_with(LOAD),
        "flags above 25 out of range"
    );
}

fn og(c: &Case) -> OperationGraph {
    OperationGraph::from_bytes(&graph(c).build()).unwrap()
}

fn case(dims: (usize, usize, usize, usize, usize, usize, usize), dt: DT) -> Case {
    let mut c = Case::base(dims);
    c.dt = dt;
    c.scale = Scale::Value(0.125);
    c
}

/// The entry the static rule gives `c` on `e`, and the plan's launches recorded by a fake
/// execute.
fn chosen(arch: &str, c: &Case) -> (String, Vec<u8>) {
    let (e, dev) = support::fake_gpu_engine(arch);
    let cfg = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    };
    let ctx = e
        .create_execution_context(&cfg, &og(c))
        .unwrap_or_else(|x| panic!("{c:?}: {}", x.message));
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
    drop(dev);
    (name, saved)
}

#[test]
fn the_static_rule_picks_the_bucket_the_variant_and_the_tile() {
    let h = DT::HALF;
    for (arch, c, want) in [
        // b·h_kv·cdiv(skv, 128) = 8·16·8 programs: the 128-key tile.
        (
            "sm_90",
            case((8, 16, 16, 1024, 1024, 64, 64), h),
            "sdpa_bwd_f16_spec_32x128x64_g1_w4_s2",
        ),
        (
            "sm_90",
            case((8, 16, 16, 1024, 1024, 128, 128), DT::BFLOAT16),
            "sdpa_bwd_bf16_spec_32x128x128_g1_w8_s2",
        ),
        // 1·2·1 programs: the 64-key tile.
        (
            "sm_90",
            case((1, 2, 2, 17, 17, 32, 32), h),
            "sdpa_bwd_f16_spec_32x64x32_g1_w4_s2",
        ),
        // Head dim 80: bucket 128, spec; 72: generic (not a multiple of 16).
        (
            "sm_90",
            case((1, 2, 2, 17, 17, 80, 80), h),
            "sdpa_bwd_f16_spec_32x64x128_g1_w4_s2",
        ),
        (
            "sm_90",
            case((1, 2, 2, 17, 17, 72, 72), h),
            "sdpa_bwd_f16_generic_32x64x128_g1_w4_s2",
        ),
        (
            "sm_90",
            case((1, 2, 2, 17, 17, 64, 64), DT::FLOAT),
            "sdpa_bwd_f32_generic_16x64x64_g1_w4_s1",
        ),
        (
            "gfx942",
            case((8, 16, 16, 1024, 1024, 64, 64), h),
            "sdpa_bwd_f16_spec_32x64x64_g1_w4_s1",
        ),
    ] {
        let (name, _) = chosen(arch, &c);
        assert!(
            name.starts_with(want),
            "{arch} {c:?}: chose {name}, want {want}"
        );
    }
}

#[test]
fn a_built_plan_launches_phase_0_then_phase_1_and_restores_without_kernels() {
    let mut c = case((2, 4, 2, 77, 45, 64, 64), DT::HALF);
    c.causal_br = true;
    let (e, dev) = support::fake_gpu_engine("sm_90");
    let cfg = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    };
    let ctx = e.create_execution_context(&cfg, &og(&c)).unwrap();
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    assert_eq!(ctx.workspace_size(), 2 * 4 * 77 * 4);
    let t: Vec<(i64, usize)> = [Q, K, V, O, DO, ST, DQ, DK, DV]
        .iter()
        .map(|u| (*u, 1 << 20))
        .collect();
    support::fake_execute(ctx.as_ref(), &t).unwrap();
    let launches = dev.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 2, "phase 0 then phase 1");
    assert_eq!(launches[0].0.grid, [2, 8, 1], "cdiv(77, 64) rows, b·h");
    assert_eq!(launches[1].0.grid, [1, 4, 1], "cdiv(45, 64) keys, b·h_kv");
    let names = param_names(true);
    let phase = names.iter().position(|x| *x == "phase").unwrap();
    let shift = names.iter().position(|x| *x == "shift").unwrap();
    for (k, (_, args)) in launches.iter().enumerate() {
        assert_eq!(args[phase], KernelArgValue::I32(k as i32));
        assert_eq!(
            args[shift],
            KernelArgValue::I32(45 - 77),
            "bottom-right: s_kv − s_q"
        );
        assert_eq!(args[11], KernelArgValue::Pointer(WS));
    }
    // Save → restore on an engine without kernels → the identical launches.
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
    assert_eq!(restored.workspace_size(), 2 * 4 * 77 * 4);
    support::fake_execute(restored.as_ref(), &t).unwrap();
    assert_eq!(*dev2.launches.lock().unwrap(), launches);
}

/// The refusal of the first sm_90 sdpa_bwd entry of `c`'s data type.
fn refusal(c: &Case) -> String {
    let (e, _) = support::fake_gpu_engine("sm_90");
    let dt = match c.dt {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let k = e
        .kernels()
        .iter()
        .find(|k| k.name.starts_with(&format!("sdpa_bwd_{dt}_")))
        .expect("a packed sdpa_bwd entry")
        .clone();
    err(SdpaBwdInputs::for_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_by_name() {
    let mut m = case((1, 2, 2, 17, 17, 32, 32), DT::FLOAT);
    m.mask = Mask::Add(vec![1, 1, 17, 17]);
    m.dbias = true;
    assert_eq!(
        refusal(&m),
        "the sdpa_bwd pack does not serve dbias_tensor_uid (tensor 12); the CPU reference engine does"
    );
    let mut m = case((1, 2, 2, 17, 17, 32, 32), DT::HALF);
    m.mask = Mask::Add(vec![3, 1, 17, 17]);
    assert!(
        refusal(&m).starts_with(
            "the sdpa_bwd pack needs an attn_mask that broadcasts to [B, H, S_q, S_kv] = [1, 2, 17, 17]"
        ),
        "{}",
        refusal(&m)
    );
    // A head dim of another bucket (the first f16 entry is bucket 32).
    let (e, _) = support::fake_gpu_engine("sm_90");
    let k = e
        .kernels()
        .iter()
        .find(|k| k.name.starts_with("sdpa_bwd_f16_spec_32x64x32_"))
        .unwrap()
        .clone();
    let m = err(SdpaBwdInputs::for_kernel(
        &k,
        &og(&case((1, 2, 2, 17, 17, 64, 64), DT::HALF)),
    ));
    assert!(
        m.ends_with("serves head dims in the bucket 32; the graph's head dim 64 takes bucket 64"),
        "{m}"
    );
    let big = case((1, 2, 2, 17, 17, 160, 160), DT::HALF);
    assert!(
        refusal(&big).contains("the sdpa_bwd pack serves head dims 1 to 128; q [1, 2, 17, 160]"),
        "{}",
        refusal(&big)
    );
    let dv = case((1, 2, 2, 17, 17, 32, 64), DT::HALF);
    assert!(
        refusal(&dv)
            .contains("the sdpa_bwd pack needs the value head dim equal to the query head dim"),
        "{}",
        refusal(&dv)
    );
}

#[test]
fn the_kernel_matches_float64_under_the_triton_interpreter() {
    support::run_interpreter_check("interpret_sdpa_bwd.py", 19);
}

/// The f32 and f16 GPU-test cases small enough for the interpreter (b·h·s_q·s_kv·d at most
/// 2^21). Not bf16: Triton 3.9's interpreter multiplies the raw bits of bf16 `tl.dot` operands
/// (a 16×16 probe of `tl.dot` on bf16 inputs was off by 1e10), so the bf16 cases run on the
/// GPU only.
fn small_gpu_cases() -> Vec<Case> {
    gpu_cases()
        .into_iter()
        .filter(|c| {
            let (b, h, _, sq, skv, d, _) = c.dims;
            c.dt != DT::BFLOAT16 && b * h * sq * skv * d <= 1 << 21
        })
        .collect()
}

/// Every case of the GPU test's matrix builds on the fake sm_90 engine as an sdpa_bwd plan
/// (spec exactly for f16/bf16 packed layouts with a head dim that is a multiple of 16) and runs
/// on the CPU reference engine with finite gradients, so the one GPU run meets no graph error.
#[test]
fn every_gpu_sdpa_bwd_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let cases = gpu_cases();
    assert_eq!(cases.len(), 23);
    for (i, c) in cases.iter().enumerate() {
        let (name, _) = chosen("sm_90", c);
        let spec = c.dt != DT::FLOAT && c.layout == Layout::Packed && c.dims.5 % 16 == 0;
        let want = if spec { "_spec_" } else { "_generic_" };
        assert!(
            name.starts_with("sdpa_bwd_") && name.contains(want),
            "case {i}: {c:?}: {name}"
        );
        let out = hipdnn_engines::reference::testing::run_graph(
            graph(c),
            &bound(&sdpa_bwd_support::inputs(c, i as u64)),
            &outs(c),
        )
        .unwrap_or_else(|err| panic!("case {i}: {c:?}: {}", err.message));
        assert!(out.iter().flatten().all(|v| v.is_finite()), "case {i}");
    }
}

/// Writes the launches of the small GPU-test cases as the fake sm_90 device records them (both
/// launches: the Rust pack's kernel arguments by parameter name, grids, entry), the input
/// bytes in each tensor's layout, and the CPU reference engine's gradients, as JSON to `path`.
fn dump_launches(path: &std::path::Path) {
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let mut out = Vec::new();
    for (i, c) in small_gpu_cases().iter().enumerate() {
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
        let p = decode_payload(&saved).unwrap();
        let int = |k: &str| match p.launch_values.get(k) {
            Some(LaunchValue::Int(v)) => *v,
            v => panic!("{k}: {v:?}"),
        };
        let spec = int("spec") == 1;
        let b = graph(c);
        let ins = bound(&sdpa_bwd_support::inputs(c, 70 + i as u64));
        let mut uids: Vec<i64> = ins.iter().map(|(u, _)| *u).collect();
        uids.extend(outs(c));
        let t: Vec<(i64, usize)> = uids.iter().map(|u| (*u, 1 << 26)).collect();
        support::fake_execute(ctx.as_ref(), &t).unwrap();
        let launches = support::recorded_launches(&dev, &signature(spec));
        let want = hipdnn_engines::reference::testing::run_graph(graph(c), &ins, &outs(c)).unwrap();
        let tensors = support::tensors_json(&b, &uids, &ins);
        let reference: serde_json::Map<String, serde_json::Value> = outs(c)
            .iter()
            .zip(&want)
            .map(|(u, v)| (u.to_string(), serde_json::json!(v)))
            .collect();
        out.push(serde_json::json!({"case": format!("{c:?}"), "spec": spec,
            "block_m": int("block_m"), "block_n": int("block_n"), "block_k": int("block_k"),
            "dtype": dtn(c.dt), "workspace": ctx.workspace_size(), "launches": launches,
            "tensors": tensors, "outputs": outs(c), "reference": reference}));
    }
    std::fs::write(path, serde_json::to_string(&out).unwrap()).unwrap();
}

/// Runs the small GPU-test cases' recorded launches through `sdpa_bwd.py` under Triton's
/// interpreter (`engines/tests/sdpa_bwd_support/interpret_launches.py`) against the CPU
/// reference engine's gradients. Prints `skipped: …` and passes when the system `python3`
/// with the pack venv's site-packages cannot import numpy and triton; fails when a gradient
/// is out of tolerance.
#[test]
fn the_gpu_cases_launches_match_the_reference_under_the_triton_interpreter() {
    let dir = std::env::temp_dir().join(format!("hipdnn-sdpa-bwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("launches.json");
    dump_launches(&file);
    let n = small_gpu_cases().len();
    support::run_python_check(
        "engines/tests/sdpa_bwd_support/interpret_launches.py",
        &[file.to_str().unwrap()],
        &format!("{n} cases, 0 outputs out of tolerance"),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a check by itself: writes the interpreter test's JSON to the file named by
/// `HIPDNN_SDPA_BWD_LAUNCHES`, for running `interpret_launches.py` by hand.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_sdpa_bwd_launches_for_the_interpreter() {
    let path = std::env::var("HIPDNN_SDPA_BWD_LAUNCHES")
        .expect("HIPDNN_SDPA_BWD_LAUNCHES names the JSON file to write");
    dump_launches(std::path::Path::new(&path));
}
