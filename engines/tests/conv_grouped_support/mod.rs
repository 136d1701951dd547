//! Grouped and depthwise convolutions for the conv fprop family's `grouped` variant (issue 33:
//! MobileNet depthwise and ResNeXt grouped layers ran 0.01–0.3× PyTorch as per-group implicit
//! GEMMs), shared by `triton_conv_grouped.rs` (fake devices: which entry serves each case) and
//! `gpu_conv_grouped.rs` (a real device: outputs against the CPU reference engine).

#![allow(dead_code)]

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, pw_args, random_values};
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as PM};

/// A 2-D convolution with groups, then an optional epilogue.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub dt: DT,
    pub nhwc: bool,
    pub n: i64,
    pub c: i64,
    pub k: i64,
    pub groups: i64,
    pub h: i64,
    pub w: i64,
    pub r: i64,
    pub pad: i64,
    pub stride: i64,
    pub dil: i64,
    /// + bias[k], then ReLU.
    pub bias_relu: bool,
    /// + a residual of y's dims (after the ReLU when both).
    pub residual: bool,
}

impl Case {
    pub fn out(&self) -> (i64, i64) {
        let o = |i: i64| (i + 2 * self.pad - self.dil * (self.r - 1) - 1) / self.stride + 1;
        (o(self.h), o(self.w))
    }

    /// Channels per group.
    pub fn cg(&self) -> i64 {
        self.c / self.groups
    }
}

pub const X: i64 = 1;
pub const W: i64 = 2;
pub const BIAS: i64 = 3;
pub const RES: i64 = 4;
pub const Y: i64 = 9;

/// The graph of `c` (x, w, y, bias and residual in `c.dt`, FLOAT virtual intermediates).
pub fn graph(c: &Case) -> GraphBuilder {
    let lay = |t: TensorSpec| if c.nhwc { t.channels_last() } else { t };
    let (p, q) = c.out();
    let yd = [c.n, c.k, p, q];
    let mut g = GraphBuilder::new("grouped");
    g.tensor(lay(TensorSpec::new(X, "x", c.dt, &[c.n, c.c, c.h, c.w])))
        .tensor(lay(TensorSpec::new(W, "w", c.dt, &[c.k, c.cg(), c.r, c.r])));
    let mut steps: Vec<(PM, Option<i64>)> = Vec::new();
    if c.bias_relu {
        g.tensor(lay(TensorSpec::new(BIAS, "bias", c.dt, &[1, c.k, 1, 1])));
        steps.extend([(PM::ADD, Some(BIAS)), (PM::RELU_FWD, None)]);
    }
    if c.residual {
        g.tensor(lay(TensorSpec::new(RES, "res", c.dt, &yd)));
        steps.push((PM::ADD, Some(RES)));
    }
    let conv_out = if steps.is_empty() { Y } else { 20 };
    let t = lay(TensorSpec::new(conv_out, "conv", c.dt, &yd));
    g.tensor(if steps.is_empty() {
        t
    } else {
        lay(TensorSpec::new(conv_out, "conv", DT::FLOAT, &yd)).virtual_()
    });
    let pad = c.pad as usize;
    g.conv_fprop(
        "conv",
        X,
        W,
        conv_out,
        &ConvGeometry {
            pre: vec![pad, pad],
            post: vec![pad, pad],
            stride: vec![c.stride as usize, c.stride as usize],
            dilation: vec![c.dil as usize, c.dil as usize],
            flip: false,
        },
    );
    let mut cur = conv_out;
    for (i, (mode, other)) in steps.iter().enumerate() {
        let out = if i + 1 == steps.len() {
            Y
        } else {
            21 + i as i64
        };
        g.tensor(if out == Y {
            lay(TensorSpec::new(Y, "y", c.dt, &yd))
        } else {
            lay(TensorSpec::new(out, "t", DT::FLOAT, &yd)).virtual_()
        });
        let ins = match other {
            Some(o) => vec![cur, *o],
            None => vec![cur],
        };
        g.pointwise("pw", pw_args(*mode, &ins, out));
        cur = out;
    }
    g
}

/// The inputs of `c` (x, w, bias, residual in [−1, 1)).
pub fn inputs(c: &Case) -> Vec<(i64, Vec<f32>)> {
    let (p, q) = c.out();
    let mut v = vec![
        (
            X,
            random_values((c.n * c.c * c.h * c.w) as usize, 11, -1.0, 1.0),
        ),
        (
            W,
            random_values((c.k * c.cg() * c.r * c.r) as usize, 12, -1.0, 1.0),
        ),
    ];
    if c.bias_relu {
        v.push((BIAS, random_values(c.k as usize, 13, -1.0, 1.0)));
    }
    if c.residual {
        v.push((
            RES,
            random_values((c.n * c.k * p * q) as usize, 14, -1.0, 1.0),
        ));
    }
    v
}

/// The cases and whether the grouped entry must serve each: depthwise (stride 1 and 2,
/// dilation 2, odd spatial sizes, a channel multiplier of 2), ResNeXt-style 4 and 16 channels
/// per group, in f16, bf16 and f32 NHWC with and without epilogues; then the ones it must not
/// serve: 32 channels per group, groups 1, NCHW depthwise, and NHWC with C not a multiple of
/// 16 (the variant's stride hints).
pub fn cases() -> Vec<(Case, bool)> {
    let base = Case {
        dt: DT::HALF,
        nhwc: true,
        n: 2,
        c: 32,
        k: 32,
        groups: 32,
        h: 9,
        w: 7,
        r: 3,
        pad: 1,
        stride: 1,
        dil: 1,
        bias_relu: false,
        residual: false,
    };
    let mut v = Vec::new();
    for dt in [DT::HALF, DT::BFLOAT16, DT::FLOAT] {
        let b = Case { dt, ..base };
        v.extend([
            (b, true),
            (
                Case {
                    bias_relu: true,
                    residual: true,
                    ..b
                },
                true,
            ),
            (
                Case {
                    stride: 2,
                    h: 12,
                    w: 11,
                    bias_relu: true,
                    ..b
                },
                true,
            ),
            (
                Case {
                    n: 1,
                    k: 64,
                    dil: 2,
                    pad: 2,
                    ..b
                },
                true,
            ),
            (
                Case {
                    groups: 8,
                    bias_relu: true,
                    ..b
                },
                true,
            ),
            (
                Case {
                    c: 64,
                    k: 64,
                    groups: 4,
                    residual: true,
                    ..b
                },
                true,
            ),
        ]);
    }
    v.extend([
        (
            Case {
                c: 64,
                k: 64,
                groups: 2,
                ..base
            },
            false,
        ),
        (Case { groups: 1, ..base }, false),
        (
            Case {
                nhwc: false,
                ..base
            },
            false,
        ),
        (
            Case {
                c: 24,
                k: 24,
                groups: 24,
                ..base
            },
            false,
        ),
    ]);
    v
}
