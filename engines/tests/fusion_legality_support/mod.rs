//! Issue 37, classes 4 and 6 (OpenCV folded a batchnorm into a conv across a ReLU; TensorFlow
//! turned off cuDNN's conv-bias-activation fusion after wrong results at odd channel counts):
//! the chains of pointwise nodes after a conv or matmul that a fuser might take, shared by
//! `reference_fusion_legality.rs` (the CPU engine: fused against node by node, bitwise),
//! `triton_fusion_legality.rs` (a fake sm_90 / gfx942 device: the Triton families serve exactly
//! the chains their epilogue computes in the graph's order) and `gpu_fusion_legality.rs` (a
//! real device: every served chain against the CPU reference).
//!
//! A chain is an ordered selection of distinct steps ([`St`]) after the producer ([`Kind`]);
//! [`graph`] builds it with virtual FLOAT intermediates (what a fuser may take) or with every
//! intermediate bound (node by node). The ADDs alternate their operand order along the chain.

#![allow(dead_code)]

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, pw_args, random_values};
use hipdnn_schema::graph::{DataType as DT, PointwiseAttributesArgs, PointwiseMode as M};

pub const X: i64 = 1;
pub const W: i64 = 2;
pub const Y: i64 = 3;
pub const BIAS: i64 = 4;
pub const RES: i64 = 5;
pub const SCALE: i64 = 6;

/// One pointwise step after the producer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum St {
    /// `MUL(t, scale)` by a tensor whose dims are all 1.
    Scale,
    /// `ADD(t, bias)`, bias a vector over the output channels / columns.
    Bias,
    /// `ADD(t, residual)`, residual of the output's dims.
    Res,
    /// RELU with lower clip −0.2, upper clip 0.5 and lower slope 0.1.
    ClippedRelu,
    /// A one-input activation without attributes (RELU here is the plain one).
    Act(M),
}

/// The producer of a chain.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// conv fprop `x (2, c, 7, 5)` with `w (k, c, f, f)`, stride 1, "same" padding.
    Conv { c: i64, k: i64, f: i64, nhwc: bool },
    /// `x (2, m, k) · w (1, k, n)`.
    Matmul { m: i64, k: i64, n: i64 },
}

impl Kind {
    /// Dims of x, w, the output, the bias and the scale.
    pub fn dims(self) -> [Vec<i64>; 5] {
        match self {
            Kind::Conv { c, k, f, .. } => [
                vec![2, c, 7, 5],
                vec![k, c, f, f],
                vec![2, k, 7, 5],
                vec![1, k, 1, 1],
                vec![1, 1, 1, 1],
            ],
            Kind::Matmul { m, k, n } => [
                vec![2, m, k],
                vec![1, k, n],
                vec![2, m, n],
                vec![1, 1, n],
                vec![1, 1, 1],
            ],
        }
    }

    fn nhwc(self) -> bool {
        matches!(self, Kind::Conv { nhwc: true, .. })
    }
}

/// [`pw_args`] with RELU's clips and slope set for [`St::ClippedRelu`].
fn step_args(st: St, i: usize, cur: i64, out: i64) -> PointwiseAttributesArgs {
    // Both operand orders of the binary steps, alternating along the chain.
    let pair = |other: i64| {
        if i % 2 == 0 {
            [cur, other]
        } else {
            [other, cur]
        }
    };
    match st {
        St::Scale => pw_args(M::MUL, &pair(SCALE), out),
        St::Bias => pw_args(M::ADD, &pair(BIAS), out),
        St::Res => pw_args(M::ADD, &pair(RES), out),
        St::ClippedRelu => PointwiseAttributesArgs {
            relu_lower_clip: Some(-0.2),
            relu_upper_clip: Some(0.5),
            relu_lower_clip_slope: Some(0.1),
            ..pw_args(M::RELU_FWD, &[cur], out)
        },
        St::Act(m) => pw_args(m, &[cur], out),
    }
}

/// The graph of `kind` (tensors of type `dt`) followed by `chain`; returns it with the output
/// UID and the UIDs of the intermediates (virtual FLOAT when `fused`, else bound in `dt`).
pub fn graph(kind: Kind, dt: DT, chain: &[St], fused: bool) -> (GraphBuilder, i64, Vec<i64>) {
    let [xd, wd, yd, bd, sd] = kind.dims();
    let lay = |t: TensorSpec| if kind.nhwc() { t.channels_last() } else { t };
    let mut g = GraphBuilder::new("legality");
    g.tensor(lay(TensorSpec::new(X, "x", dt, &xd)))
        .tensor(lay(TensorSpec::new(W, "w", dt, &wd)))
        .tensor(lay(TensorSpec::new(BIAS, "bias", dt, &bd)))
        .tensor(lay(TensorSpec::new(RES, "res", dt, &yd)))
        .tensor(lay(TensorSpec::new(SCALE, "scale", dt, &sd)));
    let mid = |u: i64, last: bool| {
        if last {
            lay(TensorSpec::new(u, &format!("t{u}"), dt, &yd))
        } else if fused {
            lay(TensorSpec::new(u, &format!("t{u}"), DT::FLOAT, &yd)).virtual_()
        } else {
            lay(TensorSpec::new(u, &format!("t{u}"), dt, &yd))
        }
    };
    g.tensor(mid(Y, chain.is_empty()));
    match kind {
        Kind::Conv { f, .. } => {
            let p = (f / 2) as usize;
            g.conv_fprop(
                "conv",
                X,
                W,
                Y,
                &ConvGeometry {
                    pre: vec![p, p],
                    post: vec![p, p],
                    stride: vec![1, 1],
                    dilation: vec![1, 1],
                    flip: false,
                },
            );
        }
        Kind::Matmul { .. } => {
            g.matmul("mm", X, W, Y);
        }
    }
    let (mut cur, mut mids) = (Y, vec![Y]);
    for (i, st) in chain.iter().enumerate() {
        let out = 10 + i as i64;
        g.tensor(mid(out, i + 1 == chain.len()));
        g.pointwise(&format!("pw{i}"), step_args(*st, i, cur, out));
        mids.push(out);
        cur = out;
    }
    mids.pop();
    (g, cur, mids)
}

