//! Issue 37, class 5 without a device: every case of the row matrix (`batch_rows_support`,
//! the one `gpu_batch_rows.rs` runs on a GPU) is served by its Triton family on a fake sm_90
//! and a fake gfx942 device at batch 1 and at every batch of the GPU test, and its plan
//! executes there (the launch is recorded, nothing computed). This keeps the GPU test from
//! passing vacuously: a case the GPU engine refused would fall to the CPU engine there.

#[path = "ingestor_support.rs"]
mod support;

mod batch_rows_support;
mod batchnorm_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{GPU_BATCHES, cases, ingestor_plan};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::ingestor::engine::IngestorEngine;
use std::collections::BTreeSet;
use std::path::PathBuf;
use support::FakeDevice;

#[test]
fn every_row_case_is_served_by_its_family_at_every_batch_on_sm_90_and_gfx942() {
    let mut kernels = BTreeSet::new();
    let mut plans = 0;
    for arch in ["sm_90", "gfx942"] {
        let (e, dev) = support::fake_gpu_engine(arch);
        for case in cases() {
            for n in std::iter::once(1).chain(GPU_BATCHES) {
                let b = (case.build)(n);
                let bound: Vec<(i64, usize)> = case
                    .inputs
                    .iter()
                    .map(|i| i.uid)
                    .chain(case.outputs.iter().copied())
                    .map(|u| (u, b.spec(u).bytes_len()))
                    .collect();
                let og = OperationGraph::from_bytes(&b.build()).unwrap();
                let (ctx, kernel, dispatch) = ingestor_plan(&e, &og, None)
                    .unwrap_or_else(|err| panic!("{arch} {} at batch {n}: {err}", case.label));
                assert_eq!(
                    dispatch, case.dispatch,
                    "{arch} {} at batch {n}: served by {kernel}",
                    case.label
                );
                let before = dev.launches.lock().unwrap().len();
                support::fake_execute(ctx.as_ref(), &bound).unwrap_or_else(|err| {
                    panic!(
                        "{arch} {} at batch {n}: execute: {}",
                        case.label, err.message
                    )
                });
                assert!(
                    dev.launches.lock().unwrap().len() > before,
                    "{arch} {} at batch {n}: no launch",
                    case.label
                );
                kernels.insert(format!("{arch} {kernel}"));
                plans += 1;
            }
        }
    }
    // 30 cases × 5 batches × 2 arches.
    assert_eq!(plans, 300);
    println!("{} distinct entries serve the matrix:", kernels.len());
    for k in &kernels {
        println!("  {k}");
    }
}

/// The python (with numpy) and `PYTHONPATH` that import triton: the pack venv's site-packages
/// (`TRITON_VENV`, else `target/triton-venv`); `None` (after printing `skipped: …`) when that
/// python cannot import numpy and triton.
fn interpreter() -> Option<std::ffi::OsString> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = std::env::var_os("TRITON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/triton-venv"));
    let site = std::fs::read_dir(venv.join("lib"))
        .ok()
        .and_then(|mut d| d.find_map(|e| e.ok()))
        .map(|e| e.path().join("site-packages"))
        .filter(|s| s.is_dir());
    let Some(site) = site else {
        eprintln!("skipped: no Triton venv at {}", venv.display());
        return None;
    };
    let ok = std::process::Command::new("python3")
        .args(["-c", "import numpy, triton"])
        .env("PYTHONPATH", &site)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipped: python3 cannot import numpy and triton from {}",
            site.display()
        );
        return None;
    }
    Some(site.into_os_string())
}

/// The launch the GPU engine makes for `build()` on the fake device (forcing kernel `force`
/// where it serves), as the JSON entry `interpret_launches.py` of the family reads: kernel
/// arguments by parameter name (pointers as tensor UIDs), grid, entry, layouts, input bytes
/// and the CPU reference engine's outputs. Also returns the kernel's name.
fn launch_entry(
    e: &IngestorEngine,
    dev: &FakeDevice,
    build: &dyn Fn() -> hipdnn_engines::reference::testing::GraphBuilder,
    ins: &[(i64, Vec<f32>)],
    outs: &[i64],
    force: Option<&str>,
    reduce: bool,
) -> (serde_json::Value, String) {
    use hipdnn_backend::engine::Engine;
    use hipdnn_engines::ingestor::device::KernelArgValue;
    use hipdnn_engines::ingestor::launch_values::LaunchValue;
    use hipdnn_engines::ingestor::packs::{norm_fwd, reduce_fwd};
    use hipdnn_engines::ingestor::payload::decode_payload;
    use hipdnn_engines::reference::testing::run_graph;
    use hipdnn_schema::graph::DataType as DT;
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let b = build();
    let uids: Vec<i64> = ins
        .iter()
        .map(|(u, _)| *u)
        .chain(outs.iter().copied())
        .collect();
    let og = OperationGraph::from_bytes(&build().build()).unwrap();
    let (ctx, kernel, _) = ingestor_plan(e, &og, force).unwrap();
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let lv = decode_payload(&saved).unwrap().launch_values;
    let int = |k: &str| match lv.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let spec = int("spec") == 1;
    let bound: Vec<(i64, usize)> = uids.iter().map(|u| (*u, b.spec(*u).bytes_len())).collect();
    support::fake_execute(ctx.as_ref(), &bound).unwrap();
    let (geom, args) = dev.launches.lock().unwrap().last().unwrap().clone();
    let sig = if reduce {
        reduce_fwd::signature(spec)
    } else {
        norm_fwd::signature(spec)
    };
    let mut named = serde_json::Map::new();
    for (a, v) in sig.iter().zip(&args) {
        let v = match v {
            KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
            KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
            KernelArgValue::F32(v) => serde_json::json!({ "f32": f64::from(*v) }),
            o => panic!("{o:?}"),
        };
        named.insert(a.name.clone(), v);
    }
    let want = run_graph(build(), ins, outs).unwrap();
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
    let dt = b.spec(ins[0].0).data_type;
    let mut entry = serde_json::json!({"case": kernel, "grid": geom.grid,
        "block_m": int("block_m"), "block_n": int("block_n"), "spec": spec,
        "dtype": dtn(dt), "args": named, "tensors": tensors, "outputs": outs});
    if reduce {
        // The script's own check against the reference: 1e-5·(1 + |r|) for f32 y, one
        // 16-bit rounding otherwise (the rows are compared bitwise by the caller).
        let tol = if b.spec(outs[0]).data_type == DT::FLOAT {
            1e-5
        } else {
            2e-2
        };
        let t: Vec<f32> = want[0].iter().map(|r| tol * (1.0 + r.abs())).collect();
        entry["reference"] = serde_json::json!(want[0]);
        entry["tolerance"] = serde_json::json!(t);
    } else {
        let r: serde_json::Map<String, serde_json::Value> = outs
            .iter()
            .zip(&want)
            .map(|(u, v)| (u.to_string(), serde_json::json!(v)))
            .collect();
        entry["reference"] = serde_json::Value::Object(r);
    }
    (entry, kernel)
}

