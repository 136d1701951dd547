//! The CPU reference engine recycles the memory of values released after their last reader
//! for later op outputs (`ops::recycle`: stale contents, every element overwritten): a
//! chain of layers whose outputs reuse each other's buffers (EXP → Winograd conv + RELU →
//! 1×1 conv + residual → grouped 3×3 conv) gives exactly the bits of the same kernels run
//! one by one on fresh arrays, on every execute.

use hipdnn_engines::reference::ops::conv::{ConvGeometry, conv_fprop};
use hipdnn_engines::reference::ops::pointwise::{PointwiseParams, unary};
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, pw_args, random_values, run_graph,
};
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as M};
use ndarray::{ArrayD, IxDyn};

const X: i64 = 1;
const W1: i64 = 2;
const W2: i64 = 3;
const W3: i64 = 4;
const E: i64 = 10;
const Y1: i64 = 11;
const R1: i64 = 12;
const Y2: i64 = 13;
const S: i64 = 14;
const OUT: i64 = 15;

const D: [i64; 4] = [1, 16, 64, 64];

fn conv(g: &mut GraphBuilder, x: i64, w: i64, y: i64, pad: usize) {
    g.conv_fprop("conv", x, w, y, &geo(pad));
}

fn graph() -> GraphBuilder {
    let mut g = GraphBuilder::new("recycle");
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &D))
        .tensor(TensorSpec::new(W1, "w1", DT::FLOAT, &[16, 16, 3, 3]))
        .tensor(TensorSpec::new(W2, "w2", DT::FLOAT, &[16, 16, 1, 1]))
        .tensor(TensorSpec::new(W3, "w3", DT::FLOAT, &[16, 8, 3, 3]))
        .tensor(TensorSpec::new(OUT, "out", DT::FLOAT, &D));
    for u in [E, Y1, R1, Y2, S] {
        g.tensor(TensorSpec::new(u, &format!("t{u}"), DT::FLOAT, &D).virtual_());
    }
    g.pointwise("exp", pw_args(M::EXP, &[X], E));
    conv(&mut g, E, W1, Y1, 1);
    g.pointwise("relu", pw_args(M::RELU_FWD, &[Y1], R1));
    conv(&mut g, R1, W2, Y2, 0);
    g.pointwise("residual", pw_args(M::ADD, &[Y2, E], S));
    conv(&mut g, S, W3, OUT, 1);
    g
}

fn geo(pad: usize) -> ConvGeometry {
    ConvGeometry {
        pre: vec![pad; 2],
        post: vec![pad; 2],
        stride: vec![1; 2],
        dilation: vec![1; 2],
        flip: false,
    }
}

#[test]
fn layers_on_recycled_buffers_give_the_bits_of_fresh_kernels() {
    let n = 16 * 64 * 64;
    let inputs = vec![
        (X, random_values(n, 41, -1.0, 1.0)),
        (W1, random_values(16 * 16 * 9, 42, -0.2, 0.2)),
        (W2, random_values(16 * 16, 43, -0.5, 0.5)),
        (W3, random_values(16 * 8 * 9, 44, -0.2, 0.2)),
    ];
    let arr = |dims: &[usize], v: &[f32]| ArrayD::from_shape_vec(IxDyn(dims), v.to_vec()).unwrap();
    let d = [1usize, 16, 64, 64];
    let relu = PointwiseParams::defaults(M::RELU_FWD);
    let exp = PointwiseParams {
        mode: M::EXP,
        ..relu
    };
    let e = arr(&d, &inputs[0].1).mapv(|v| unary(&exp, v));
    let y1 = conv_fprop(&e, &arr(&[16, 16, 3, 3], &inputs[1].1), &d, &geo(1));
    let r1 = y1.mapv(|v| unary(&relu, v));
    let y2 = conv_fprop(&r1, &arr(&[16, 16, 1, 1], &inputs[2].1), &d, &geo(0));
    let s = &y2 + &e;
    let want = conv_fprop(&s, &arr(&[16, 8, 3, 3], &inputs[3].1), &d, &geo(1));
    let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
    for round in 0..3 {
        let got = run_graph(graph(), &inputs, &[OUT]).expect("runs");
        let got: Vec<u32> = got[0].iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "execute {round}");
    }
}
