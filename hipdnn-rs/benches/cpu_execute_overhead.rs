//! The fixed cost of one CPU-engine execute: tiny graphs on a CPU handle, where the arithmetic
//! is nothing and the SDK's pack checks, the backend's routing, the engine's binding checks,
//! its value environment and its hand-off to the thread pool are everything (issue 30).
//!
//! Graphs (the shapes the MiniLM forward runs at batch 1 × 16 tokens):
//! - `pointwise_1`: a 1-element IDENTITY pointwise graph (f32, `[1,1,1,1]`);
//! - `gather_16`: the `hipdnn_rs.gather` word-embedding lookup of one sentence, a
//!   `(30522, 384)` f32 table bound read-only and 16 INT64 ids (numpy `take` of the same rows:
//!   ~1.5 µs on this machine class, `HIPDNN_CPU_BENCH_ONLY=gather` in the engine's
//!   `reference_ops` bench times both side by side);
//! - `layernorm_16x384`: layernorm (inference, eps 1e-12) of 16 rows of 384.
//!
//! Two rows per graph:
//! - `sdk/<graph>`: `Graph::execute` with a `VariantPack` built per call, as a user writes it;
//! - `engine/<graph>`: the CPU engine's execution context called directly with the bindings
//!   (its binding checks, value environment, steps; no SDK or backend).
//!
//! `sdk − engine` is what the SDK and backend add; `engine` on `pointwise_1` is the engine's
//! own fixed cost.
//!
//! ```text
//! cargo bench -p hipdnn --no-default-features --bench cpu_execute_overhead
//! ```

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use hipdnn::*;
use hipdnn_backend::engine::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, TensorBinding,
};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::reference::ReferenceEngine;

const VOCAB: i64 = 30522;
const H: i64 = 384;

/// The CPU engine's execution context of `g` (built from its graph bytes, as the handle would).
fn engine_context(g: &Graph) -> Box<dyn ExecutionContext> {
    let graph = OperationGraph::from_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    let engine = ReferenceEngine::new();
    let config = EngineConfig {
        engine_id: engine.id(),
        knob_choices: vec![],
    };
    engine.create_execution_context(&config, &graph).unwrap()
}

fn f32_graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name)
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

fn tensor(g: &mut Graph, name: &str, uid: i64, dt: DataType, dims: &[i64]) -> TensorId {
    let mut strides = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1];
    }
    g.tensor(
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(dt)
            .dims(dims.to_vec())
            .strides(strides),
    )
}

/// An input buffer of a typed element.
enum In {
    F32(Buffer<f32>),
    I64(Buffer<i64>),
}

impl In {
    fn bytes(&self) -> &[u8] {
        match self {
            In::F32(b) => b.as_bytes().unwrap(),
            In::I64(b) => b.as_bytes().unwrap(),
        }
    }
}

/// Times `sdk/<name>` and `engine/<name>` for `g` (built here on a CPU handle) whose inputs
/// are `inputs` (uid, buffer) and whose one output is `out` (uid, f32 elements).
fn rows(c: &mut Criterion, name: &str, mut g: Graph, inputs: &[(i64, In)], out: (i64, usize)) {
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let mut y = Buffer::<f32>::zeros(out.1);
    let mut grp = c.benchmark_group("cpu_execute_overhead");
    grp.bench_function(format!("sdk/{name}"), |b| {
        b.iter(|| {
            let mut pack = VariantPack::new();
            for (u, buf) in inputs {
                pack = match buf {
                    In::F32(buf) => pack.with(*u, buf),
                    In::I64(buf) => pack.with(*u, buf),
                };
            }
            g.execute(&handle, pack.with(out.0, &mut y), None).unwrap()
        })
    });
    let ctx = engine_context(&g);
    let mut yb = Buffer::<f32>::zeros(out.1);
    grp.bench_function(format!("engine/{name}"), |b| {
        b.iter(|| {
            let mut t: Vec<TensorBinding<'_>> = inputs
                .iter()
                .map(|(u, b)| TensorBinding {
                    uid: *u,
                    data: BufferRef::Host(b.bytes()),
                })
                .collect();
            t.push(TensorBinding {
                uid: out.0,
                data: Bind::bind(&mut yb),
            });
            ctx.execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: black_box(&mut t),
            })
            .unwrap()
        })
    });
    grp.finish();
}

fn f32s(n: usize) -> In {
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    In::F32(Buffer::from_slice(&v))
}

fn bench(c: &mut Criterion) {
    // 1-element identity.
    let mut g = f32_graph("pw");
    let a = tensor(&mut g, "a", 1, DataType::Float, &[1, 1, 1, 1]);
    let y = g.pointwise_unary(a, PointwiseAttributes::with_mode(PointwiseMode::Identity));
    g.set_output(y, true).set_uid(y, 4);
    rows(c, "pointwise_1", g, &[(1, f32s(1))], (4, 1));

    // One sentence's word-embedding rows.
    let n = 16usize;
    let mut g = f32_graph("gather");
    let table = tensor(&mut g, "table", 1, DataType::Float, &[VOCAB, H]);
    let ids = tensor(&mut g, "ids", 2, DataType::Int64, &[n as i64]);
    let y = g.gather(table, ids);
    g.set_output(y, true).set_uid(y, 3);
    let id_vals: Vec<i64> = (0..n).map(|i| (i * 7919) as i64 % VOCAB).collect();
    rows(
        c,
        "gather_16",
        g,
        &[
            (1, f32s((VOCAB * H) as usize)),
            (2, In::I64(Buffer::from_slice(&id_vals))),
        ],
        (3, n * H as usize),
    );

    // Layernorm of 16 rows of 384.
    let rows_n = 16i64;
    let mut g = f32_graph("layernorm");
    let x = tensor(&mut g, "x", 1, DataType::Float, &[1, 1, rows_n, H]);
    let gamma = tensor(&mut g, "gamma", 2, DataType::Float, &[1, 1, 1, H]);
    let beta = tensor(&mut g, "beta", 3, DataType::Float, &[1, 1, 1, H]);
    let e = g.tensor(
        TensorAttributes::scalar(TensorValue::Float32(1e-12))
            .name("eps")
            .uid(5),
    );
    let attrs = LayernormAttributes::new()
        .epsilon(e)
        .forward_phase(NormFwdPhase::Inference);
    let y = g.layernorm(x, gamma, beta, attrs).0;
    g.set_output(y, true).set_uid(y, 4);
    rows(
        c,
        "layernorm_16x384",
        g,
        &[
            (1, f32s((rows_n * H) as usize)),
            (2, f32s(H as usize)),
            (3, f32s(H as usize)),
        ],
        (4, (rows_n * H) as usize),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