/// The inputs of `kind` (x and w in [−1, 1), bias and residual in [−1, 1), scale in [0.5, 2)).
pub fn inputs(kind: Kind) -> Vec<(i64, Vec<f32>)> {
    let [xd, wd, yd, bd, sd] = kind.dims();
    let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
    vec![
        (X, random_values(vol(&xd), 1, -1.0, 1.0)),
        (W, random_values(vol(&wd), 2, -1.0, 1.0)),
        (BIAS, random_values(vol(&bd), 3, -1.0, 1.0)),
        (RES, random_values(vol(&yd), 4, -1.0, 1.0)),
        (SCALE, random_values(vol(&sd), 5, 0.5, 2.0)),
    ]
}

/// Every ordered selection of up to `len` distinct steps of `all`, the empty chain first.
pub fn chains(all: &[St], len: usize) -> Vec<Vec<St>> {
    let mut out = vec![vec![]];
    let mut frontier: Vec<Vec<St>> = vec![vec![]];
    for _ in 0..len {
        let mut next = Vec::new();
        for c in &frontier {
            for s in all {
                if !c.contains(s) {
                    let mut c2 = c.clone();
                    c2.push(*s);
                    next.push(c2);
                }
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

/// The steps of the GPU sweep: the scale, the bias, the residual, the clipped RELU (no fused
/// epilogue computes it) and the six activations the Triton epilogue knows.
pub fn gpu_steps() -> Vec<St> {
    vec![
        St::Scale,
        St::Bias,
        St::Res,
        St::ClippedRelu,
        St::Act(M::RELU_FWD),
        St::Act(M::GELU_FWD),
        St::Act(M::GELU_APPROX_TANH_FWD),
        St::Act(M::SIGMOID_FWD),
        St::Act(M::TANH_FWD),
        St::Act(M::SWISH_FWD),
    ]
}

/// Whether the Triton matmul / conv fprop epilogue computes `chain` in the graph's order:
/// scale (first only), bias, residual, one activation (not the clipped RELU), residual — each
/// at most once, the residual once. Written from the epilogue's documented contract
/// (`framework/epilogue.rs`), not from its matcher.
pub fn epilogue_computes(chain: &[St]) -> bool {
    // Rank of each step in scale → bias → residual → activation → residual.
    let mut last = -1;
    let mut res_seen = false;
    let mut act_seen = false;
    for (i, st) in chain.iter().enumerate() {
        let rank = match st {
            St::Scale if i == 0 => 0,
            St::Scale => return false,
            St::Bias => 1,
            St::Res => {
                if res_seen {
                    return false;
                }
                res_seen = true;
                if act_seen { 4 } else { 2 }
            }
            St::ClippedRelu => return false,
            St::Act(_) => {
                if act_seen {
                    return false;
                }
                act_seen = true;
                3
            }
        };
        if rank <= last {
            return false;
        }
        last = rank;
    }
    true
}

/// Compares `got` with the reference `want` within `tol`·(1 + |r|); `Err` names the first
/// element outside (or non-finite).
pub fn within(got: &[f32], want: &[f32], tol: f32) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} values, the reference has {}",
            got.len(),
            want.len()
        ));
    }
    let mut worst = 0f32;
    for (e, (a, r)) in got.iter().zip(want).enumerate() {
        let d = (a - r).abs() / (1.0 + r.abs());
        if !a.is_finite() || d.is_nan() || d > tol {
            return Err(format!(
                "element {e}: {a:e}, the reference {r:e} (|d|/(1+|r|) {d:e} > {tol:e})"
            ));
        }
        worst = worst.max(d);
    }
    Ok(worst)
}

/// The producers of the GPU sweep: matmul in f32 at odd sizes and in 16-bit types, conv fprop
/// in f32 NCHW and 16-bit NHWC with odd channel counts (C = 3 → K = 5, 3×3 and 1×1) and with
/// aligned ones.
pub fn gpu_producers() -> Vec<(Kind, DT)> {
    let conv = |c, k, f, nhwc| Kind::Conv { c, k, f, nhwc };
    vec![
        (Kind::Matmul { m: 33, k: 9, n: 3 }, DT::FLOAT),
        (Kind::Matmul { m: 5, k: 7, n: 5 }, DT::HALF),
        (
            Kind::Matmul {
                m: 40,
                k: 64,
                n: 24,
            },
            DT::HALF,
        ),
        (
            Kind::Matmul {
                m: 17,
                k: 32,
                n: 48,
            },
            DT::BFLOAT16,
        ),
        (conv(3, 5, 3, false), DT::FLOAT),
        (conv(3, 5, 1, false), DT::FLOAT),
        (conv(3, 5, 3, true), DT::HALF),
        (conv(16, 16, 3, true), DT::HALF),
        (conv(8, 24, 1, true), DT::BFLOAT16),
    ]
}
