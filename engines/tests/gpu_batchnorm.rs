//! GPU test of the batchnorm_fwd Triton family (`hipkernel.batchnorm_fwd.dispatch.v1`):
//! batchnorm inference (inv_variance form and variance + epsilon form) and training forward
//! (batch statistics; with the saved mean / inv_variance; with the running statistics) built
//! through the GPU ingestor engine (`hipdnn_engines::gpu::open`, kernels from
//! `HIPDNN_KERNEL_DIR` or the committed `engines/kernels/packed/<arch>/`), executed on device 0
//! and compared with the CPU reference engine over the shape matrix of
//! `batchnorm_support::gpu_cases` (odd channel counts and spatial sizes, batch 1, 2-D to 5-D,
//! NCHW and NHWC, f32/f16/bf16, f32 per-channel tensors or y behind 16-bit x, padded channel
//! planes, a HALF epsilon). The workspace and every output start as all-ones bytes (NaN), so an
//! element the kernels do not write, or a partial they read before writing, fails. Then plans
//! are saved through the backend's plan descriptor, the kpack archives are moved away, a new
//! handle (a fresh device handle and engine) loads them, executes twice (bit-identical to each
//! other and to the first run) and re-saves byte-identical bytes; before the move, a fresh
//! engine's own build of each graph saves the same bytes.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Tolerances, per element against the CPU reference (`r` = its value, in the output's type):
//! `|d| ≤ tol·(1 + |r|)` with `reference::testing::tolerance(type, true)`: f32 1e-4, f16 1e-2,
//! bf16 2e-2. Inference runs the reference's f32 formula op for op (no FP contraction, IEEE
//! sqrt and division), so its outputs are expected bit-exact; the test prints how many are not.
//! Training statistics are summed in another order than the reference's (shifted per-lane
//! sums, trees, the splits) and the rest follows from them.

mod batchnorm_support;

use batchnorm_support::{BnCase, Form, gpu_cases};
use hipdnn_backend::engine::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, TensorBinding,
};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::handle::BackendHandle;
use hipdnn_backend::plan::ExecutionPlanDescriptor;
use hipdnn_engines::gpu::{self, GPU_ENGINE_NAME, GpuEngines, load_triton_descriptors};
use hipdnn_engines::ingestor::device::{FixedDevice, IngestorDevice};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::batchnorm_fwd::BATCHNORM_FWD_V1;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{HipIngestorDevice, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{run_graph, tolerance};
use hipdnn_engines::registry::pack_registry;
use hipdnn_hip::{DeviceBuffer, Stream};
use hipdnn_schema::graph::DataType as DT;
use std::path::Path;
use std::sync::Arc;

/// Prints `skipped: <why>` on the test process's stderr directly (the harness captures
/// `println!` of a passing test; a direct write shows in plain `cargo test` output).
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

fn open() -> Option<GpuEngines> {
    match gpu::open(0) {
        Ok(g) => Some(g),
        Err(e) => {
            skipped(&e.to_string());
            None
        }
    }
}

/// A built (or loaded) plan's outputs on the device, dense row-major f32 per output UID. The
/// workspace (when the plan needs one) and the outputs start as all-ones bytes.
fn execute(g: &GpuEngines, ctx: &dyn ExecutionContext, c: &BnCase, seed: u64) -> Vec<Vec<f32>> {
    let b = c.graph();
    let enc: Vec<(i64, DeviceBuffer<u8>)> = c
        .input_values(seed)
        .iter()
        .map(|(u, v)| (*u, g.device.htod(&b.spec(*u).encode(v)).expect("upload")))
        .collect();
    let outs: Vec<(i64, DeviceBuffer<u8>)> = c
        .outputs()
        .into_iter()
        .map(|u| {
            let n = b.spec(u).bytes_len();
            (u, g.device.htod(&vec![0xFFu8; n]).expect("alloc"))
        })
        .collect();
    let ws_len = ctx.workspace_size();
    let ws = (ws_len > 0).then(|| g.device.htod(&vec![0xFFu8; ws_len]).expect("workspace"));
    let mut t: Vec<TensorBinding<'_>> = enc
        .iter()
        .chain(&outs)
        .map(|(u, d)| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: d.device_ptr(),
                len: d.len(),
            },
        })
        .collect();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: ws.as_ref().map(|w| BufferRef::Device {
            addr: w.device_ptr(),
            len: w.len(),
        }),
        tensors: &mut t,
    })
    .unwrap_or_else(|e| panic!("{}: execute: {}", c.label(), e.message));
    Stream::default_stream(&g.device)
        .synchronize()
        .expect("synchronize");
    outs.iter()
        .map(|(u, d)| b.spec(*u).decode(&d.to_vec().expect("download")))
        .collect()
}

