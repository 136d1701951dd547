//! The CPU reference engine applies the op tables of `hipdnn_backend::ops`: conv output extents
//! (odd padding/stride/dilation, a filter that does not fit, overflow), pointwise arity and the
//! `GEN_INDEX` axis, reduction operators. Messages are the engine's refusal texts.

use hipdnn_backend::ops::conv::{Window, output_extent};
use hipdnn_backend::{Engine, OperationGraph, PluginStatus};
use hipdnn_engines::reference::ReferenceEngine;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_schema::graph::{
    ConvMode, ConvolutionFwdAttributes, ConvolutionFwdAttributesArgs, DataType as DT,
    NodeAttributes, PointwiseAttributesArgs, PointwiseMode, ReductionAttributes,
    ReductionAttributesArgs, ReductionMode,
};

/// Applicability of a graph: `Ok(())` or (status, message).
fn check(g: GraphBuilder) -> Result<(), (PluginStatus, String)> {
    let graph = OperationGraph::from_bytes(&g.build()).expect("graph");
    ReferenceEngine::new()
        .check_applicable(&graph)
        .map_err(|e| (e.status, e.message))
}

/// conv x (1, 2, 11, 10) ⋆ w (4, 2, kh, kw) → y `y_dims`, with 2-entry geometry lists.
fn conv(
    kh: i64,
    kw: i64,
    y_dims: &[i64],
    pre: [i64; 2],
    post: [i64; 2],
    stride: [i64; 2],
    dil: [i64; 2],
) -> GraphBuilder {
    let mut g = GraphBuilder::new("conv");
    g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[1, 2, 11, 10]))
        .tensor(TensorSpec::new(2, "w", DT::FLOAT, &[4, 2, kh, kw]))
        .tensor(TensorSpec::new(3, "y", DT::FLOAT, y_dims));
    g.node(
        "Conv_0",
        Box::new(move |fbb| {
            let (pre, post) = (fbb.create_vector(&pre), fbb.create_vector(&post));
            let (stride, dil) = (fbb.create_vector(&stride), fbb.create_vector(&dil));
            let a = ConvolutionFwdAttributes::create(
                fbb,
                &ConvolutionFwdAttributesArgs {
                    x_tensor_uid: 1,
                    w_tensor_uid: 2,
                    y_tensor_uid: 3,
                    pre_padding: Some(pre),
                    post_padding: Some(post),
                    stride: Some(stride),
                    dilation: Some(dil),
                    conv_mode: ConvMode::CROSS_CORRELATION,
                },
            );
            (NodeAttributes::ConvolutionFwdAttributes, a.as_union_value())
        }),
    );
    g
}

#[test]
fn conv_output_dims_follow_the_table_for_odd_geometry() {
    let (pre, post, stride, dil) = ([1, 0], [2, 3], [3, 2], [2, 3]);
    let ext = |i: usize, input: i64, k: i64| {
        output_extent(
            input,
            k,
            Window {
                pre: pre[i],
                post: post[i],
                stride: stride[i],
                dilation: dil[i],
            },
        )
        .unwrap()
    };
    // 11 + 1 + 2 - 2*(3-1) - 1 = 9 → 9/3 + 1 = 4; 10 + 0 + 3 - 3*(2-1) - 1 = 9 → 9/2 + 1 = 5.
    assert_eq!((ext(0, 11, 3), ext(1, 10, 2)), (4, 5));
    assert_eq!(
        check(conv(3, 2, &[1, 4, 4, 5], pre, post, stride, dil)),
        Ok(())
    );
    let (st, msg) = check(conv(3, 2, &[1, 4, 4, 6], pre, post, stride, dil)).unwrap_err();
    assert_eq!(st, PluginStatus::NotApplicable);
    assert_eq!(
        msg,
        "conv_fprop 'Conv_0': output dims [1, 4, 4, 6] differ from the expected [1, 4, 4, 5]"
    );
}

#[test]
fn conv_filter_that_does_not_fit_is_refused() {
    // Dilated filter span 3*(5-1)+1 = 13 > 11 + 0 + 0.
    let (st, msg) = check(conv(5, 1, &[1, 4, 1, 10], [0, 0], [0, 0], [1, 1], [3, 1])).unwrap_err();
    assert_eq!(st, PluginStatus::NotApplicable);
    assert_eq!(
        msg,
        "conv_fprop 'Conv_0': filter [4, 2, 5, 1] does not fit input [1, 2, 11, 10] with this padding"
    );
}

