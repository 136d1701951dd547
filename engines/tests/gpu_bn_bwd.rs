//! GPU test of the bn_bwd Triton family (`hipkernel.bn_bwd.dispatch.v1`): batchnorm backward
//! graphs, alone and behind a fused `RELU_BWD`, built through the GPU ingestor engine
//! (`hipdnn_engines::gpu::open`, kernels from `HIPDNN_KERNEL_DIR` or the committed
//! `engines/kernels/packed/<arch>/`), executed on device 0 (two launches: the per-split partial
//! sums into the workspace, then dscale/dbias and dx) and compared with the CPU reference
//! engine's backward over the shape matrix of `bn_bwd_support::gpu_cases` (2-D to 5-D x, odd
//! N·spatial and C, batch 1, NCHW and NHWC, f32/f16/bf16, f32 per-channel tensors behind
//! 16-bit x, with and without the ReLU backward). Every execute runs twice and must give the
//! same bits (the split reduction is deterministic); then save → a second engine on a fresh
//! device handle restores the plan → executes → bit-identical outputs, and that engine's own
//! build saves byte-identical plan bytes.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Tolerances, per element against the CPU reference (`r` = its value, in the output type;
//! `reference::testing::tolerance(dt, true)`, the reference engine's backward tolerances):
//! f32 |d| ≤ 1e-4·(1 + |r|) (the kernel sums in f32, the reference in f64), f16 1e-2, bf16
//! 2e-2.

mod bn_bwd_support;

use bn_bwd_support::{BnBwdCase, gpu_cases};
use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::{self, GpuEngines};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::bn_bwd::BN_BWD_V1;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::reference::testing::{run_graph, tolerance};
use hipdnn_hip::{DeviceBuffer, Stream};
use hipdnn_schema::graph::DataType as DT;

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

/// A built (or restored) plan's outputs on the device, dense row-major f32 per output UID.
fn execute(
    g: &GpuEngines,
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
    c: &BnBwdCase,
    ins: &[(i64, Vec<f32>)],
) -> Vec<Vec<f32>> {
    let b = c.graph();
    let enc: Vec<(i64, DeviceBuffer<u8>)> = ins
        .iter()
        .map(|(u, v)| (*u, g.device.htod(&b.spec(*u).encode(v)).expect("upload")))
        .collect();
    // Outputs and the workspace start as all-ones bytes (NaN in every float type):
    // unwritten elements fail.
    let outs: Vec<(i64, DeviceBuffer<u8>)> = c
        .outputs()
        .into_iter()
        .map(|u| {
            let n = b.spec(u).bytes_len();
            (u, g.device.htod(&vec![0xFFu8; n]).expect("alloc"))
        })
        .collect();
    let ws_len = ctx.workspace_size();
    let ws = g.device.htod(&vec![0xFFu8; ws_len.max(4)]).expect("alloc");
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
        workspace: Some(BufferRef::Device {
            addr: ws.device_ptr(),
            len: ws_len,
        }),
        tensors: &mut t,
    })
    .unwrap_or_else(|e| panic!("{c:?}: execute: {}", e.message));
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

/// Builds `c` on the GPU engine: the context and its saved plan bytes. Asserts the plan runs
/// a bn_bwd kernel and returns its entry as `spec/nchw/generic bm x bn, splits`.
fn build(
    e: &IngestorEngine,
    c: &BnBwdCase,
) -> (
    Box<dyn hipdnn_backend::engine::ExecutionContext>,
    Vec<u8>,
    String,
) {
    let og = OperationGraph::from_bytes(&c.graph().build()).unwrap();
    let ctx = e
        .create_execution_context(&config(e), &og)
        .unwrap_or_else(|err| panic!("{c:?}: build: {}", err.message));
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let p = decode_payload(&saved).unwrap();
    assert_eq!(p.dispatch_symbol, BN_BWD_V1, "{c:?}");
    assert!(p.symbol.starts_with("hipdnn_bn_bwd"), "{c:?}: {}", p.symbol);
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let entry = format!(
        "{} {}x{}, {} splits",
        ["generic", "spec", "nchw"][int("spec") as usize],
        int("block_m"),
        int("block_n"),
        int("splits")
    );
    (ctx, saved, entry)
}