fn config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

fn og(c: &BnCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

/// Builds `c` on the GPU engine: the context and its entry as `<variant> <bm>x<bn> splits
/// <n>`; asserts the plan runs the batchnorm_fwd kernels.
fn build(e: &IngestorEngine, c: &BnCase) -> (Box<dyn ExecutionContext>, String) {
    let ctx = e
        .create_execution_context(&config(e), &og(c))
        .unwrap_or_else(|err| panic!("{}: build: {}", c.label(), err.message));
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let p = decode_payload(&saved).unwrap();
    assert_eq!(p.dispatch_symbol, BATCHNORM_FWD_V1, "{}", c.label());
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let entry = format!(
        "{} {}x{} splits {}",
        ["generic", "spec", "nchw"][int("spec") as usize],
        int("block_m"),
        int("block_n"),
        int("splits")
    );
    (ctx, entry)
}

/// Compares the GPU outputs with the CPU reference: the largest |d|/(1+|r|) per output type
/// (f32, f16, bf16) and how many elements differ in their bits.
fn check(c: &BnCase, got: &[Vec<f32>], want: &[Vec<f32>]) -> ([f32; 3], usize) {
    let mut worst = [0f32; 3];
    let mut inexact = 0;
    for ((u, g), w) in c.outputs().into_iter().zip(got).zip(want) {
        let dt = c.type_of(u);
        let tol = tolerance(dt, true);
        let slot = match dt {
            DT::FLOAT => 0,
            DT::HALF => 1,
            _ => 2,
        };
        assert_eq!(g.len(), w.len(), "{}: output uid {u}", c.label());
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let d = (a - b).abs() / (1.0 + b.abs());
            assert!(
                d <= tol,
                "{}: output uid {u} element {i}: gpu {a}, cpu {b} (tol {tol})",
                c.label()
            );
            worst[slot] = worst[slot].max(d);
            inexact += usize::from(a.to_bits() != b.to_bits());
        }
    }
    (worst, inexact)
}

#[test]
fn gpu_batchnorm_matches_the_cpu_reference() {
    let Some(g) = open() else { return };
    let e = g.engines[0].clone();
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let cases = gpu_cases();
    let mut worst = [[0f32; 3]; 2];
    let mut inference_inexact = 0;
    let mut entries = std::collections::BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let (ctx, entry) = build(&e, c);
        let got = execute(&g, ctx.as_ref(), c, i as u64);
        let want =
            run_graph(c.graph(), &c.input_values(i as u64), &c.outputs()).expect("cpu reference");
        let (d, inexact) = check(c, &got, &want);
        let training = usize::from(c.form == Form::Train);
        for k in 0..3 {
            worst[training][k] = worst[training][k].max(d[k]);
        }
        if training == 0 {
            inference_inexact += inexact;
        }
        *entries
            .entry(
                entry
                    .split(" splits")
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            )
            .or_insert(0) += 1;
        println!(
            "{} -> {entry}: max |d|/(1+|r|) f32 {:.1e} f16 {:.1e} bf16 {:.1e}, {inexact} elements not bit-exact",
            c.label(),
            d[0],
            d[1],
            d[2]
        );
    }
    println!("{} cases, entries {entries:?}", cases.len());
    println!(
        "worst |d|/(1+|r|): inference f32 {:.2e} f16 {:.2e} bf16 {:.2e}; training f32 {:.2e} f16 {:.2e} bf16 {:.2e}",
        worst[0][0], worst[0][1], worst[0][2], worst[1][0], worst[1][1], worst[1][2]
    );
    println!("inference outputs not bit-exact with the reference: {inference_inexact}");
}

/// Copies every file of `from` into `to` (created).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for f in std::fs::read_dir(from).expect("ls").flatten() {
        if f.path().is_file() {
            std::fs::copy(f.path(), to.join(f.file_name())).expect("copy");
        }
    }
}

/// An engine like `gpu::open`'s over the Triton entries of `dir`, on `g`'s device handle.
fn engine_at(g: &GpuEngines, dir: &Path) -> Arc<IngestorEngine> {
    let dev: Arc<dyn IngestorDevice> = Arc::new(HipIngestorDevice::new(g.device.clone()));
    Arc::new(IngestorEngine::new(
        GPU_ENGINE_NAME,
        load_triton_descriptors(dir).expect("triton.json"),
        Arc::new(FixedDevice(dev)),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    ))
}

