//! Issue 37, classes 4 and 6 on a GPU (OpenCV folded a batchnorm into a conv across a ReLU;
//! TensorFlow turned off cuDNN's conv-bias-activation fusion after wrong results at odd channel
//! counts): every chain of up to three pointwise steps (scale, bias, residual, a clipped RELU,
//! RELU, GELU, GELU-tanh, sigmoid, tanh, SiLU; 821 orders) after each producer of
//! `gpu_producers` (matmul f32 at odd sizes, f16 and bf16; conv fprop f32 NCHW and 16-bit NHWC,
//! C = 3 → K = 5 with 3×3 and 1×1 filters, and aligned channels) is built on device 0's GPU
//! engine. A chain the fused epilogue computes in the graph's order must be served and its
//! output must equal the CPU reference engine's (which `reference_fusion_legality.rs` holds
//! bit-identical to the node-by-node run) within f32 1e-4·(1 + |r|), 16-bit one rounding; every
//! other chain must be refused at build, so no engine of the GPU computes it fused. Outputs
//! start as all-ones bytes (NaN), so an unwritten element fails.
//!
//! Without a GPU runtime, device or packed kernels for its architecture the test prints
//! `skipped: …` on stderr and passes; `triton_fusion_legality.rs` checks the same served set on
//! fake devices and that the comparison tells a chain from its steps in another order.

mod batch_rows_support;
mod batchnorm_support;
mod fusion_legality_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{gpu_run, other_kernel_tolerance};
use fusion_legality_support::{
    chains, epilogue_computes, gpu_producers, gpu_steps, graph, inputs, within,
};
use hipdnn_engines::gpu;
use hipdnn_engines::reference::testing::run_graph;
use std::collections::BTreeSet;

/// Prints `skipped: <why>` on the test process's stderr directly (the harness captures
/// `println!` of a passing test; a direct write shows in plain `cargo test` output).
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

#[test]
fn every_fused_gpu_epilogue_chain_matches_the_reference_or_is_refused_at_build() {
    let g = match gpu::open(0) {
        Ok(g) => g,
        Err(e) => return skipped(&e.to_string()),
    };
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let chains = chains(&gpu_steps(), 3);
    let mut failures = Vec::new();
    let (mut served, mut refused) = (0, 0);
    for (kind, dt) in gpu_producers() {
        let ins = inputs(kind);
        let tol = other_kernel_tolerance(dt);
        let (mut worst, mut kernels) = (0f32, BTreeSet::new());
        for chain in &chains {
            let label = format!("{kind:?} {dt:?} then {chain:?}");
            let (b, out, _) = graph(kind, dt, chain, true);
            match (gpu_run(&g, b, &ins, &[out], None), epilogue_computes(chain)) {
                (Ok(run), true) => {
                    let (b, out, _) = graph(kind, dt, chain, true);
                    let want = run_graph(b, &ins, &[out]).expect("the CPU engine runs it");
                    match within(&run.outputs[0], &want[0], tol) {
                        Ok(w) => worst = worst.max(w),
                        Err(e) => failures.push(format!("{label} ({}): {e}", run.kernel)),
                    }
                    kernels.insert(run.kernel);
                    served += 1;
                }
                (Ok(run), false) => failures.push(format!(
                    "{label}: served by {}, which the epilogue cannot compute in this order",
                    run.kernel
                )),
                (Err(e), false) if e.starts_with("build: ") => refused += 1,
                (Err(e), _) => failures.push(format!("{label}: {e}")),
            }
        }
        println!(
            "{kind:?} {dt:?}: worst |d|/(1+|r|) {worst:.2e} (tolerance {tol:.1e}) by {kernels:?}"
        );
    }
    println!(
        "{served} chains served and within tolerance, {refused} refused at build, {} failures",
        failures.len()
    );
    for f in &failures {
        println!("FAILED {f}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(served, 68 * gpu_producers().len());
}
