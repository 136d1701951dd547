//! GPU test of the pointwise_fused Triton family (`hipkernel.pointwise.dispatch.v3`): pointwise
//! graphs built through the GPU ingestor engine (`hipdnn_engines::gpu::open`, kernels from
//! `HIPDNN_KERNEL_DIR` or the committed `engines/kernels/packed/<arch>/`), executed on device 0
//! and compared with the CPU reference engine over the matrix of
//! `pointwise_support::gpu_cases`: every mode × f32/f16/bf16 over a dense shape (spec entries)
//! and an odd broadcast 4-D shape (generic entries), one element, 1 003 003 elements, a 5-D
//! broadcast, 6-D dims that merge, a transposed input, a padded output, a BOOLEAN output, and
//! fused chains (bias + ReLU + scale with f32/f16/bf16 intermediates, a 4-node DAG). Then save
//! → a second engine on a fresh device handle restores the plan → executes twice →
//! bit-identical outputs, and that engine's own build saves byte-identical plan bytes.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Tolerances, per element against the CPU reference (`r` = its value, in the output type):
//! - graphs of exact modes only (`pointwise_support::EXACT`: IEEE add/sub/mul/div/sqrt,
//!   comparisons, selects, clips, …): bit-identical;
//! - others (exp, log, sin, tan, tanh, erf and the modes built on them, from the vendor device
//!   library instead of the host libm): f32 |d| ≤ 2e-5·(1 + |r|), f16 |d| ≤ 1e-2·(1 + |r|),
//!   bf16 |d| ≤ 2e-2·(1 + |r|) (an f32 ulp can flip a 16-bit rounding, also of an
//!   intermediate).

mod pointwise_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::{self, GpuEngines};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::pointwise_v3::POINTWISE_V3;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::reference::testing::{random_values, run_graph};
use hipdnn_hip::{DeviceBuffer, Stream};
use hipdnn_schema::graph::DataType as DT;
use pointwise_support::{PwCase, Y, bias_relu_scale, compare, dag4, gpu_cases};

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

/// Deterministic inputs in each input's range (`PwCase::range`; selectors 0 or 1).
fn inputs(c: &PwCase, seed: u64) -> Vec<(i64, Vec<f32>)> {
    c.inputs()
        .into_iter()
        .map(|u| {
            let (lo, hi, sel) = c.range(u);
            let mut v = random_values(c.count(u), seed * 31 + u as u64, lo, hi);
            if sel {
                v.iter_mut()
                    .for_each(|x| *x = if *x < 0.5 { 0.0 } else { 1.0 });
            }
            (u, v)
        })
        .collect()
}

/// Uploads `ins`, executes the plan into an output buffer filled with 0xFF bytes (NaN in every
/// float type, so unwritten elements fail) and returns the output's bytes.
fn enc_out_bytes(
    g: &GpuEngines,
    c: &PwCase,
    ins: &[(i64, Vec<f32>)],
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
) -> Vec<u8> {
    let b = c.graph();
    let enc: Vec<(i64, DeviceBuffer<u8>)> = ins
        .iter()
        .map(|(u, v)| (*u, g.device.htod(&b.spec(*u).encode(v)).expect("upload")))
        .collect();
    let out = g
        .device
        .htod(&vec![0xFFu8; b.spec(Y).bytes_len()])
        .expect("alloc");
    let mut t: Vec<TensorBinding<'_>> = enc
        .iter()
        .map(|(u, d)| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: d.device_ptr(),
                len: d.len(),
            },
        })
        .collect();
    t.push(TensorBinding {
        uid: Y,
        data: BufferRef::Device {
            addr: out.device_ptr(),
            len: out.len(),
        },
    });
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap_or_else(|e| panic!("{}: execute: {}", c.name, e.message));
    Stream::default_stream(&g.device)
        .synchronize()
        .expect("synchronize");
    out.to_vec().expect("download")
}

fn config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