fn bits(v: &[Vec<f32>]) -> Vec<Vec<u32>> {
    v.iter()
        .map(|o| o.iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn gpu_batchnorm_plans_load_on_a_new_handle_without_archives_and_run_bit_identically() {
    let Some(g) = open() else { return };
    let tmp = std::env::temp_dir().join(format!("hipdnn-gpu-batchnorm-{}", std::process::id()));
    let dir = tmp.join(&g.arch);
    copy_dir(&g.packed_dir, &dir);
    let cases = [
        // nchw entry, two launches, several splits.
        BnCase::new(Form::Train, DT::HALF, &[2, 32, 56, 56]).with_stats(true),
        // spec entry (NHWC), f32 statistics behind bf16 x.
        BnCase {
            aux_f32: true,
            ..BnCase::new(Form::Train, DT::BFLOAT16, &[4, 16, 8, 8])
                .nhwc()
                .with_stats(true)
        },
        // generic channels-first, batch 1, f32.
        BnCase::new(Form::Train, DT::FLOAT, &[1, 3, 7, 7]).with_stats(false),
        // inference, variance form, generic channels-last.
        BnCase::new(Form::Var, DT::FLOAT, &[2, 5, 9, 11]).nhwc(),
    ];
    let e1 = engine_at(&g, &dir);
    let mut h1 = BackendHandle::new();
    h1.register_engine(e1.clone()).unwrap();
    let mut saved = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let plan = ExecutionPlanDescriptor::finalize(&h1, &config(&e1), &og(c))
            .unwrap_or_else(|err| panic!("{}: finalize: {}", c.label(), err.message));
        let first = execute(&g, plan.execution_context(), c, 100 + i as u64);
        saved.push((plan.to_bytes().expect("save"), first));
    }
    // A fresh engine's own build saves the same bytes (the plan records the entry and the
    // launch values only).
    let g3 = open().expect("second device handle");
    let e3 = engine_at(&g3, &dir);
    let mut h3 = BackendHandle::new();
    h3.register_engine(e3.clone()).unwrap();
    for (c, (bytes, _)) in cases.iter().zip(&saved) {
        let plan = ExecutionPlanDescriptor::finalize(&h3, &config(&e3), &og(c)).unwrap();
        assert_eq!(&plan.to_bytes().unwrap(), bytes, "{}: rebuild", c.label());
    }
    drop((h3, e3, g3));
    // Move the archives away: only triton.json (and the clang descriptors) remain.
    let moved = tmp.join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        if f.path().extension().is_some_and(|x| x == "kpack") {
            std::fs::rename(f.path(), moved.join(f.file_name())).expect("move the archive");
        }
    }
    let left = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|f| f.path().extension().is_some_and(|x| x == "kpack"))
        .count();
    assert_eq!(left, 0, "no kpack archive is reachable");
    // A new handle: a fresh device handle and engine over the same (archive-less) dir.
    let g2 = open().expect("new device handle");
    let e2 = engine_at(&g2, &dir);
    assert!(
        e2.create_execution_context(&config(&e2), &og(&cases[0]))
            .is_err(),
        "without archives the engine builds nothing"
    );
    let mut h2 = BackendHandle::new();
    h2.register_engine(e2.clone()).unwrap();
    for (i, (c, (bytes, first))) in cases.iter().zip(&saved).enumerate() {
        let plan = ExecutionPlanDescriptor::from_bytes(&h2, bytes)
            .unwrap_or_else(|err| panic!("{}: load: {}", c.label(), err.message));
        let a = execute(&g2, plan.execution_context(), c, 100 + i as u64);
        let b = execute(&g2, plan.execution_context(), c, 100 + i as u64);
        assert_eq!(bits(&a), bits(first), "{}: loaded plan differs", c.label());
        assert_eq!(bits(&b), bits(&a), "{}: second execute differs", c.label());
        assert_eq!(&plan.to_bytes().unwrap(), bytes, "{}: re-save", c.label());
        let want = run_graph(c.graph(), &c.input_values(100 + i as u64), &c.outputs())
            .expect("cpu reference");
        let (d, _) = check(c, &a, &want);
        println!(
            "{}: loaded without archives, two executes bit-identical to the first run, re-save byte-identical ({} bytes), max |d|/(1+|r|) {:.1e}",
            c.label(),
            bytes.len(),
            d.iter().fold(0f32, |m, v| m.max(*v))
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
