//! Small-M matmul on a CPU handle (issue 30): the Q/K/V, FFN-up and FFN-down projections of
//! MiniLM at 16 and 24 tokens (`M×384 · 384×384`, `M×384 · 384×1536`, `M×1536 · 1536×384`),
//! f32, B column-major (`_bcol`: PyTorch `Linear` weights bound as they are, `(K, N)` with
//! strides `(1, K)`) and row-major (`_brow`: the weights transposed once at load, as the
//! MiniLM example does). Each row is one `Graph::execute` through the SDK with a `VariantPack`
//! built per call, as a user writes it.
//!
//! ```text
//! cargo bench -p hipdnn --no-default-features --bench cpu_small_matmul
//! ```
//!
//! The throughput is set to the product's FLOPs (`2·M·K·N`) as elements, so criterion's
//! `Gelem/s` reads as GFLOP/s.

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use hipdnn::{Buffer, DataType, Graph, Handle, MatmulAttributes, TensorAttributes, VariantPack};

fn bench(c: &mut Criterion) {
    let handle = Handle::cpu().unwrap();
    let mut group = c.benchmark_group("cpu_small_matmul");
    let shapes = [
        (16usize, 384usize, 384usize, false),
        (16, 384, 1536, false),
        (16, 1536, 384, false),
        (16, 384, 384, true),
        (16, 384, 1536, true),
        (16, 1536, 384, true),
        (24, 384, 384, true),
        (24, 384, 1536, true),
    ];
    for (m, k, n, col) in shapes {
        let (mi, ki, ni) = (m as i64, k as i64, n as i64);
        let mut g = Graph::new();
        let a = g.tensor(
            TensorAttributes::new("a")
                .data_type(DataType::Float)
                .uid(1)
                .dims(vec![1, mi, ki])
                .strides(vec![mi * ki, ki, 1]),
        );
        // Column-major B: element (k, n) at n·K + k; row-major: at k·N + n.
        let b_strides = if col {
            vec![ki * ni, 1, ki]
        } else {
            vec![ki * ni, ni, 1]
        };
        let b = g.tensor(
            TensorAttributes::new("b")
                .data_type(DataType::Float)
                .uid(2)
                .dims(vec![1, ki, ni])
                .strides(b_strides),
        );
        let y = g.matmul(a, b, MatmulAttributes::new());
        g.set_output(y, true).set_uid(y, 3);
        g.build(&handle).unwrap();
        let av: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7) % 13) as f32 * 0.125 - 0.75)
            .collect();
        let bv: Vec<f32> = (0..k * n)
            .map(|i| ((i * 5) % 11) as f32 * 0.0625 - 0.3)
            .collect();
        let (ab, bb) = (Buffer::from_slice(&av), Buffer::from_slice(&bv));
        let mut out = Buffer::<f32>::zeros(m * n);
        let mut ws = Buffer::<u8>::zeros(g.workspace_size().unwrap());
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        let layout = if col { "bcol" } else { "brow" };
        group.bench_function(format!("{m}x{k}x{n}_{layout}"), |bch| {
            bch.iter(|| {
                g.execute(
                    &handle,
                    VariantPack::new()
                        .input(1, &ab)
                        .input(2, &bb)
                        .output(3, &mut out),
                    Some(&mut ws),
                )
                .unwrap();
                black_box(&out);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
