//! CPU reference convolution (fprop, dgrad, wgrad) against a straightforward nested-loop
//! implementation written here, on shapes with padding, stride, dilation, groups, 2-D and 3-D,
//! NCHW and NHWC layouts, both conv modes and f32/f16/bf16.

use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, assert_close, random_values, run_graph, tolerance,
};
use hipdnn_schema::graph::{
    ConvMode, ConvolutionBwdAttributes, ConvolutionBwdAttributesArgs, ConvolutionFwdAttributes,
    ConvolutionFwdAttributesArgs, ConvolutionWrwAttributes, ConvolutionWrwAttributesArgs,
    DataType as DT, NodeAttributes,
};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Fprop,
    Dgrad,
    Wgrad,
}

#[derive(Clone)]
struct Case {
    x: Vec<i64>,
    w: Vec<i64>,
    pre: Vec<i64>,
    post: Vec<i64>,
    stride: Vec<i64>,
    dil: Vec<i64>,
    flip: bool,
    nhwc: bool,
    dt: DT,
}

fn out_dims(c: &Case) -> Vec<i64> {
    let mut y = vec![c.x[0], c.w[0]];
    for d in 0..c.x.len() - 2 {
        y.push(
            (c.x[d + 2] + c.pre[d] + c.post[d] - c.dil[d] * (c.w[d + 2] - 1) - 1) / c.stride[d] + 1,
        );
    }
    y
}

