//! GPU test of the sdpa_bwd Triton family (`hipkernel.sdpa_bwd.dispatch.v1`): SDPA backward
//! graphs built through the GPU ingestor engine (`hipdnn_engines::gpu::open`, kernels from
//! `HIPDNN_KERNEL_DIR` or the committed `engines/kernels/packed/<arch>/`), executed on device 0
//! (two launches: delta and dq, then dk and dv) and compared with the CPU reference engine's
//! SDPA backward on the same inputs (o and stats from a float64 forward) over
//! [`gpu_cases`]: odd sequence lengths, s_q ≠ s_kv, batch 1, GQA and MQA, head dims 32, 64,
//! 80 (generic), 96 and 128, causal top-left and bottom-right, a sliding window, rows whose
//! every key is masked, scale value / constant tensor / 1, f32, f16 and bf16, BSHD,
//! channels-last and padded layouts, sequences over several tiles. Every execute runs twice
//! and must give the same bits (no atomics); then save → a second engine on a fresh device
//! handle restores the plan → executes → bit-identical gradients, and that engine's own build
//! saves byte-identical plan bytes.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Tolerances, per element against the CPU reference (`r` its value, in the output type):
//! `reference::testing::tolerance(dt, true)`, the reference engine's backward tolerances: f32
//! |d| ≤ 1e-4·(1 + |r|) (the kernel sums in f32 in another order; the reference in f64), f16
//! 1e-2, bf16 2e-2.

mod batch_rows_support;
mod batchnorm_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;
mod sdpa_bwd_support;

use batch_rows_support::{bound_specs, gpu_execute};
use hipdnn_backend::engine::{Engine, EngineConfig};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::{self, GpuEngines};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::sdpa_bwd::SDPA_BWD_V1;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::reference::testing::{run_graph, tolerance};
use hipdnn_schema::graph::DataType as DT;
use sdpa_bwd_support::*;

/// Prints `skipped: <why>` on the test process's stderr directly.
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

fn config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

/// Builds `c` on the GPU engine: the context, its saved plan bytes and its entry as
/// `spec/generic bm x bn x bk w`.
fn build(
    e: &IngestorEngine,
    c: &Case,
) -> (
    Box<dyn hipdnn_backend::engine::ExecutionContext>,
    Vec<u8>,
    String,
) {
    let og = OperationGraph::from_bytes(&graph(c).build()).unwrap();
    let ctx = e
        .create_execution_context(&config(e), &og)
        .unwrap_or_else(|err| panic!("{c:?}: build: {}", err.message));
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let p = decode_payload(&saved).unwrap();
    assert_eq!(p.dispatch_symbol, SDPA_BWD_V1, "{c:?}");
    assert_eq!(p.symbol, "hipdnn_sdpa_bwd", "{c:?}");
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let entry = format!(
        "{} {}x{}x{} w{}",
        if int("spec") == 1 { "spec" } else { "generic" },
        int("block_m"),
        int("block_n"),
        int("block_k"),
        int("num_warps")
    );
    (ctx, saved, entry)
}

/// Executes a plan of `c` once on device 0 with inputs `ins`
/// ([`batch_rows_support::gpu_execute`]: outputs start as all-ones bytes, NaN in every float
/// type, so unwritten elements fail). Returns dq, dk, dv (dense row-major f32).
fn execute(
    g: &GpuEngines,
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
    c: &Case,
    ins: &[(i64, Vec<f32>)],
) -> Vec<Vec<f32>> {
    let specs = bound_specs(&graph(c), ins, &outs(c));
    gpu_execute(g, ctx, &specs, ins, &outs(c)).unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

fn bits(v: &[Vec<f32>]) -> Vec<Vec<u32>> {
    v.iter()
        .map(|o| o.iter().map(|x| x.to_bits()).collect())
        .collect()
}

/// Compares the GPU gradients with the CPU reference's; returns the largest |d|/(1+|r|).
fn check(c: &Case, got: &[Vec<f32>], want: &[Vec<f32>]) -> f32 {
    let tol = tolerance(c.dt, true);
    let mut worst = 0f32;
    for ((name, g), w) in ["dq", "dk", "dv"].iter().zip(got).zip(want) {
        assert_eq!(g.len(), w.len());
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let d = (a - b).abs() / (1.0 + b.abs());
            assert!(
                d <= tol,
                "{c:?}: {name} element {i}: gpu {a}, cpu {b} (tol {tol})"
            );
            worst = worst.max(d);
        }
    }
    worst
}

fn describe(c: &Case) -> String {
    let band = match (c.causal, c.causal_br, c.left, c.right) {
        (true, _, _, _) => " causal".to_string(),
        (_, true, _, _) => " causal bottom-right".to_string(),
        (_, _, None, None) => String::new(),
        (_, _, l, r) => format!(" band left {l:?} right {r:?}"),
    };
    format!("{:?} {:?} {:?}{band} {:?}", c.dims, c.dt, c.layout, c.scale)
}

#[test]
fn gpu_sdpa_backward_matches_the_cpu_reference() {
    let Some(g) = open() else { return };
    let e = g.engines[0].clone();
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let mut worst = [0f32; 3];
    for (i, c) in gpu_cases().iter().enumerate() {
        let x = inputs(c, 40 + i as u64);
        let ins = bound(&x);
        let (ctx, _, entry) = build(&e, c);
        let got = execute(&g, ctx.as_ref(), c, &ins);
        let again = execute(&g, ctx.as_ref(), c, &ins);
        assert_eq!(bits(&got), bits(&again), "{c:?}: a second execute differs");
        let want = run_graph(graph(c), &ins, &outs(c)).expect("cpu reference");
        let d = check(c, &got, &want);
        let slot = match c.dt {
            DT::FLOAT => 0,
            DT::HALF => 1,
            _ => 2,
        };
        worst[slot] = worst[slot].max(d);
        println!("{} -> {entry}: max |d|/(1+|r|) {d:.2e}", describe(c));
    }
    println!(
        "worst |d|/(1+|r|): f32 {:.2e}, f16 {:.2e}, bf16 {:.2e}",
        worst[0], worst[1], worst[2]
    );
}

#[test]
fn gpu_sdpa_bwd_plans_restore_on_a_fresh_engine_and_run_bit_identically() {
    let Some(g) = open() else { return };
    let Some(g2) = open() else { return };
    let (e, e2) = (g.engines[0].clone(), g2.engines[0].clone());
    let cases = gpu_cases();
    for (i, c) in [&cases[1], &cases[5], &cases[cases.len() - 2]]
        .into_iter()
        .enumerate()
    {
        let ins = bound(&inputs(c, 100 + i as u64));
        let (ctx, saved, entry) = build(&e, c);
        let first = execute(&g, ctx.as_ref(), c, &ins);
        let restored = e2
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&saved)
            .unwrap_or_else(|err| panic!("{c:?}: restore: {}", err.message));
        let again = execute(&g2, restored.as_ref(), c, &ins);
        assert_eq!(
            bits(&first),
            bits(&again),
            "{c:?}: restored execute differs"
        );
        let (_, saved2, _) = build(&e2, c);
        assert_eq!(saved2, saved, "{c:?}: re-save differs");
        println!(
            "{} -> {entry}: restored plan bit-identical, re-save identical ({} bytes)",
            describe(c),
            saved.len()
        );
    }
}
