//! Fusion legality of the CPU reference engine (issue 37, classes 4 and 6): epilogue fusion must
//! never change the math — not across a nonlinearity, not when the ADDs come in another order,
//! not at odd channel counts. Every chain of up to three pointwise nodes drawn from ADD(bias),
//! ADD(residual), a clipped leaky RELU and SIGMOID, in every order, after a conv (odd channels
//! C = 3 → K = 5 with 3×3 and 1×1 filters; 16 → 16 3×3, the Winograd path) or a batched matmul
//! (M = 5 and M = 33, odd K and N), runs with virtual FLOAT intermediates (the plan fuses what
//! it may) and with every intermediate bound (node by node): the outputs must be bit-identical.

mod fusion_legality_support;

use fusion_legality_support::{Kind, St, chains, graph, inputs};
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as M};

fn run(kind: Kind, chain: &[St], fused: bool) -> Vec<u32> {
    let (g, out, mids) = graph(kind, DT::FLOAT, chain, fused);
    let mut outs = vec![out];
    if !fused {
        outs.extend(mids);
    }
    let r = run_graph(g, &inputs(kind), &outs).expect("runs");
    r[0].iter().map(|v| v.to_bits()).collect()
}

#[test]
fn fusion_never_changes_a_bit_in_any_order_or_at_odd_channel_counts() {
    let conv = |c, k, f| Kind::Conv {
        c,
        k,
        f,
        nhwc: false,
    };
    let kinds = [
        conv(3, 5, 3),
        conv(3, 5, 1),
        conv(16, 16, 3),
        Kind::Matmul { m: 5, k: 7, n: 5 },
        Kind::Matmul { m: 33, k: 9, n: 3 },
    ];
    let steps = [St::Bias, St::Res, St::ClippedRelu, St::Act(M::SIGMOID_FWD)];
    let chains = chains(&steps, 3);
    assert_eq!(chains.len(), 1 + 4 + 12 + 24);
    for kind in kinds {
        for chain in &chains {
            assert_eq!(
                run(kind, chain, true),
                run(kind, chain, false),
                "{kind:?} then {chain:?}: the fused plan differs from the node-by-node run"
            );
        }
    }
}
