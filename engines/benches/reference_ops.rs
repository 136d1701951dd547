//! CPU reference engine throughput: conv fprop (1×64×56×56 ⋆ 64×64×3×3, pad 1) and matmul
//! (512³), in GFLOP/s, next to numpy (OpenBLAS) on the same shapes in the same run.
//!
//! numpy runs in a `python3` subprocess with `OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE` unset
//! (this machine may set them); when python3 or numpy is missing the numpy line says so.

// `criterion_group!` generates an undocumented `pub fn benches`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use hipdnn_engines::reference::ops::conv::{ConvGeometry, conv_fprop};
use hipdnn_engines::reference::ops::matmul::matmul;
use ndarray::{ArrayD, IxDyn};
use std::process::Command;
use std::time::Instant;

fn filled(dims: &[usize]) -> ArrayD<f32> {
    let n: usize = dims.iter().product();
    ArrayD::from_shape_vec(
        IxDyn(dims),
        (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
            .collect(),
    )
    .expect("dims")
}

/// Python prelude: prints one line naming the BLAS numpy uses (threadpoolctl when installed,
/// else numpy's build config), before the GFLOP/s line.
const BLAS_INFO: &str = r#"import numpy as np, time
try:
    from threadpoolctl import threadpool_info
    i = [d for d in threadpool_info() if d.get('user_api') == 'blas']
    print('blas: ' + '; '.join('%s %s (%s, %s threads)' % (d.get('internal_api'), d.get('version'), d.get('architecture'), d.get('num_threads')) for d in i))
except ImportError:
    c = np.show_config(mode='dicts')
    print('blas: ' + str(c.get('Build Dependencies', {}).get('blas', {}).get('name', 'unknown')) + ' (threadpoolctl not installed)')
"#;

/// numpy's GFLOP/s for the same problem and the BLAS line, or `None` when python3 or numpy
/// is missing.
fn numpy_gflops(kind: &str) -> Option<(f64, String)> {
    let body = match kind {
        "conv" => {
            "x=np.random.rand(1,64,58,58).astype(np.float32)\nw=np.random.rand(64,576).astype(np.float32)\n\
from numpy.lib.stride_tricks import sliding_window_view as sw\n\
def f():\n c=sw(x[0],(3,3),axis=(1,2)).transpose(0,3,4,1,2).reshape(576,56*56)\n return w@c\n\
f();t=time.perf_counter();n=10\nfor _ in range(n): f()\n\
print(2*64*576*56*56*n/(time.perf_counter()-t)/1e9)"
        }
        _ => {
            "a=np.random.rand(512,512).astype(np.float32)\nb=np.random.rand(512,512).astype(np.float32)\n\
a@b;t=time.perf_counter();n=20\nfor _ in range(n): a@b\nprint(2*512**3*n/(time.perf_counter()-t)/1e9)"
        }
    };
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!("{BLAS_INFO}{body}"))
        .env_remove("OPENBLAS_CORETYPE")
        .env_remove("OPENBLAS_L2_SIZE")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let blas = lines.next()?.to_string();
    let g = lines.next()?.trim().parse().ok()?;
    Some((g, blas))
}

fn report(kind: &str, shape: &str, flops: f64, secs: f64) {
    let ours = flops / secs / 1e9;
    match numpy_gflops(kind) {
        Some((np, blas)) => println!(
            "{kind} {shape}: reference {ours:.2} GFLOP/s, numpy {np:.2} GFLOP/s, ratio reference/numpy {:.3}  [numpy {blas}; rayon threads {}]",
            ours / np,
            rayon::current_num_threads()
        ),
        None => println!(
            "{kind} {shape}: reference {ours:.2} GFLOP/s; numpy skipped: python3 with numpy unavailable"
        ),
    }
}

fn bench(c: &mut Criterion) {
    let x = filled(&[1, 64, 56, 56]);
    let w = filled(&[64, 64, 3, 3]);
    let geo = ConvGeometry {
        pre: vec![1, 1],
        post: vec![1, 1],
        stride: vec![1, 1],
        dilation: vec![1, 1],
        flip: false,
    };
    let y_dims = [1, 64, 56, 56];
    let conv_flops = 2.0 * 64.0 * 64.0 * 9.0 * 56.0 * 56.0;
    c.bench_function("conv_fprop_1x64x56x56_k64_3x3", |b| {
        b.iter(|| conv_fprop(&x, &w, &y_dims, &geo))
    });
    let t = Instant::now();
    let n = 5;
    for _ in 0..n {
        std::hint::black_box(conv_fprop(&x, &w, &y_dims, &geo));
    }
    report(
        "conv",
        "1x64x56x56 * 64x64x3x3 pad 1",
        conv_flops * n as f64,
        t.elapsed().as_secs_f64(),
    );

    let a = filled(&[512, 512]);
    let bm = filled(&[512, 512]);
    c.bench_function("matmul_512", |b| {
        b.iter(|| matmul(&a, &bm, &[512, 512]).expect("dims"))
    });
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(matmul(&a, &bm, &[512, 512]).expect("dims"));
    }
    report(
        "matmul",
        "512x512x512",
        2.0 * 512f64.powi(3) * n as f64,
        t.elapsed().as_secs_f64(),
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
