//! CPU reference conv, matmul and SDPA against golden outputs computed once with numpy
//! (`tests/golden/make_golden.py`; little-endian f32 `.bin` files, shapes in `golden.json`).

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, assert_close, run_graph, tolerance,
};
use hipdnn_schema::graph::{DataType as DT, NodeAttributes, SdpaAttributes, SdpaAttributesArgs};

fn bin(name: &str) -> Vec<f32> {
    let path = format!("{}/tests/golden/{name}.bin", env!("CARGO_MANIFEST_DIR"));
    let b = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn conv_fprop_matches_numpy_golden() {
    // x (1,4,7,6), w (6,2,3,3): groups 2, pre (1,2), post (0,1), stride (2,1), dilation (1,2).
    let y_dims = [1i64, 6, 3, 5];
    let mut g = GraphBuilder::new("golden_conv");
    g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[1, 4, 7, 6]).channels_last())
        .tensor(TensorSpec::new(2, "w", DT::FLOAT, &[6, 2, 3, 3]))
        .tensor(TensorSpec::new(3, "y", DT::FLOAT, &y_dims));
    g.conv_fprop(
        "conv",
        1,
        2,
        3,
        &ConvGeometry {
            pre: vec![1, 2],
            post: vec![0, 1],
            stride: vec![2, 1],
            dilation: vec![1, 2],
            flip: false,
        },
    );
    let y = run_graph(g, &[(1, bin("conv_x")), (2, bin("conv_w"))], &[3])
        .expect("run")
        .remove(0);
    assert_close("conv", &y, &bin("conv_y"), tolerance(DT::FLOAT, true));
}

#[test]
fn matmul_matches_numpy_golden() {
    let mut g = GraphBuilder::new("golden_mm");
    g.tensor(TensorSpec::new(1, "a", DT::FLOAT, &[2, 3, 5, 7]))
        .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[3, 7, 4]))
        .tensor(TensorSpec::new(3, "c", DT::FLOAT, &[2, 3, 5, 4]));
    g.matmul("mm", 1, 2, 3);
    let c = run_graph(g, &[(1, bin("matmul_a")), (2, bin("matmul_b"))], &[3])
        .expect("run")
        .remove(0);
    assert_close("matmul", &c, &bin("matmul_c"), tolerance(DT::FLOAT, true));
}

#[test]
fn sdpa_matches_numpy_golden() {
    // q (1,4,5,8), k/v (1,2,6,8), scale 0.3, causal bottom-right, stats = logsumexp.
    let mut g = GraphBuilder::new("golden_sdpa");
    g.tensor(TensorSpec::new(1, "q", DT::FLOAT, &[1, 4, 5, 8]))
        .tensor(TensorSpec::new(2, "k", DT::FLOAT, &[1, 2, 6, 8]))
        .tensor(TensorSpec::new(3, "v", DT::FLOAT, &[1, 2, 6, 8]))
        .tensor(TensorSpec::new(4, "o", DT::FLOAT, &[1, 4, 5, 8]))
        .tensor(TensorSpec::new(5, "stats", DT::FLOAT, &[1, 4, 5, 1]));
    g.node(
        "sdpa",
        Box::new(|fbb| {
            (
                NodeAttributes::SdpaAttributes,
                SdpaAttributes::create(
                    fbb,
                    &SdpaAttributesArgs {
                        q_tensor_uid: 1,
                        k_tensor_uid: 2,
                        v_tensor_uid: 3,
                        o_tensor_uid: 4,
                        stats_tensor_uid: Some(5),
                        generate_stats: Some(true),
                        attn_scale_value: Some(0.3),
                        causal_mask_bottom_right: true,
                        ..Default::default()
                    },
                )
                .as_union_value(),
            )
        }),
    );
    let out = run_graph(
        g,
        &[(1, bin("sdpa_q")), (2, bin("sdpa_k")), (3, bin("sdpa_v"))],
        &[4, 5],
    )
    .expect("run");
    assert_close("o", &out[0], &bin("sdpa_o"), tolerance(DT::FLOAT, true));
    assert_close(
        "stats",
        &out[1],
        &bin("sdpa_stats"),
        tolerance(DT::FLOAT, true),
    );
}