/// Builds `c` on the GPU engine: the context, its saved plan bytes and its entry
/// (`spec|generic block gG`). Asserts the plan runs the v3 contract.
fn build(
    e: &IngestorEngine,
    c: &PwCase,
) -> (
    Box<dyn hipdnn_backend::engine::ExecutionContext>,
    Vec<u8>,
    String,
) {
    let og = OperationGraph::from_bytes(&c.graph().build()).unwrap();
    let ctx = e
        .create_execution_context(&config(e), &og)
        .unwrap_or_else(|err| panic!("{}: build: {}", c.name, err.message));
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let p = decode_payload(&saved).unwrap();
    assert_eq!(p.dispatch_symbol, POINTWISE_V3, "{}", c.name);
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let entry = format!(
        "{} {} g{}",
        if int("spec") == 1 { "spec" } else { "generic" },
        int("block"),
        int("group")
    );
    (ctx, saved, entry)
}

/// Compares with the CPU reference (`pointwise_support::compare`, the tolerances of the module
/// docs); returns the largest |d|/(1+|r|).
fn check(c: &PwCase, got: &[f32], want: &[f32]) -> f32 {
    compare(c, got, want).unwrap_or_else(|m| panic!("{m}"))
}

#[test]
fn gpu_pointwise_graphs_match_the_cpu_reference() {
    let Some(g) = open() else { return };
    let e = g.engines[0].clone();
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let mut worst = [0f32; 3];
    let cases = gpu_cases();
    for (i, c) in cases.iter().enumerate() {
        let ins = inputs(c, i as u64);
        let (ctx, _, entry) = build(&e, c);
        let got = c
            .graph()
            .spec(Y)
            .decode(&enc_out_bytes(&g, c, &ins, ctx.as_ref()));
        let want = run_graph(c.graph(), &ins, &c.outputs()).expect("cpu reference");
        let d = check(c, &got, &want[0]);
        let slot = match c.tensor(Y).dt {
            DT::HALF => 1,
            DT::BFLOAT16 => 2,
            _ => 0,
        };
        worst[slot] = worst[slot].max(d);
        println!(
            "{} -> {entry}: {}",
            c.name,
            if c.exact() {
                "bit-identical".to_string()
            } else {
                format!("max |d|/(1+|r|) {d:.2e}")
            }
        );
    }
    println!(
        "{} cases passed; worst |d|/(1+|r|) of the library modes: f32 {:.2e}, f16 {:.2e}, bf16 {:.2e}",
        cases.len(),
        worst[0],
        worst[1],
        worst[2]
    );
}

#[test]
fn gpu_pointwise_plans_restore_on_a_fresh_engine_and_run_bit_identically() {
    let Some(g) = open() else { return };
    let Some(g2) = open() else { return };
    let (e, e2) = (g.engines[0].clone(), g2.engines[0].clone());
    let cases = [
        PwCase::single(
            hipdnn_schema::graph::PointwiseMode::ADD,
            DT::HALF,
            &[64, 64],
            &[&[64, 64], &[64, 64]],
        ),
        bias_relu_scale(DT::BFLOAT16, DT::BFLOAT16, &[3, 5, 7, 3]),
        dag4(DT::FLOAT, &[7, 33]),
    ];
    for (i, c) in cases.iter().enumerate() {
        let ins = inputs(c, 100 + i as u64);
        let (ctx, saved, entry) = build(&e, c);
        let first = enc_out_bytes(&g, c, &ins, ctx.as_ref());
        let restored = e2
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&saved)
            .unwrap_or_else(|err| panic!("{}: restore: {}", c.name, err.message));
        for round in 0..2 {
            let again = enc_out_bytes(&g2, c, &ins, restored.as_ref());
            assert_eq!(first, again, "{}: restored execute {round} differs", c.name);
        }
        let (_, saved2, _) = build(&e2, c);
        assert_eq!(saved2, saved, "{}: re-save differs", c.name);
        let want = run_graph(c.graph(), &ins, &c.outputs()).expect("cpu reference");
        let d = check(c, &c.graph().spec(Y).decode(&first), &want[0]);
        println!(
            "{} -> {entry}: restored plan bit-identical, re-save identical ({} bytes), max |d|/(1+|r|) {d:.2e}",
            c.name,
            saved.len()
        );
    }
}