#[test]
fn conv_extent_overflow_is_refused_not_wrapped() {
    let (st, msg) = check(conv(
        3,
        3,
        &[1, 4, 9, 8],
        [i64::MAX, 0],
        [i64::MAX, 0],
        [1, 1],
        [1, 1],
    ))
    .unwrap_err();
    assert_eq!(st, PluginStatus::NotApplicable);
    assert_eq!(
        msg,
        "conv_fprop 'Conv_0': filter [4, 2, 3, 3] and input [1, 2, 11, 10]: output extent: the extent arithmetic overflows i64"
    );
}

fn pointwise(mode: PointwiseMode, in_1: Option<i64>, axis: Option<i64>) -> GraphBuilder {
    let mut g = GraphBuilder::new("pw");
    g.tensor(TensorSpec::new(1, "a", DT::FLOAT, &[2, 3]))
        .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[2, 3]))
        .tensor(TensorSpec::new(3, "y", DT::FLOAT, &[2, 3]));
    g.pointwise(
        "Pw_0",
        PointwiseAttributesArgs {
            operation: mode,
            in_0_tensor_uid: 1,
            in_1_tensor_uid: in_1,
            out_0_tensor_uid: 3,
            axis_tensor_uid: axis,
            ..Default::default()
        },
    );
    g
}

#[test]
fn pointwise_inputs_follow_the_arity_table() {
    assert_eq!(check(pointwise(PointwiseMode::ADD, Some(2), None)), Ok(()));
    assert_eq!(
        check(pointwise(PointwiseMode::RELU_BWD, Some(2), None)),
        Ok(())
    );
    assert_eq!(check(pointwise(PointwiseMode::EXP, None, None)), Ok(()));
    let (st, msg) = check(pointwise(PointwiseMode::SWISH_BWD, None, None)).unwrap_err();
    assert_eq!(st, PluginStatus::NotApplicable);
    assert_eq!(
        msg,
        "pointwise 'Pw_0': operation SWISH_BWD needs in_1_tensor_uid"
    );
    let (_, msg) = check(pointwise(PointwiseMode::UNSET, None, None)).unwrap_err();
    assert_eq!(
        msg,
        "pointwise 'Pw_0': operation UNSET is not supported by the CPU reference engine"
    );
}

#[test]
fn gen_index_axis_must_name_an_output_dim() {
    assert_eq!(
        check(pointwise(PointwiseMode::GEN_INDEX, None, Some(1))),
        Ok(())
    );
    let (_, msg) = check(pointwise(PointwiseMode::GEN_INDEX, None, Some(2))).unwrap_err();
    assert_eq!(
        msg,
        "pointwise 'Pw_0': axis 2 is not supported by the CPU reference engine"
    );
    let (_, msg) = check(pointwise(PointwiseMode::GEN_INDEX, None, Some(-1))).unwrap_err();
    assert_eq!(
        msg,
        "pointwise 'Pw_0': axis -1 is not supported by the CPU reference engine"
    );
}

fn reduction(mode: ReductionMode, y: &[i64]) -> GraphBuilder {
    let mut g = GraphBuilder::new("red");
    g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[2, 3, 4]))
        .tensor(TensorSpec::new(2, "y", DT::FLOAT, y));
    g.node(
        "Red_0",
        Box::new(move |fbb| {
            let a = ReductionAttributes::create(
                fbb,
                &ReductionAttributesArgs {
                    in_tensor_uid: 1,
                    out_tensor_uid: 2,
                    mode,
                    ..Default::default()
                },
            );
            (NodeAttributes::ReductionAttributes, a.as_union_value())
        }),
    );
    g
}

#[test]
fn reduction_modes_and_output_dims_follow_the_table() {
    assert_eq!(
        check(reduction(ReductionMode::MUL_NO_ZEROS, &[2, 1, 4])),
        Ok(())
    );
    let (_, msg) = check(reduction(ReductionMode::NOT_SET, &[2, 1, 4])).unwrap_err();
    assert_eq!(
        msg,
        "reduction 'Red_0': mode NOT_SET is not supported by the CPU reference engine"
    );
    let (_, msg) = check(reduction(ReductionMode::ADD, &[2, 2, 4])).unwrap_err();
    assert_eq!(
        msg,
        "reduction 'Red_0': output dims [2, 2, 4] must equal input dims [2, 3, 4] except reduced axes of 1"
    );
}
