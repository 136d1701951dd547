//! The CPU reference engine folds `conv_fprop → ADD(bias) → activation` chains into the GEMM
//! output pass only where that changes no bit: a fused graph (virtual FLOAT intermediates)
//! gives exactly the output of the same graph run node by node (bound intermediates), in
//! NCHW and NHWC, with and without each pointwise node; a HALF intermediate (rounded between
//! the nodes) is not folded and keeps its rounding.

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, pw_args, random_values, run_graph,
};
use hipdnn_schema::graph::{DataType as DT, PointwiseAttributesArgs, PointwiseMode as M};

const X: i64 = 1;
const W: i64 = 2;
const Y: i64 = 3;
const B: i64 = 4;
const T: i64 = 5;
const Z: i64 = 6;

/// Which pointwise nodes follow the conv.
#[derive(Clone, Copy)]
struct Chain {
    bias: bool,
    act: Option<M>,
}

/// conv (x 2×6×13×11, w 8×3×3×3 in 2 groups, pad 1, stride 1) → [ADD bias (1,8,1,1)] →
/// [activation]; `fused`: intermediates virtual with type `mid`, else bound FLOAT outputs.
fn graph(chain: Chain, fused: bool, mid: DT, nhwc: bool) -> (GraphBuilder, i64) {
    let (xd, wd, yd, bd) = (
        [2i64, 6, 13, 11],
        [8i64, 3, 3, 3],
        [2i64, 8, 13, 11],
        [1i64, 8, 1, 1],
    );
    let lay = |t: TensorSpec| if nhwc { t.channels_last() } else { t };
    let inter = |u: i64, n: &str| {
        let t = lay(TensorSpec::new(
            u,
            n,
            if fused { mid } else { DT::FLOAT },
            &yd,
        ));
        if fused { t.virtual_() } else { t }
    };
    let mut g = GraphBuilder::new("fusion");
    g.tensor(lay(TensorSpec::new(X, "x", DT::FLOAT, &xd)))
        .tensor(TensorSpec::new(W, "w", DT::FLOAT, &wd))
        .tensor(lay(TensorSpec::new(B, "b", DT::FLOAT, &bd)));
    let last_is_y = !chain.bias && chain.act.is_none();
    g.tensor(if last_is_y {
        lay(TensorSpec::new(Y, "y", DT::FLOAT, &yd))
    } else {
        inter(Y, "y")
    });
    g.conv_fprop(
        "conv",
        X,
        W,
        Y,
        &ConvGeometry {
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![1, 1],
            dilation: vec![1, 1],
            flip: false,
        },
    );
    let mut cur = Y;
    if chain.bias {
        let out = if chain.act.is_some() { T } else { Z };
        g.tensor(if out == Z {
            lay(TensorSpec::new(Z, "z", DT::FLOAT, &yd))
        } else {
            inter(T, "t")
        });
        // bias first, to check that the operand order does not matter.
        g.pointwise("add", pw(M::ADD, &[B, cur], out));
        cur = out;
    }
    if let Some(m) = chain.act {
        g.tensor(lay(TensorSpec::new(Z, "z", DT::FLOAT, &yd)));
        g.pointwise("act", pw(m, &[cur], Z));
        cur = Z;
    }
    (g, cur)
}

/// [`pw_args`] with RELU's clips and slope set (other modes ignore them).
fn pw(m: M, ins: &[i64], out: i64) -> PointwiseAttributesArgs {
    PointwiseAttributesArgs {
        relu_lower_clip: Some(-0.2),
        relu_upper_clip: Some(0.5),
        relu_lower_clip_slope: Some(0.1),
        ..pw_args(m, ins, out)
    }
}

fn inputs() -> Vec<(i64, Vec<f32>)> {
    vec![
        (X, random_values(2 * 6 * 13 * 11, 1, -1.0, 1.0)),
        (W, random_values(8 * 3 * 9, 2, -1.0, 1.0)),
        (B, random_values(8, 3, -1.0, 1.0)),
    ]
}

fn run(chain: Chain, fused: bool, mid: DT, nhwc: bool) -> Vec<u32> {
    let (g, out) = graph(chain, fused, mid, nhwc);
    let mut outs = vec![out];
    if !fused {
        // Bind the intermediates too (outputs of the node-by-node run).
        if out != Y {
            outs.push(Y);
        }
        if chain.bias && chain.act.is_some() {
            outs.push(T);
        }
    }
    let r = run_graph(g, &inputs(), &outs).expect("runs");
    r[0].iter().map(|v| v.to_bits()).collect()
}

#[test]
fn fused_conv_epilogue_graph_equals_the_node_by_node_graph() {
    let chains = [
        Chain {
            bias: true,
            act: Some(M::RELU_FWD),
        },
        Chain {
            bias: true,
            act: Some(M::GELU_FWD),
        },
        Chain {
            bias: true,
            act: None,
        },
        Chain {
            bias: false,
            act: Some(M::SIGMOID_FWD),
        },
    ];
    for (i, chain) in chains.into_iter().enumerate() {
        for nhwc in [false, true] {
            let fused = run(chain, true, DT::FLOAT, nhwc);
            let plain = run(chain, false, DT::FLOAT, nhwc);
            assert_eq!(fused, plain, "chain {i}, nhwc {nhwc}");
        }
    }
}

#[test]
fn half_intermediate_is_not_folded_and_keeps_its_rounding() {
    let chain = Chain {
        bias: true,
        act: Some(M::RELU_FWD),
    };
    let half = run(chain, true, DT::HALF, false);
    let float = run(chain, true, DT::FLOAT, false);
    assert_ne!(
        half, float,
        "the HALF intermediates must round the values between nodes"
    );
    // Node by node with the rounding applied by hand equals the HALF graph.
    let (g, _) = graph(chain, false, DT::FLOAT, false);
    let r = run_graph(g, &inputs(), &[Z, Y, T]).unwrap();
    let y16: Vec<f32> = r[1]
        .iter()
        .map(|&v| half::f16::from_f32(v).to_f32())
        .collect();
    let b = &inputs()[2].1;
    let want: Vec<u32> = y16
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let t = half::f16::from_f32(v + b[(i / (13 * 11)) % 8]).to_f32();
            let z = if t <= -0.2 {
                0.1 * (t + 0.2) - 0.2
            } else {
                t.min(0.5)
            };
            z.to_bits()
        })
        .collect();
    assert_eq!(half, want);
}
