//! GPU test of the reduce_fwd Triton family (`hipkernel.reduce_fwd.dispatch.v1`): reduction,
//! softmax and log-softmax graphs built through the GPU ingestor engine
//! (`hipdnn_engines::gpu::open`, kernels from `HIPDNN_KERNEL_DIR` or the committed
//! `engines/kernels/packed/<arch>/`), executed on device 0 and compared with the CPU reference
//! engine over the shape matrix of `reduce_support::gpu_cases` (every `ReductionMode` ×
//! f32/f16/bf16 × odd and even shapes and axis sets: the last, first and middle axis, leading
//! and trailing axes, all axes, a transposed x; an f32 y behind 16-bit x; softmax and
//! log-softmax over rows of 1 to 20000 elements, taking the one-chunk and the online
//! two-pass paths, over a middle axis, with 16-bit intermediates and a transposed x/y). Then
//! save → a second engine on a fresh device handle restores the plan (no kernel selection) →
//! executes twice → bit-identical outputs, and that engine's own build saves byte-identical
//! plan bytes.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Tolerances, per output element against the CPU reference (`r` its value, `n` the elements
//! reduced per output, `A` their Σ|x|, `b = 2·(n/16 + 32)·2⁻²⁴` the worst-case rounding bound
//! of the two summation orders, the reference's 16 sequential lanes and the kernel's tile
//! lanes plus a tree, counted for both sides):
//! - ADD, NORM1: `b·(1 + A)`; AVG: `b·(1 + A/n)`; NORM2: `(b + 2⁻²³)·(1 + |r|)`;
//! - MUL, MUL_NO_ZEROS: `2·n·2⁻²⁴·|r|` (every product rounds once on each side);
//! - MIN_OP, MAX_OP, AMAX: exact (the same f32 value, rounded the same way);
//! - softmax, log-softmax: `(2·10⁻⁶ + b)·(1 + |r|)` (exp/log through exp2/log2 and a
//!   reciprocal multiply on the GPU, libm on the CPU);
//! - plus, for a 16-bit y or 16-bit softmax intermediates (which the reference rounds and the
//!   kernel keeps in f32), `reference::testing::tolerance(dt, true)·(1 + |r|)` (1e-2 f16,
//!   2e-2 bf16).

mod reduce_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::{self, GpuEngines};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::reduce_fwd::REDUCE_FWD_V1;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_hip::Stream;
use hipdnn_schema::graph::{DataType as DT, ReductionMode as RM};
use reduce_support::{Kind, ReduceCase, X, Y, gpu_cases};

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

/// A built (or restored) plan's y on the device, dense row-major f32.
fn execute(
    g: &GpuEngines,
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
    c: &ReduceCase,
    x: &[f32],
) -> Vec<f32> {
    let b = c.graph();
    let xd = g.device.htod(&b.spec(X).encode(x)).expect("upload");
    // y starts as all-ones bytes (NaN in every float type): unwritten elements fail.
    let yd = g
        .device
        .htod(&vec![0xFFu8; b.spec(Y).bytes_len()])
        .expect("alloc");
    let mut t: Vec<TensorBinding<'_>> = [(X, &xd), (Y, &yd)]
        .iter()
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
        workspace: None,
        tensors: &mut t,
    })
    .unwrap_or_else(|e| panic!("{c:?}: execute: {}", e.message));
    Stream::default_stream(&g.device)
        .synchronize()
        .expect("synchronize");
    b.spec(Y).decode(&yd.to_vec().expect("download"))
}

fn config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

