//! Graph serialization throughput: `to_graph_bytes` / `from_graph_bytes` (and JSON) on chains
//! of 10, 1 000 and 10 000 nodes. Criterion reports time and throughput (nodes/s via
//! `Throughput::Elements`, bytes via a second group); a println summary gives nodes/s and MB/s
//! from a direct timing loop.
//!
//! Run: `cargo bench -p hipdnn --bench graph_serialization`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hipdnn::*;

/// A connected chain of `nodes` nodes: conv → (pointwise add/mul with a per-node bias) ...
fn chain(nodes: usize) -> Graph {
    let mut g = Graph::new();
    g.set_name("bench")
        .set_io_data_type(DataType::Half)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .dims([8, 64, 56, 56])
            .packed_nhwc(),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .dims([64, 64, 3, 3])
            .packed_nhwc(),
    );
    let mut y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    for i in 1..nodes {
        let b = g.tensor(
            TensorAttributes::new(format!("bias{i}"))
                .dims([1, 64, 1, 1])
                .packed_nhwc(),
        );
        let mode = if i % 2 == 0 {
            PointwiseMode::Add
        } else {
            PointwiseMode::Mul
        };
        y = g.pointwise(y, b, PointwiseAttributes::with_mode(mode));
    }
    g.set_output(y, true);
    g.assign_uids();
    g
}

fn summary(nodes: usize, g: &Graph, bytes: &[u8]) {
    let reps = (20_000 / nodes).clamp(3, 2000);
    let t = Instant::now();
    for _ in 0..reps {
        black_box(g.to_graph_bytes().unwrap());
    }
    let ser = t.elapsed() / reps as u32;
    let t = Instant::now();
    for _ in 0..reps {
        black_box(Graph::from_graph_bytes(bytes).unwrap());
    }
    let de = t.elapsed() / reps as u32;
    let rate = |d: Duration| {
        (
            nodes as f64 / d.as_secs_f64(),
            bytes.len() as f64 / d.as_secs_f64() / 1e6,
        )
    };
    let ((sn, sm), (dn, dm)) = (rate(ser), rate(de));
    println!(
        "graph_serialization summary: {nodes:>6} nodes, {:>8} bytes | to_graph_bytes {ser:>10.1?} ({sn:>12.0} nodes/s, {sm:>8.1} MB/s) | from_graph_bytes {de:>10.1?} ({dn:>12.0} nodes/s, {dm:>8.1} MB/s)",
        bytes.len()
    );
}

fn bench(c: &mut Criterion) {
    for nodes in [10usize, 1_000, 10_000] {
        let g = chain(nodes);
        let bytes = g.to_graph_bytes().unwrap();
        let json = g.to_json().unwrap(); // upstream's format
        summary(nodes, &g, &bytes);

        let mut by_nodes = c.benchmark_group("graph_nodes");
        by_nodes
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        by_nodes.throughput(Throughput::Elements(nodes as u64));
        by_nodes.bench_with_input(BenchmarkId::new("to_graph_bytes", nodes), &g, |b, g| {
            b.iter(|| g.to_graph_bytes().unwrap())
        });
        by_nodes.bench_with_input(
            BenchmarkId::new("from_graph_bytes", nodes),
            &bytes,
            |b, d| b.iter(|| Graph::from_graph_bytes(d).unwrap()),
        );
        by_nodes.bench_with_input(BenchmarkId::new("to_json", nodes), &g, |b, g| {
            b.iter(|| g.to_json().unwrap())
        });
        by_nodes.bench_with_input(BenchmarkId::new("from_json", nodes), &json, |b, j| {
            b.iter(|| Graph::from_json(j).unwrap())
        });
        // The legacy field-for-field JSON (Graph::to_flatbuffer_json), for comparison.
        let legacy = g.to_flatbuffer_json().unwrap();
        by_nodes.bench_with_input(BenchmarkId::new("to_flatbuffer_json", nodes), &g, |b, g| {
            b.iter(|| g.to_flatbuffer_json().unwrap())
        });
        by_nodes.bench_with_input(
            BenchmarkId::new("from_flatbuffer_json", nodes),
            &legacy,
            |b, j| b.iter(|| Graph::from_flatbuffer_json(j).unwrap()),
        );
        by_nodes.finish();

        let mut by_bytes = c.benchmark_group("graph_bytes");
        by_bytes
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        by_bytes.throughput(Throughput::Bytes(bytes.len() as u64));
        by_bytes.bench_with_input(
            BenchmarkId::new("from_graph_bytes", nodes),
            &bytes,
            |b, d| b.iter(|| Graph::from_graph_bytes(d).unwrap()),
        );
        by_bytes.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
