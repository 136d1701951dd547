//! The conv fprop family's `grouped` variant on a GPU (issue 33: depthwise and ResNeXt-style
//! grouped convolutions): every case of `conv_grouped_support::cases` is built on device 0's
//! GPU engine; the grouped cases must be served by the grouped entry (the others by another
//! conv fprop entry), and every output must equal the CPU reference engine's within f32
//! 1e-4·(1 + |r|), 16-bit one rounding. Each plan is then saved and restored on the same engine;
//! the restored plan's output must be bit-identical to the built one's.
//!
//! Without a GPU runtime, device or packed kernels for its architecture the test prints
//! `skipped: …` on stderr and passes; `triton_conv_grouped.rs` checks on fake devices which
//! entry serves each case and its launch.

mod batch_rows_support;
mod batchnorm_support;
mod conv_grouped_support;
mod fusion_legality_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{bound_specs, gpu_execute, ingestor_plan, other_kernel_tolerance};
use conv_grouped_support::{Y, cases, graph, inputs};
use fusion_legality_support::within;
use hipdnn_backend::engine::Engine;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu;
use hipdnn_engines::reference::testing::run_graph;

/// Prints `skipped: <why>` on the test process's stderr directly (the harness captures
/// `println!` of a passing test; a direct write shows in plain `cargo test` output).
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

#[test]
fn grouped_and_depthwise_convs_match_the_reference_and_restore_bit_identically() {
    let g = match gpu::open(0) {
        Ok(g) => g,
        Err(e) => return skipped(&e.to_string()),
    };
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let e = &g.engines[0];
    let mut failures = Vec::new();
    for (case, grouped) in cases() {
        let b = graph(&case);
        let ins = inputs(&case);
        let specs = bound_specs(&b, &ins, &[Y]);
        let og = OperationGraph::from_bytes(&b.build()).unwrap();
        let (ctx, kernel, _) = match ingestor_plan(e, &og, None) {
            Ok(p) => p,
            Err(err) => {
                failures.push(format!("{case:?}: {err}"));
                continue;
            }
        };
        if kernel.contains("_grouped_") != grouped {
            failures.push(format!("{case:?}: served by {kernel}"));
        }
        let run = gpu_execute(&g, ctx.as_ref(), &specs, &ins, &[Y]).expect("execute");
        let want = run_graph(graph(&case), &ins, &[Y]).expect("the CPU engine runs it");
        let tol = other_kernel_tolerance(case.dt);
        match within(&run[0], &want[0], tol) {
            Ok(w) => println!("{case:?}: {kernel}, worst |d|/(1+|r|) {w:.2e}"),
            Err(err) => failures.push(format!("{case:?} ({kernel}): {err}")),
        }
        let ser = e.serialization().expect("the GPU engine saves plans");
        let saved = ser
            .serialize_execution_context(e.id(), ctx.as_ref())
            .expect("save");
        let restored = ser
            .create_execution_context_from_serialized(&saved)
            .expect("restore");
        let again = gpu_execute(&g, restored.as_ref(), &specs, &ins, &[Y]).expect("execute");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        if bits(&again[0]) != bits(&run[0]) {
            failures.push(format!("{case:?}: the restored plan's output differs"));
        }
    }
    for f in &failures {
        println!("FAILED {f}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