/// The norm_fwd and reduce_fwd (softmax, sum) launches of the row cases run under Triton's
/// interpreter (`engines/tests/{norm,reduce}_support/interpret_launches.py`, the same kernels
/// the GPU runs, executed by numpy on the host) at batch 3 and 5 and, for each row, at batch
/// 1 with the same entry; every row's outputs must be bitwise equal, and every run within
/// tolerance of the CPU reference engine (the scripts' own check). Skips with a printed reason
/// when python3 cannot import numpy and triton from the pack venv (`TRITON_VENV`, else
/// `target/triton-venv`; `xtask`'s pack step creates it).
#[test]
fn norm_and_softmax_rows_under_the_triton_interpreter_match_batch_one_bitwise() {
    use batch_rows_support::{batch_inputs, norm, reduce};
    use hipdnn_schema::graph::{DataType as DT, ReductionMode as RM};
    let Some(site) = interpreter() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (e, dev) = support::fake_gpu_engine("sm_90");
    let families = [
        (
            "norm_support/interpret_launches.py",
            false,
            vec![norm(false, DT::FLOAT, 37), norm(true, DT::HALF, 64)],
        ),
        (
            "reduce_support/interpret_launches.py",
            true,
            vec![
                reduce(reduce_support::Kind::Softmax, DT::FLOAT, 100),
                reduce(reduce_support::Kind::Reduce(RM::ADD), DT::FLOAT, 37),
                reduce(reduce_support::Kind::LogSoftmax, DT::HALF, 33),
            ],
        ),
    ];
    let mut rows = 0;
    for (script, is_reduce, cases) in families {
        // (case, n, index of the batch-n entry, indices of the row entries)
        let mut plan = Vec::new();
        let mut entries = Vec::new();
        for (ci, case) in cases.iter().enumerate() {
            for n in [3i64, 5] {
                let ins = batch_inputs(case, n, ci as u64);
                let (full, kernel) = launch_entry(
                    &e,
                    &dev,
                    &|| (case.build)(n),
                    &ins,
                    &case.outputs,
                    None,
                    is_reduce,
                );
                let at = entries.len();
                entries.push(full);
                let mut row_at = Vec::new();
                for r in 0..n as usize {
                    let row_ins: Vec<(i64, Vec<f32>)> = case
                        .inputs
                        .iter()
                        .zip(&ins)
                        .map(|(i, (u, v))| {
                            let per = v.len() / n as usize;
                            let v = if i.batched {
                                v[r * per..(r + 1) * per].to_vec()
                            } else {
                                v.clone()
                            };
                            (*u, v)
                        })
                        .collect();
                    let (one, k1) = launch_entry(
                        &e,
                        &dev,
                        &|| (case.build)(1),
                        &row_ins,
                        &case.outputs,
                        Some(&kernel),
                        is_reduce,
                    );
                    assert_eq!(
                        k1, kernel,
                        "{} row {r}: batch 1 ran another entry",
                        case.label
                    );
                    row_at.push(entries.len());
                    entries.push(one);
                }
                plan.push((ci, n, at, row_at));
            }
        }
        let launches = dir.path().join("launches.json");
        let outputs = dir.path().join("outputs.json");
        std::fs::write(&launches, serde_json::to_string(&entries).unwrap()).unwrap();
        let o = std::process::Command::new("python3")
            .arg(root.join("tests").join(script))
            .arg(&launches)
            .env("PYTHONPATH", &site)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("HIPDNN_INTERPRET_OUTPUTS", &outputs)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{script}:\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let got: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&outputs).unwrap()).unwrap();
        let values = |entry: usize, uid: i64| -> Vec<u32> {
            got[entry.to_string()][uid.to_string()]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| (v.as_f64().unwrap() as f32).to_bits())
                .collect()
        };
        for (ci, n, at, row_at) in plan {
            let case = &cases[ci];
            for &u in &case.compared {
                let full = values(at, u);
                let per = full.len() / n as usize;
                for (r, &ri) in row_at.iter().enumerate() {
                    assert_eq!(
                        &full[r * per..(r + 1) * per],
                        &values(ri, u)[..],
                        "{} at batch {n}: output uid {u} row {r} differs from its batch-1 run",
                        case.label
                    );
                }
            }
            rows += n as usize;
        }
    }
    // (2 norm + 3 reduce cases) × (3 + 5 rows).
    assert_eq!(rows, 5 * 8);
}
