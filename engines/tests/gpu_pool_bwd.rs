//! GPU test of the pool_bwd Triton family (`hipkernel.resample_bwd.dispatch.v1`): resample
//! backward graphs of `pool_bwd_support::gpu_cases` (every mode over overlapping 3×3 stride-2
//! windows with padding, 2×2 stride 2, a window wider than its stride, 1-D and 3-D, a global
//! average, ResNet-50's stem pool at batch 2; f32, f16 and bf16; INT32 and INT64 indices;
//! packed, channels-last and strided layouts) built through the GPU ingestor engine
//! (`hipdnn_engines::gpu::open`, kernels from `HIPDNN_KERNEL_DIR` or the committed
//! `engines/kernels/packed/<arch>/`), executed on device 0 twice (the same bits: no atomics),
//! compared with the CPU reference engine's dx, then saved → restored on a second engine →
//! executed: the same bits.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Tolerances, per element against the CPU reference (`r` its value):
//! `reference::testing::tolerance(dt, true)`: |d| ≤ 1e-4·(1 + |r|) f32, 1e-2 f16, 2e-2 bf16
//! (both sum in f32, in other orders).

mod batch_rows_support;
mod batchnorm_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_bwd_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{bound_specs, gpu_execute};
use hipdnn_backend::engine::{Engine, EngineConfig};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu;
use hipdnn_engines::reference::testing::{run_graph, tolerance};
use pool_bwd_support::{DX, gpu_cases};

fn bits(v: &[Vec<f32>]) -> Vec<Vec<u32>> {
    v.iter()
        .map(|o| o.iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn gpu_pool_backward_matches_the_cpu_reference_and_restores_bit_identically() {
    let (g, g2) = match (gpu::open(0), gpu::open(0)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: {e}");
            return;
        }
    };
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let (e, e2) = (g.engines[0].clone(), g2.engines[0].clone());
    let cfg = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    };
    for (i, c) in gpu_cases().iter().enumerate() {
        let og = OperationGraph::from_bytes(&c.graph().build()).unwrap();
        let ins = c.inputs(60 + i as u64);
        let specs = bound_specs(&c.graph(), &ins, &[DX]);
        let ctx = e
            .create_execution_context(&cfg, &og)
            .unwrap_or_else(|x| panic!("{c:?}: build: {}", x.message));
        let got = gpu_execute(&g, ctx.as_ref(), &specs, &ins, &[DX]).unwrap();
        let again = gpu_execute(&g, ctx.as_ref(), &specs, &ins, &[DX]).unwrap();
        assert_eq!(bits(&got), bits(&again), "{c:?}: a second execute differs");
        let want = run_graph(c.graph(), &ins, &[DX]).expect("cpu reference");
        let tol = tolerance(c.dt, true);
        let mut worst = 0f32;
        for (k, (a, r)) in got[0].iter().zip(&want[0]).enumerate() {
            let d = (a - r).abs() / (1.0 + r.abs());
            assert!(
                d <= tol,
                "{c:?}: dx element {k}: gpu {a}, cpu {r} (tol {tol})"
            );
            worst = worst.max(d);
        }
        let saved = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let restored = e2
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&saved)
            .unwrap_or_else(|x| panic!("{c:?}: restore: {}", x.message));
        let third = gpu_execute(&g2, restored.as_ref(), &specs, &ins, &[DX]).unwrap();
        assert_eq!(bits(&got), bits(&third), "{c:?}: restored execute differs");
        println!(
            "{:?} {:?} x {:?} window {:?} stride {:?} layout {}: max |d|/(1+|r|) {worst:.2e}, restored bit-identical",
            c.mode, c.dt, c.xd, c.window, c.stride, c.layout
        );
    }
}