/// Straightforward convolution on 5-D (N, C, D, H, W) row-major data: returns y for Fprop,
/// dx for Dgrad, dw for Wgrad (`a`, `b` = the two inputs in the node's order).
fn naive(c: &Case, kind: Kind, a: &[f32], b: &[f32]) -> Vec<f32> {
    let p3 = |v: &[i64], f: i64| -> [i64; 3] {
        let mut o = [f; 3];
        o[3 - v.len()..].copy_from_slice(v);
        o
    };
    let (xd, wd, yd) = (p3(&c.x[2..], 1), p3(&c.w[2..], 1), p3(&out_dims(c)[2..], 1));
    let (pre, st, dl) = (p3(&c.pre, 0), p3(&c.stride, 1), p3(&c.dil, 1));
    let (n, ch, k, cg) = (c.x[0], c.x[1], c.w[0], c.w[1]);
    let groups = ch / cg;
    let kg = k / groups;
    let xi = |nn: i64, cc: i64, p: [i64; 3]| {
        (((nn * ch + cc) * xd[0] + p[0]) * xd[1] + p[1]) * xd[2] + p[2]
    };
    let wi = |kk: i64, cc: i64, t: [i64; 3]| {
        let t = if c.flip {
            [wd[0] - 1 - t[0], wd[1] - 1 - t[1], wd[2] - 1 - t[2]]
        } else {
            t
        };
        (((kk * cg + cc) * wd[0] + t[0]) * wd[1] + t[1]) * wd[2] + t[2]
    };
    let yi = |nn: i64, kk: i64, o: [i64; 3]| {
        (((nn * k + kk) * yd[0] + o[0]) * yd[1] + o[1]) * yd[2] + o[2]
    };
    let size = match kind {
        Kind::Fprop => n * k * yd.iter().product::<i64>(),
        Kind::Dgrad => n * ch * xd.iter().product::<i64>(),
        Kind::Wgrad => k * cg * wd.iter().product::<i64>(),
    };
    let mut out = vec![0f64; size as usize];
    for nn in 0..n {
        for kk in 0..k {
            let g = kk / kg;
            for o0 in 0..yd[0] {
                for o1 in 0..yd[1] {
                    for o2 in 0..yd[2] {
                        for cc in 0..cg {
                            for t0 in 0..wd[0] {
                                for t1 in 0..wd[1] {
                                    for t2 in 0..wd[2] {
                                        let i = [
                                            o0 * st[0] - pre[0] + t0 * dl[0],
                                            o1 * st[1] - pre[1] + t1 * dl[1],
                                            o2 * st[2] - pre[2] + t2 * dl[2],
                                        ];
                                        if (0..3).any(|d| i[d] < 0 || i[d] >= xd[d]) {
                                            continue;
                                        }
                                        let (xix, wix, yix) = (
                                            xi(nn, g * cg + cc, i) as usize,
                                            wi(kk, cc, [t0, t1, t2]) as usize,
                                            yi(nn, kk, [o0, o1, o2]) as usize,
                                        );
                                        match kind {
                                            Kind::Fprop => {
                                                out[yix] += f64::from(a[xix]) * f64::from(b[wix])
                                            }
                                            Kind::Dgrad => {
                                                out[xix] += f64::from(a[yix]) * f64::from(b[wix])
                                            }
                                            Kind::Wgrad => {
                                                out[wix] += f64::from(a[xix]) * f64::from(b[yix])
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out.into_iter().map(|v| v as f32).collect()
}

fn check(c: &Case, kind: Kind) {
    let y = out_dims(c);
    let spec = |u: i64, n: &str, d: &[i64]| {
        let t = TensorSpec::new(u, n, c.dt, d);
        if c.nhwc && n != "w" {
            t.channels_last()
        } else {
            t
        }
    };
    let (xs, ws, ys) = (spec(1, "x", &c.x), spec(2, "w", &c.w), spec(3, "y", &y));
    let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
    let mut g = GraphBuilder::new("conv");
    g.tensor(xs.clone()).tensor(ws.clone()).tensor(ys.clone());
    let (pre, post, stride, dil) = (
        c.pre.clone(),
        c.post.clone(),
        c.stride.clone(),
        c.dil.clone(),
    );
    let mode = if c.flip {
        ConvMode::CONVOLUTION
    } else {
        ConvMode::CROSS_CORRELATION
    };
    g.node(
        "conv",
        Box::new(move |fbb| {
            let (pre, post) = (fbb.create_vector(&pre), fbb.create_vector(&post));
            let (stride, dilation) = (fbb.create_vector(&stride), fbb.create_vector(&dil));
            let (pre_padding, post_padding, stride, dilation) =
                (Some(pre), Some(post), Some(stride), Some(dilation));
            match kind {
                Kind::Fprop => (
                    NodeAttributes::ConvolutionFwdAttributes,
                    ConvolutionFwdAttributes::create(
                        fbb,
                        &ConvolutionFwdAttributesArgs {
                            x_tensor_uid: 1,
                            w_tensor_uid: 2,
                            y_tensor_uid: 3,
                            pre_padding,
                            post_padding,
                            stride,
                            dilation,
                            conv_mode: mode,
                        },
                    )
                    .as_union_value(),
                ),
                Kind::Dgrad => (
                    NodeAttributes::ConvolutionBwdAttributes,
                    ConvolutionBwdAttributes::create(
                        fbb,
                        &ConvolutionBwdAttributesArgs {
                            dx_tensor_uid: 1,
                            w_tensor_uid: 2,
                            dy_tensor_uid: 3,
                            pre_padding,
                            post_padding,
                            stride,
                            dilation,
                            conv_mode: mode,
                        },
                    )
                    .as_union_value(),
                ),
                Kind::Wgrad => (
                    NodeAttributes::ConvolutionWrwAttributes,
                    ConvolutionWrwAttributes::create(
                        fbb,
                        &ConvolutionWrwAttributesArgs {
                            x_tensor_uid: 1,
                            dw_tensor_uid: 2,
                            dy_tensor_uid: 3,
                            pre_padding,
                            post_padding,
                            stride,
                            dilation,
                            conv_mode: mode,
                        },
                    )
                    .as_union_value(),
                ),
            }
        }),
    );
    let xv = xs.quantize(&random_values(vol(&c.x), 11, -1.0, 1.0));
    let wv = ws.quantize(&random_values(vol(&c.w), 12, -1.0, 1.0));
    let yv = ys.quantize(&random_values(vol(&y), 13, -1.0, 1.0));
    let (inputs, out, want) = match kind {
        Kind::Fprop => (
            vec![(1, xv.clone()), (2, wv.clone())],
            3,
            naive(c, kind, &xv, &wv),
        ),
        Kind::Dgrad => (
            vec![(3, yv.clone()), (2, wv.clone())],
            1,
            naive(c, kind, &yv, &wv),
        ),
        Kind::Wgrad => (
            vec![(1, xv.clone()), (3, yv.clone())],
            2,
            naive(c, kind, &xv, &yv),
        ),
    };
    let got = run_graph(g, &inputs, &[out]).expect("run").remove(0);
    let what = format!(
        "{:?} x{:?} w{:?} nhwc {} flip {} {:?}",
        kind as u8, c.x, c.w, c.nhwc, c.flip, c.dt
    );
    assert_close(&what, &got, &want, tolerance(c.dt, true));
}

fn cases() -> Vec<Case> {
    let base = Case {
        x: vec![2, 4, 7, 6],
        w: vec![6, 2, 3, 3],
        pre: vec![1, 0],
        post: vec![2, 1],
        stride: vec![2, 1],
        dil: vec![1, 2],
        flip: false,
        nhwc: false,
        dt: DT::FLOAT,
    };
    vec![
        base.clone(),
        Case {
            nhwc: true,
            ..base.clone()
        },
        Case {
            flip: true,
            ..base.clone()
        },
        Case {
            x: vec![1, 3, 9, 8],
            w: vec![5, 3, 3, 2],
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![1, 1],
            dil: vec![1, 1],
            ..base.clone()
        },
        Case {
            x: vec![1, 4, 6, 5],
            w: vec![4, 1, 3, 3],
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![2, 2],
            dil: vec![1, 1],
            nhwc: true,
            ..base.clone()
        },
        Case {
            x: vec![1, 2, 5, 6, 4],
            w: vec![4, 2, 2, 3, 2],
            pre: vec![1, 0, 1],
            post: vec![0, 1, 1],
            stride: vec![1, 2, 1],
            dil: vec![2, 1, 1],
            ..base.clone()
        },
        Case {
            x: vec![1, 2, 5, 6, 4],
            w: vec![4, 1, 2, 3, 2],
            pre: vec![0, 1, 0],
            post: vec![0, 1, 0],
            stride: vec![1, 1, 2],
            dil: vec![1, 1, 1],
            nhwc: true,
            flip: true,
            ..base.clone()
        },
        Case {
            x: vec![2, 3, 11],
            w: vec![2, 3, 4],
            pre: vec![2],
            post: vec![1],
            stride: vec![3],
            dil: vec![1],
            ..base.clone()
        },
        // Many output channels over few positions: several row tiles per group, so fprop
        // takes the whole-image im2col path.
        Case {
            x: vec![1, 8, 4, 3],
            w: vec![96, 4, 3, 3],
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![1, 1],
            dil: vec![1, 1],
            ..base.clone()
        },
        // Many positions: column tiles that start and end inside output rows (per-tile
        // im2col), plain and with stride/dilation/asymmetric padding in NHWC.
        Case {
            x: vec![1, 3, 40, 37],
            w: vec![4, 3, 3, 3],
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![1, 1],
            dil: vec![1, 1],
            ..base.clone()
        },
        Case {
            x: vec![2, 2, 45, 41],
            w: vec![3, 2, 3, 2],
            pre: vec![1, 0],
            post: vec![1, 1],
            stride: vec![2, 1],
            dil: vec![1, 2],
            nhwc: true,
            ..base.clone()
        },
        // 8 or more channels per group: fprop's per-tile im2col goes tap by tap over all
        // channels at once (grouped, strided and dilated; a 3-D case; column tiles that cut
        // output rows).
        Case {
            x: vec![2, 24, 9, 10],
            w: vec![10, 12, 3, 3],
            pre: vec![1, 0],
            post: vec![1, 2],
            stride: vec![2, 1],
            dil: vec![1, 2],
            ..base.clone()
        },
        Case {
            x: vec![1, 16, 30, 29],
            w: vec![8, 16, 3, 3],
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![1, 3],
            dil: vec![1, 1],
            nhwc: true,
            ..base.clone()
        },
        Case {
            x: vec![1, 8, 4, 5, 6],
            w: vec![4, 8, 2, 3, 3],
            pre: vec![1, 1, 0],
            post: vec![0, 1, 2],
            stride: vec![1, 2, 2],
            dil: vec![1, 1, 1],
            flip: true,
            ..base.clone()
        },
        // Input planes above 4096 elements: dgrad's col2im splits each channel into blocks
        // of input rows.
        Case {
            x: vec![1, 2, 70, 65],
            w: vec![3, 2, 3, 3],
            pre: vec![1, 1],
            post: vec![1, 1],
            stride: vec![2, 2],
            dil: vec![1, 1],
            ..base.clone()
        },
        // Unpadded strided 1×1 filters (the packed-subsample path): 2-D with unequal
        // strides, NHWC, and 3-D.
        Case {
            x: vec![2, 5, 9, 7],
            w: vec![6, 5, 1, 1],
            pre: vec![0, 0],
            post: vec![0, 0],
            stride: vec![2, 3],
            dil: vec![1, 1],
            ..base.clone()
        },
        Case {
            x: vec![1, 8, 10, 6],
            w: vec![4, 4, 1, 1],
            pre: vec![0, 0],
            post: vec![0, 0],
            stride: vec![2, 2],
            dil: vec![1, 1],
            nhwc: true,
            ..base.clone()
        },
        // 1×1 with trailing padding: outputs that read only padding are 0 (not the
        // packed-subsample path).
        Case {
            x: vec![2, 3, 5, 7],
            w: vec![4, 3, 1, 1],
            pre: vec![0, 0],
            post: vec![1, 2],
            stride: vec![1, 2],
            dil: vec![1, 1],
            ..base.clone()
        },
        Case {
            x: vec![1, 3, 5, 6, 7],
            w: vec![2, 3, 1, 1, 1],
            pre: vec![0, 0, 0],
            post: vec![0, 0, 0],
            stride: vec![2, 1, 3],
            dil: vec![1, 1, 1],
            ..base.clone()
        },
    ]
}

#[test]
fn conv_fprop_matches_nested_loops() {
    for c in cases() {
        check(&c, Kind::Fprop);
    }
}

#[test]
fn conv_dgrad_matches_nested_loops() {
    for c in cases() {
        check(&c, Kind::Dgrad);
    }
}

#[test]
fn conv_wgrad_matches_nested_loops() {
    for c in cases() {
        check(&c, Kind::Wgrad);
    }
}

/// An f32 NCHW cross-correlation case with stride 1, dilation 1 and padding 1 on every side.
fn padded_3x3(x: Vec<i64>, w: Vec<i64>) -> Case {
    Case {
        x,
        w,
        pre: vec![1, 1],
        post: vec![1, 1],
        stride: vec![1, 1],
        dil: vec![1, 1],
        flip: false,
        nhwc: false,
        dt: DT::FLOAT,
    }
}

/// Filter gradients of both wgrad paths (`reference::ops::conv`): the split into partial
/// products over runs of output positions (dw ≤ 16 Ki elements), with more runs than the 32
/// parts and two groups, a stem-like 7×7/2 filter over 3 channels with two runs an image, and
/// the per-image GEMMs of a larger dw (40 · 48 · 9 = 17280 elements).
#[test]
fn conv_wgrad_split_and_per_image_paths_match_nested_loops() {
    let base = padded_3x3(vec![9, 64, 30, 30], vec![16, 32, 3, 3]);
    let cases = [
        base.clone(),
        Case {
            x: vec![2, 3, 70, 70],
            w: vec![8, 3, 7, 7],
            pre: vec![3, 3],
            post: vec![3, 3],
            stride: vec![2, 2],
            ..base.clone()
        },
        Case {
            x: vec![3, 48, 6, 6],
            w: vec![40, 48, 3, 3],
            stride: vec![2, 2],
            ..base.clone()
        },
    ];
    for c in &cases {
        check(c, Kind::Wgrad);
    }
}

/// The blocked planar dgrad (`reference::ops::conv`, ≤ 1024 im2col rows): many blocks of 4
/// output rows (16 · 9 rows × 200 columns), blocks at the smallest disjoint height (900 rows
/// × 400 columns give 2 rows), a strided dilated filter with asymmetric padding and groups
/// over 3 blocks (the shortest block height whose even blocks read disjoint rows is 4), the
/// stem's 7×7/2 over 3 channels in 2 blocks, NHWC and CONVOLUTION mode.
#[test]
fn conv_dgrad_blocked_paths_match_nested_loops() {
    let base = padded_3x3(vec![1, 16, 200, 200], vec![8, 16, 3, 3]);
    let cases = [
        base.clone(),
        Case {
            x: vec![1, 100, 10, 400],
            w: vec![2, 100, 3, 3],
            ..base.clone()
        },
        Case {
            x: vec![2, 8, 120, 150],
            w: vec![4, 4, 5, 3],
            pre: vec![2, 0],
            post: vec![1, 2],
            stride: vec![2, 3],
            dil: vec![2, 1],
            flip: true,
            ..base.clone()
        },
        Case {
            x: vec![2, 3, 70, 70],
            w: vec![8, 3, 7, 7],
            pre: vec![3, 3],
            post: vec![3, 3],
            stride: vec![2, 2],
            nhwc: true,
            ..base.clone()
        },
    ];
    for c in &cases {
        check(c, Kind::Dgrad);
    }
}

/// 3×3, stride 1, dilation 1, one group, ≥ 16 channels: the Winograd F(2×2, 3×3) path
/// (`reference::ops::winograd`), with odd and even output sizes, asymmetric and zero padding,
/// a 1×1 input, several blocks per image, several images per block (two blocks of 16 and 4
/// images), NHWC, both conv modes and f16.
fn winograd_cases() -> Vec<Case> {
    let base = Case {
        x: vec![2, 16, 9, 7],
        w: vec![17, 16, 3, 3],
        pre: vec![1, 1],
        post: vec![1, 1],
        stride: vec![1, 1],
        dil: vec![1, 1],
        flip: false,
        nhwc: false,
        dt: DT::FLOAT,
    };
    vec![
        base.clone(),
        Case {
            x: vec![1, 19, 5, 13],
            w: vec![16, 19, 3, 3],
            pre: vec![0, 2],
            post: vec![2, 0],
            flip: true,
            ..base.clone()
        },
        Case {
            x: vec![3, 16, 1, 1],
            w: vec![16, 16, 3, 3],
            nhwc: true,
            ..base.clone()
        },
        Case {
            x: vec![1, 20, 41, 37],
            w: vec![24, 20, 3, 3],
            pre: vec![0, 0],
            post: vec![0, 0],
            ..base.clone()
        },
        Case {
            x: vec![20, 16, 8, 8],
            w: vec![16, 16, 3, 3],
            ..base.clone()
        },
        Case {
            x: vec![1, 16, 6, 4],
            w: vec![16, 16, 3, 3],
            dt: DT::HALF,
            nhwc: true,
            ..base.clone()
        },
    ]
}

#[test]
fn conv_fprop_winograd_shapes_match_nested_loops() {
    for c in winograd_cases() {
        check(&c, Kind::Fprop);
    }
}

/// The data gradient of the same layers runs as a Winograd fprop of dy with the transposed,
/// rotated filter (padding 2 − pre / 2 − post: 2, 1 and 0 on some side here).
#[test]
fn conv_dgrad_winograd_shapes_match_nested_loops() {
    for c in winograd_cases() {
        check(&c, Kind::Dgrad);
    }
}

#[test]
fn conv_half_and_bfloat16_match_nested_loops() {
    for dt in [DT::HALF, DT::BFLOAT16] {
        let c = Case {
            dt,
            ..cases()[1].clone()
        };
        check(&c, Kind::Fprop);
        check(&c, Kind::Dgrad);
    }
}
