//! Issue 37, classes 4 and 6 without a device: on a fake sm_90 and a fake gfx942 device the GPU
//! engine serves a conv fprop or matmul followed by a chain of pointwise nodes exactly when its
//! fused epilogue computes that chain in the graph's order (`epilogue_computes`: scale, bias,
//! residual, one activation, residual; never across a clipped RELU or out of order), at odd
//! channel counts too. Every other chain is refused at build, so it falls to an engine that runs
//! it node by node. The served plans launch; `gpu_fusion_legality.rs` runs them on a device
//! against the CPU reference. Also checked here: the comparison that test uses tells apart a
//! chain from the same steps in another order.

#[path = "ingestor_support.rs"]
mod support;

mod batch_rows_support;
mod batchnorm_support;
mod fusion_legality_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{ingestor_plan, other_kernel_tolerance};
use fusion_legality_support::{
    St, chains, epilogue_computes, gpu_producers, gpu_steps, graph, inputs, within,
};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as M};

#[test]
fn the_gpu_engine_fuses_exactly_the_chains_its_epilogue_computes_in_order() {
    let chains = chains(&gpu_steps(), 3);
    assert_eq!(chains.len(), 1 + 10 + 90 + 720);
    let legal = chains.iter().filter(|c| epilogue_computes(c)).count();
    for arch in ["sm_90", "gfx942"] {
        let (e, _dev) = support::fake_gpu_engine(arch);
        let mut served_producers = Vec::new();
        for (kind, dt) in gpu_producers() {
            let mut served = 0;
            let mut base_refusal = None;
            for chain in &chains {
                let (g, _, _) = graph(kind, dt, chain, true);
                let og = OperationGraph::from_bytes(&g.build()).unwrap();
                let got = ingestor_plan(&e, &og, None);
                if chain.is_empty() {
                    if let Err(why) = &got {
                        base_refusal = Some(why.clone());
                    }
                }
                let want = base_refusal.is_none() && epilogue_computes(chain);
                match (&got, want) {
                    (Ok((_, kernel, _)), false) => panic!(
                        "{arch} {kind:?} {dt:?} then {chain:?}: served by {kernel}, which the \
                         epilogue cannot compute in this order"
                    ),
                    (Err(why), true) => panic!(
                        "{arch} {kind:?} {dt:?} then {chain:?}: refused ({why}), the epilogue \
                         computes it"
                    ),
                    (Ok(_), true) => served += 1,
                    (Err(_), false) => {}
                }
            }
            match base_refusal {
                None => {
                    assert_eq!(served, legal, "{arch} {kind:?} {dt:?}");
                    served_producers.push(format!("{kind:?} {dt:?}"));
                }
                Some(why) => {
                    println!("{arch} {kind:?} {dt:?}: the producer alone is refused: {why}")
                }
            }
        }
        println!(
            "{arch}: {legal} of {} chains served after each of {} producers: {served_producers:?}",
            chains.len(),
            served_producers.len()
        );
        // The odd-channel convs and the odd f32 matmul must be served, or the GPU test would
        // not test class 6 on them.
        assert!(served_producers.len() >= 7, "{arch}: {served_producers:?}");
    }
}

#[test]
fn the_comparison_tells_a_chain_from_its_steps_in_another_order() {
    // What a fuser that moved the bias past the activation, or took a residual before the
    // activation for one after it, would compute, judged by the GPU test's comparison.
    let kind = gpu_producers()[4].0;
    let run = |chain: &[St]| {
        let (g, out, _) = graph(kind, DT::FLOAT, chain, true);
        run_graph(g, &inputs(kind), &[out]).unwrap().remove(0)
    };
    let tol = other_kernel_tolerance(DT::FLOAT);
    let pairs = [
        (
            vec![St::Bias, St::Act(M::SIGMOID_FWD)],
            vec![St::Act(M::SIGMOID_FWD), St::Bias],
        ),
        (
            vec![St::Res, St::Act(M::RELU_FWD)],
            vec![St::Act(M::RELU_FWD), St::Res],
        ),
        (
            vec![St::Scale, St::Bias, St::Act(M::TANH_FWD)],
            vec![St::Bias, St::Scale, St::Act(M::TANH_FWD)],
        ),
        (vec![St::Act(M::RELU_FWD)], vec![St::ClippedRelu]),
    ];
    for (a, b) in pairs {
        assert!(within(&run(&a), &run(&a), tol).is_ok());
        let err = within(&run(&b), &run(&a), tol).expect_err("another order must differ");
        assert!(err.starts_with("element "), "{err}");
    }
}
