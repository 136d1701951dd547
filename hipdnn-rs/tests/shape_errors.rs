//! Shape errors are invalid-graph errors at `validate()`, for every op (issue 32 point 3): one
//! code (`INVALID_VALUE`, upstream's frontend code for a bad shape) and a message naming the
//! node, the tensors with their dims, and the rule.

use hipdnn::*;

fn t(g: &mut Graph, name: &str, dims: &[i64]) -> TensorId {
    g.tensor(
        TensorAttributes::new(name)
            .data_type(DataType::Float)
            .dims(dims.to_vec())
            .packed_nchw(),
    )
}

fn scalar(g: &mut Graph, name: &str) -> TensorId {
    g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)).name(name))
}

fn graph() -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float);
    g
}

/// One bad-shape graph per op, with the exact start of its message (through the tensors).
fn cases() -> Vec<(&'static str, Graph, &'static str)> {
    let mut cases = Vec::new();

    let mut g = graph();
    let (a, b) = (t(&mut g, "a", &[2, 3]), t(&mut g, "b", &[4]));
    g.pointwise(
        a,
        b,
        PointwiseAttributes::with_mode(PointwiseMode::Add).name("add"),
    );
    cases.push((
        "pointwise broadcast",
        g,
        "pointwise 'add': shape mismatch: in_0 'a' [2, 3] does not broadcast to out_0 \
         'add::OUT_0' [2, 4]; rule: a pointwise input broadcasts to the output",
    ));

    let mut g = graph();
    let (a, b) = (t(&mut g, "a", &[3, 4]), t(&mut g, "b", &[5, 6]));
    g.matmul(a, b, MatmulAttributes::new().name("mm"));
    cases.push((
        "matmul inner dims",
        g,
        "matmul 'mm': shape mismatch: inner dims differ: a 'a' [3, 4] and b 'b' [5, 6]; rule: \
         matmul a (..batch, M, K) x b (..batch, K, N): a[-1] equals b[-2]",
    ));

    let mut g = graph();
    let (a, b) = (t(&mut g, "a", &[2, 3, 4]), t(&mut g, "b", &[5, 4, 6]));
    g.matmul(a, b, MatmulAttributes::new().name("mm"));
    cases.push((
        "matmul batch",
        g,
        "matmul 'mm': shape mismatch: batch dims do not broadcast: a 'a' [2, 3, 4], b 'b' \
         [5, 4, 6], c 'mm::C' [5, 3, 6]; rule:",
    ));

    let mut g = graph();
    let (x, w) = (t(&mut g, "x", &[1, 3, 8, 8]), t(&mut g, "w", &[4, 2, 3, 3]));
    let conv = ConvFpropAttributes::new()
        .padding([1, 1])
        .stride([1, 1])
        .dilation([1, 1]);
    g.conv_fprop(x, w, conv.clone().name("conv"));
    cases.push((
        "conv channels",
        g,
        "conv_fprop 'conv': shape mismatch: channels do not group: x 'x' [1, 3, 8, 8], w 'w' \
         [4, 2, 3, 3], y 'conv::Y' [1, 4, 8, 8]; rule: w's C/groups (w[1]) divides x's \
         channels C (x[1])",
    ));

    let mut g = graph();
    let (x, w) = (t(&mut g, "x", &[1, 3, 8, 8]), t(&mut g, "w", &[4, 3, 3, 3]));
    let y = g.conv_fprop(x, w, conv.clone().name("conv"));
    g.set_dims(y, [1, 4, 7, 8]);
    cases.push((
        "conv output extent",
        g,
        "conv_fprop 'conv': shape mismatch: spatial extents do not agree: x 'x' [1, 3, 8, 8], \
         w 'w' [4, 3, 3, 3], y 'conv::Y' [1, 4, 7, 8]; rule: out = ",
    ));

    let mut g = graph();
    let (dy, w) = (
        t(&mut g, "dy", &[1, 4, 8, 8]),
        t(&mut g, "w", &[6, 3, 3, 3]),
    );
    g.conv_dgrad(
        dy,
        w,
        ConvDgradAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1])
            .name("dgrad"),
    );
    cases.push((
        "conv dgrad filter count",
        g,
        "conv_dgrad 'dgrad': shape mismatch: batch or filter count differs: dx 'dgrad::DX' \
         [1, 3, 8, 8], w 'w' [6, 3, 3, 3], dy 'dy' [1, 4, 8, 8]; rule: y[0] equals x[0] (N) \
         and y[1] equals w[0] (K)",
    ));

    let mut g = graph();
    let (x, s, b) = (
        t(&mut g, "x", &[2, 8]),
        t(&mut g, "scale", &[4]),
        t(&mut g, "bias", &[8]),
    );
    let eps = scalar(&mut g, "eps");
    g.layernorm(
        x,
        s,
        b,
        LayernormAttributes::new()
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Inference)
            .name("ln"),
    );
    cases.push((
        "layernorm scale",
        g,
        "layernorm 'ln': shape mismatch: scale 'scale' [4] does not broadcast to x 'x' [2, 8]; \
         rule: layernorm parameters broadcast to x",
    ));

    let mut g = graph();
    let (q, k, v) = (
        t(&mut g, "q", &[1, 2, 4, 8]),
        t(&mut g, "k", &[1, 2, 4, 16]),
        t(&mut g, "v", &[1, 2, 4, 8]),
    );
    g.sdpa(q, k, v, SdpaAttributes::new().name("attn"));
    cases.push((
        "sdpa head dim",
        g,
        "sdpa 'attn': shape mismatch: q 'q' [1, 2, 4, 8], k 'k' [1, 2, 4, 16], v 'v' \
         [1, 2, 4, 8]; rule: sdpa q (B, H, S_q, D)",
    ));

    let mut g = graph();
    let x = t(&mut g, "x", &[2, 3]);
    g.reduction(
        x,
        [2, 4],
        ReductionAttributes::new()
            .mode(ReductionMode::Add)
            .name("sum"),
    );
    cases.push((
        "reduction output dims",
        g,
        "reduction 'sum': shape mismatch: x 'x' [2, 3] and y 'sum::Y' [2, 4]; rule: a \
         reduction's y has x's rank",
    ));

    let mut g = graph();
    let x = t(&mut g, "x", &[1, 2, 8, 8]);
    let y = g.resample_fwd(
        x,
        ResampleFwdAttributes::new()
            .resample_mode(ResampleMode::MaxPool)
            .window([2, 2])
            .stride([2, 2])
            .pre_padding([0, 0])
            .post_padding([0, 0])
            .name("pool"),
    );
    g.set_dims(y, [1, 2, 4, 5]);
    cases.push((
        "resample output extent",
        g,
        "resample 'pool': shape mismatch: x 'x' [1, 2, 8, 8] and y 'pool::Y' [1, 2, 4, 5]; \
         rule: resample x (N, C, spatial..)",
    ));
    let mut g = graph();
    let (dy, x) = (
        t(&mut g, "dy", &[2, 3, 4, 4]),
        t(&mut g, "x", &[2, 3, 5, 5]),
    );
    let (s, m, iv) = (
        t(&mut g, "s", &[1, 3, 1, 1]),
        t(&mut g, "m", &[1, 3, 1, 1]),
        t(&mut g, "iv", &[1, 3, 1, 1]),
    );
    g.batchnorm_backward(
        dy,
        x,
        s,
        BatchnormBackwardAttributes::new()
            .mean(m)
            .inv_variance(iv)
            .name("bnb"),
    );
    cases.push((
        "batchnorm backward dy",
        g,
        "batchnorm_backward 'bnb': shape mismatch: dy 'dy' [2, 3, 4, 4] differs from x 'x' \
         [2, 3, 5, 5]; rule: batchnorm backward's dy and dx have x's dims",
    ));

    let mut g = graph();
    let (dy, x) = (t(&mut g, "dy", &[4, 6]), t(&mut g, "x", &[4, 6]));
    let (s, m, iv) = (
        t(&mut g, "s", &[1, 5]),
        t(&mut g, "m", &[4, 1]),
        t(&mut g, "iv", &[4, 1]),
    );
    g.layernorm_backward(
        dy,
        x,
        s,
        LayernormBackwardAttributes::new()
            .mean(m)
            .inv_variance(iv)
            .name("lnb"),
    );
    cases.push((
        "layernorm backward scale",
        g,
        "layernorm_backward 'lnb': shape mismatch: scale 's' [1, 5] does not broadcast to x \
         'x' [4, 6]; rule: layernorm parameters broadcast to x",
    ));

    let mut g = graph();
    let (dy, x) = (t(&mut g, "dy", &[4, 6]), t(&mut g, "x", &[4, 6]));
    let (s, r) = (t(&mut g, "s", &[1, 6]), t(&mut g, "r", &[3, 1]));
    g.rmsnorm_backward(
        dy,
        x,
        s,
        r,
        false,
        RmsNormBackwardAttributes::new().name("rmsb"),
    );
    cases.push((
        "rmsnorm backward inv_rms",
        g,
        "rmsnorm_backward 'rmsb': shape mismatch: inv_rms 'r' [3, 1] does not broadcast to x \
         'x' [4, 6]; rule: rmsnorm parameters broadcast to x",
    ));

    let mut g = graph();
    let qkv = [1, 2, 8, 16];
    let (q, k, v) = (
        t(&mut g, "q", &qkv),
        t(&mut g, "k", &qkv),
        t(&mut g, "v", &qkv),
    );
    let (o, d_o) = (t(&mut g, "o", &qkv), t(&mut g, "do", &[1, 2, 8, 8]));
    let stats = t(&mut g, "stats", &[1, 2, 8, 1]);
    g.sdpa_backward(
        q,
        k,
        v,
        o,
        d_o,
        stats,
        SdpaBackwardAttributes::new().name("sdpab"),
    );
    cases.push((
        "sdpa backward do",
        g,
        "sdpa_backward 'sdpab': shape mismatch: do 'do' [1, 2, 8, 8] differs from o 'o' [1, 2, \
         8, 16]; rule: sdpa backward's do has o's dims",
    ));

    let mut g = graph();
    let dy = t(&mut g, "dy", &[1, 2, 4, 4]);
    let dx = g.resample_bwd(
        dy,
        None,
        ResampleBwdAttributes::new()
            .resample_mode(ResampleMode::AvgPoolIncludePadding)
            .window([2, 2])
            .stride([2, 2])
            .pre_padding([0, 0])
            .post_padding([0, 0])
            .name("poolb"),
    );
    g.set_dims(dx, [1, 2, 8, 11]);
    cases.push((
        "resample backward extent",
        g,
        "resample_bwd 'poolb': shape mismatch: dx 'poolb::DX' [1, 2, 8, 11] and dy 'dy' [1, 2, \
         4, 4]; rule: resample dx (N, C, spatial..) gives dy (N, C, out..)",
    ));
    cases
}

#[test]
fn every_op_reports_a_bad_shape_at_validate_as_invalid_value_naming_tensors_and_rule() {
    for (what, g, prefix) in cases() {
        let e = g
            .validate()
            .expect_err(&format!("{what}: validate() accepted a bad shape"));
        assert_eq!(e.code, ErrorCode::InvalidValue, "{what}: {e}");
        assert!(
            e.message.starts_with(prefix),
            "{what}:\n got  {:?}\n want {prefix:?}…",
            e.message
        );
    }
}

#[test]
fn the_issue_broadcast_is_refused_at_validate_with_the_whole_message() {
    let (_, g, _) = cases().remove(0);
    assert_eq!(
        g.validate().unwrap_err().to_string(),
        "INVALID_VALUE: pointwise 'add': shape mismatch: in_0 'a' [2, 3] does not broadcast to \
         out_0 'add::OUT_0' [2, 4]; rule: a pointwise input broadcasts to the output: aligned \
         from the last dim, each input dim equals the output dim or is 1"
    );
}