/// Builds `c` on the GPU engine: the context, its saved plan bytes and its entry as
/// `spec|generic bm x bn`. Asserts the plan runs the reduce_fwd kernel.
fn build(
    e: &IngestorEngine,
    c: &ReduceCase,
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
    assert_eq!(p.dispatch_symbol, REDUCE_FWD_V1, "{c:?}");
    assert_eq!(p.symbol, "hipdnn_reduce_fwd", "{c:?}");
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let entry = format!(
        "{} {}x{}",
        if int("spec") == 1 { "spec" } else { "generic" },
        int("block_m"),
        int("block_n")
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

fn kind_name(k: Kind) -> String {
    match k {
        Kind::Reduce(m) => format!("{m:?}"),
        Kind::Softmax => "softmax".into(),
        Kind::LogSoftmax => "log-softmax".into(),
    }
}

/// Compares the GPU y with the CPU reference; returns the largest |d| / tolerance (0 when
/// every difference is 0).
fn check(c: &ReduceCase, x: &[f32], got: &[f32], want: &[f32]) -> f32 {
    let tol = c.tolerances(x, want);
    assert_eq!(got.len(), want.len());
    let mut worst = 0f32;
    for (i, ((a, b), t)) in got.iter().zip(want).zip(&tol).enumerate() {
        let d = (a - b).abs();
        assert!(
            d <= *t,
            "{c:?}: y element {i}: gpu {a}, cpu {b} (|d| {d:e}, tol {t:e})"
        );
        if d > 0.0 {
            worst = worst.max(d / t);
        }
    }
    worst
}

#[test]
fn gpu_reductions_and_softmax_match_the_cpu_reference() {
    let Some(g) = open() else { return };
    let e = g.engines[0].clone();
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let mut worst: Vec<(String, f32)> = Vec::new();
    let cases = gpu_cases();
    for (i, c) in cases.iter().enumerate() {
        let x = c.input(i as u64 + 1);
        let (ctx, _, entry) = build(&e, c);
        let got = execute(&g, ctx.as_ref(), c, &x);
        let want = run_graph(c.graph(), &[(X, x.clone())], &[Y]).expect("cpu reference")[0].clone();
        let d = check(c, &x, &got, &want);
        let key = format!("{} {}", kind_name(c.kind), type_name(c.dt));
        match worst.iter_mut().find(|w| w.0 == key) {
            Some(w) => w.1 = w.1.max(d),
            None => worst.push((key, d)),
        }
        println!(
            "{} {} dims {:?} axes {:?}{}{}{} -> {entry}: max |d|/tol {d:.2}",
            kind_name(c.kind),
            type_name(c.dt),
            c.dims,
            c.axes,
            if c.y_f32 { " y f32" } else { "" },
            if c.strides.is_some() { " strided" } else { "" },
            if c.is_softmax() && c.mid != DT::FLOAT {
                " 16-bit intermediates"
            } else {
                ""
            },
        );
    }
    println!(
        "{} cases passed; worst |d|/tol per op and type:",
        cases.len()
    );
    for (k, w) in worst {
        println!("  {k}: {w:.3}");
    }
}

#[test]
fn gpu_reduce_plans_restore_on_a_fresh_engine_and_run_bit_identically() {
    let Some(g) = open() else { return };
    let Some(g2) = open() else { return };
    let (e, e2) = (g.engines[0].clone(), g2.engines[0].clone());
    let cases = [
        ReduceCase::softmax(false, DT::HALF, &[64, 1024], &[1]),
        ReduceCase::softmax(true, DT::FLOAT, &[3, 20000], &[1]),
        ReduceCase::reduce(RM::ADD, DT::BFLOAT16, &[3, 4, 5, 6], &[0, 3]),
        ReduceCase::reduce(RM::NORM2, DT::FLOAT, &[32, 4096], &[1]),
    ];
    for (i, c) in cases.iter().enumerate() {
        let x = c.input(100 + i as u64);
        let (ctx, saved, entry) = build(&e, c);
        let first = execute(&g, ctx.as_ref(), c, &x);
        let restored = e2
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&saved)
            .unwrap_or_else(|err| panic!("{c:?}: restore: {}", err.message));
        for round in 0..2 {
            let again = execute(&g2, restored.as_ref(), c, &x);
            assert_eq!(
                first.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                again.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{c:?}: restored execute {round} differs"
            );
        }
        let (_, saved2, _) = build(&e2, c);
        assert_eq!(saved2, saved, "{c:?}: re-save differs");
        let want = run_graph(c.graph(), &[(X, x.clone())], &[Y]).expect("cpu reference")[0].clone();
        let d = check(c, &x, &first, &want);
        println!(
            "{} {:?} {} -> {entry}: restored plan bit-identical, re-save identical ({} bytes), max |d|/tol {d:.2}",
            kind_name(c.kind),
            c.dims,
            type_name(c.dt),
            saved.len()
        );
    }
}