fn type_name(dt: DT) -> &'static str {
    match dt {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    }
}

fn bits(v: &[Vec<f32>]) -> Vec<Vec<u32>> {
    v.iter()
        .map(|o| o.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// Compares the GPU outputs with the CPU reference; returns the largest |d|/(1+|r|).
fn check(c: &BnBwdCase, got: &[Vec<f32>], want: &[Vec<f32>]) -> f32 {
    let mut worst = 0f32;
    for ((u, g), w) in c.outputs().into_iter().zip(got).zip(want) {
        let dt = if c.out_f32 && u != bn_bwd_support::DX {
            DT::FLOAT
        } else {
            c.dt
        };
        let tol = tolerance(dt, true);
        assert_eq!(g.len(), w.len());
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let d = (a - b).abs() / (1.0 + b.abs());
            assert!(
                d <= tol,
                "{c:?}: output uid {u} element {i}: gpu {a}, cpu {b} (tol {tol})"
            );
            worst = worst.max(d);
        }
    }
    worst
}

#[test]
fn gpu_batchnorm_backward_matches_the_cpu_reference() {
    let Some(g) = open() else { return };
    let e = g.engines[0].clone();
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let mut worst = [0f32; 3];
    for (i, c) in gpu_cases().iter().enumerate() {
        let ins = c.input_values(i as u64);
        let (ctx, _, entry) = build(&e, c);
        let got = execute(&g, ctx.as_ref(), c, &ins);
        let again = execute(&g, ctx.as_ref(), c, &ins);
        assert_eq!(bits(&got), bits(&again), "{c:?}: a second execute differs");
        let want = run_graph(c.graph(), &ins, &c.outputs()).expect("cpu reference");
        let d = check(c, &got, &want);
        let slot = match c.dt {
            DT::FLOAT => 0,
            DT::HALF => 1,
            _ => 2,
        };
        worst[slot] = worst[slot].max(d);
        println!(
            "batchnorm_backward {} dims {:?}{}{}{}{} -> {entry}: max |d|/(1+|r|) {d:.2e}",
            type_name(c.dt),
            c.dims,
            if c.channels_last { " nhwc" } else { " nchw" },
            if c.relu { " +relu_bwd" } else { "" },
            if c.in_f32 { " f32-inputs" } else { "" },
            if c.out_f32 { " f32-outputs" } else { "" },
        );
    }
    println!(
        "worst |d|/(1+|r|): f32 x {:.2e}, f16 {:.2e}, bf16 {:.2e}",
        worst[0], worst[1], worst[2]
    );
}

#[test]
fn gpu_bn_bwd_plans_restore_on_a_fresh_engine_and_run_bit_identically() {
    let Some(g) = open() else { return };
    let Some(g2) = open() else { return };
    let (e, e2) = (g.engines[0].clone(), g2.engines[0].clone());
    let cases = [
        BnBwdCase::new(DT::FLOAT, &[8, 64, 14, 14]),
        BnBwdCase {
            channels_last: true,
            relu: true,
            ..BnBwdCase::new(DT::HALF, &[4, 32, 9, 9])
        },
        BnBwdCase {
            relu: true,
            in_f32: true,
            out_f32: true,
            ..BnBwdCase::new(DT::BFLOAT16, &[2, 48, 33, 31])
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        let ins = c.input_values(100 + i as u64);
        let (ctx, saved, entry) = build(&e, c);
        let first = execute(&g, ctx.as_ref(), c, &ins);
        let restored = e2
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&saved)
            .unwrap_or_else(|err| panic!("{c:?}: restore: {}", err.message));
        for round in 0..2 {
            let again = execute(&g2, restored.as_ref(), c, &ins);
            assert_eq!(
                bits(&first),
                bits(&again),
                "{c:?}: restored execute {round} differs"
            );
        }
        let (_, saved2, _) = build(&e2, c);
        assert_eq!(saved2, saved, "{c:?}: re-save differs");
        let want = run_graph(c.graph(), &ins, &c.outputs()).expect("cpu reference");
        let d = check(c, &first, &want);
        println!(
            "{:?} {} -> {entry}: restored plan bit-identical, re-save identical ({} bytes), max |d|/(1+|r|) {d:.2e}",
            c.dims,
            type_name(c.dt),
            saved.len()
        );
    }
}
