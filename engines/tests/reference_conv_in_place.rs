//! The CPU reference conv reads an aligned f32 host x and w in place (no per-execute copy of
//! the weights) and converts anything else: a bound filter in the dense `(K, C, R, S)` order
//! and the same filter bound in `(K, R, S, C)` order (channels-last strides), in both
//! convolution modes, give the same bits, equal to the graph whose filter is computed by a
//! node (an IDENTITY of the bound filter, held as a converted array).

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values, run_graph};
use hipdnn_schema::graph::{ConvMode, DataType as DT, PointwiseAttributesArgs, PointwiseMode as M};

const X: i64 = 1;
const W: i64 = 2;
const Y: i64 = 3;
const W2: i64 = 4;

/// conv x (2, 5, 9, 8) ⋆ w (6, 5, 3, 3), pad 1 → y; `nhwc_w`: w bound channels-last;
/// `computed_w`: the conv reads IDENTITY(w) instead of w.
fn graph(mode: ConvMode, nhwc_w: bool, computed_w: bool) -> GraphBuilder {
    let mut g = GraphBuilder::new("conv_in_place");
    let w = TensorSpec::new(W, "w", DT::FLOAT, &[6, 5, 3, 3]);
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &[2, 5, 9, 8]))
        .tensor(if nhwc_w { w.channels_last() } else { w })
        .tensor(TensorSpec::new(Y, "y", DT::FLOAT, &[2, 6, 9, 8]));
    let wu = if computed_w {
        g.tensor(TensorSpec::new(W2, "w2", DT::FLOAT, &[6, 5, 3, 3]).virtual_());
        g.pointwise(
            "copy",
            PointwiseAttributesArgs {
                operation: M::IDENTITY,
                in_0_tensor_uid: W,
                out_0_tensor_uid: W2,
                ..Default::default()
            },
        );
        W2
    } else {
        W
    };
    g.conv_fprop(
        "conv",
        X,
        wu,
        Y,
        &ConvGeometry {
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![1, 1],
            dilation: vec![1, 1],
            flip: mode == ConvMode::CONVOLUTION,
        },
    );
    g
}

#[test]
fn conv_with_a_filter_read_in_place_equals_the_converted_filter() {
    // Values in logical (K, C, R, S) order; the channels-last binding stores them permuted.
    let inputs = vec![
        (X, random_values(2 * 5 * 9 * 8, 31, -1.0, 1.0)),
        (W, random_values(6 * 5 * 9, 32, -1.0, 1.0)),
    ];
    for mode in [ConvMode::CROSS_CORRELATION, ConvMode::CONVOLUTION] {
        let run = |nhwc_w: bool, computed_w: bool| -> Vec<u32> {
            let r = run_graph(graph(mode, nhwc_w, computed_w), &inputs, &[Y]).expect("runs");
            r[0].iter().map(|v| v.to_bits()).collect()
        };
        let dense = run(false, false);
        assert_eq!(dense, run(true, false), "{mode:?}: channels-last filter");
        assert_eq!(dense, run(false, true), "{mode:?}: computed filter");
        assert_eq!(
            dense,
            run(true, true),
            "{mode:?}: computed channels-last filter"
        );
    }
}
