//! The CPU reference engine folds `conv_fprop → ADD(bias) → ADD(residual) → activation` (a
//! ResNet block's end; each node optional) into the conv's GEMM output pass only where that
//! changes no bit: on each of the conv's GEMM paths (per-tile im2col, whole-batch columns for
//! small outputs, 1×1 per image, strided 1×1, Winograd) the fused graph (virtual FLOAT
//! intermediates) gives exactly the output of the same graph run node by node (bound
//! intermediates), and the plan shows the fold (one `ConvFprop` step). A residual computed by
//! a node that runs after the conv stops the fold at the residual ADD.

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, plan_steps, pw_args, random_values, run_graph,
};
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as M};

const X: i64 = 1;
const W: i64 = 2;
const Y: i64 = 3;
const B: i64 = 4;
const R: i64 = 5;
const T1: i64 = 6;
const T2: i64 = 7;
const Z: i64 = 8;
const R2: i64 = 9;

/// One conv problem: x `(n, c, h, w)`, w `(k, c, f, f)`, padding `pad`, stride `st`.
#[derive(Clone, Copy, Debug)]
struct Conv {
    n: i64,
    c: i64,
    k: i64,
    h: i64,
    w: i64,
    f: i64,
    pad: i64,
    st: i64,
}

impl Conv {
    fn out(&self) -> [i64; 4] {
        let o = |i: i64| (i + 2 * self.pad - self.f) / self.st + 1;
        [self.n, self.k, o(self.h), o(self.w)]
    }
}

/// The conv's GEMM paths (see `ops::conv::conv_fprop_views`).
const PATHS: [(&str, Conv); 5] = [
    (
        "per-tile im2col",
        Conv {
            n: 2,
            c: 6,
            k: 8,
            h: 20,
            w: 17,
            f: 3,
            pad: 1,
            st: 1,
        },
    ),
    (
        "whole-batch columns",
        Conv {
            n: 3,
            c: 8,
            k: 12,
            h: 7,
            w: 7,
            f: 3,
            pad: 1,
            st: 1,
        },
    ),
    (
        "1x1 per image",
        Conv {
            n: 2,
            c: 8,
            k: 12,
            h: 16,
            w: 17,
            f: 1,
            pad: 0,
            st: 1,
        },
    ),
    (
        "strided 1x1",
        Conv {
            n: 1,
            c: 8,
            k: 12,
            h: 33,
            w: 34,
            f: 1,
            pad: 0,
            st: 2,
        },
    ),
    (
        "winograd",
        Conv {
            n: 2,
            c: 16,
            k: 16,
            h: 10,
            w: 9,
            f: 3,
            pad: 1,
            st: 1,
        },
    ),
];

/// Which pointwise nodes follow the conv.
#[derive(Clone, Copy, Debug)]
struct Chain {
    bias: bool,
    act: Option<M>,
}

/// conv → [ADD bias (1, k, 1, 1)] → ADD residual → [activation]; `fused`: the chain's
/// intermediates are virtual (FLOAT), else bound outputs. `res` is the residual operand: R
/// (bound) or R2 = EXP(R), computed by a node added after the chain's nodes when
/// `computed_late`, before the conv when not.
fn graph(
    p: Conv,
    chain: Chain,
    fused: bool,
    res: i64,
    computed_late: bool,
) -> (GraphBuilder, Vec<i64>) {
    let xd = [p.n, p.c, p.h, p.w];
    let yd = p.out();
    let mut g = GraphBuilder::new("conv_residual");
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &xd))
        .tensor(TensorSpec::new(W, "w", DT::FLOAT, &[p.k, p.c, p.f, p.f]))
        .tensor(TensorSpec::new(B, "b", DT::FLOAT, &[1, p.k, 1, 1]))
        .tensor(TensorSpec::new(R, "r", DT::FLOAT, &yd));
    if res == R2 {
        let t = TensorSpec::new(R2, "r2", DT::FLOAT, &yd);
        g.tensor(if fused { t.virtual_() } else { t });
        if !computed_late {
            g.pointwise("exp", pw_args(M::EXP, &[R], R2));
        }
    }
    let mut outs = vec![Y];
    if chain.bias {
        outs.push(T1);
    }
    outs.push(T2);
    if chain.act.is_some() {
        outs.push(Z);
    }
    let last = *outs.last().unwrap();
    for &u in &outs {
        let t = TensorSpec::new(u, &format!("t{u}"), DT::FLOAT, &yd);
        g.tensor(if fused && u != last { t.virtual_() } else { t });
    }
    let (pad, st) = (p.pad as usize, p.st as usize);
    g.conv_fprop(
        "conv",
        X,
        W,
        Y,
        &ConvGeometry {
            pre: vec![pad, pad],
            post: vec![pad, pad],
            stride: vec![st, st],
            dilation: vec![1, 1],
            flip: false,
        },
    );
    let mut it = outs.iter().copied().skip(1);
    let mut cur = Y;
    if chain.bias {
        let out = it.next().unwrap();
        g.pointwise("bias", pw_args(M::ADD, &[cur, B], out));
        cur = out;
    }
    let out = it.next().unwrap();
    // residual first, to check that the operand order does not matter.
    g.pointwise("residual", pw_args(M::ADD, &[res, cur], out));
    cur = out;
    if let Some(m) = chain.act {
        let out = it.next().unwrap();
        g.pointwise("act", pw_args(m, &[cur], out));
    }
    if res == R2 && computed_late {
        g.pointwise("exp", pw_args(M::EXP, &[R], R2));
    }
    outs.reverse();
    (g, outs)
}

fn inputs(p: Conv) -> Vec<(i64, Vec<f32>)> {
    let yd = p.out();
    vec![
        (
            X,
            random_values((p.n * p.c * p.h * p.w) as usize, 21, -1.0, 1.0),
        ),
        (
            W,
            random_values((p.k * p.c * p.f * p.f) as usize, 22, -0.5, 0.5),
        ),
        (B, random_values(p.k as usize, 23, -1.0, 1.0)),
        (
            R,
            random_values(yd.iter().product::<i64>() as usize, 24, -2.0, 2.0),
        ),
    ]
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The fused graph's output and the node-by-node graph's (every intermediate bound).
fn both(p: Conv, chain: Chain, res: i64, late: bool) -> (Vec<u32>, Vec<u32>) {
    let (g, outs) = graph(p, chain, true, res, late);
    let fused = run_graph(g, &inputs(p), &outs[..1]).expect("fused runs");
    let (g, mut outs) = graph(p, chain, false, res, late);
    if res == R2 {
        outs.push(R2);
    }
    let plain = run_graph(g, &inputs(p), &outs).expect("plain runs");
    (bits(&fused[0]), bits(&plain[0]))
}

const CHAINS: [Chain; 3] = [
    Chain {
        bias: true,
        act: Some(M::RELU_FWD),
    },
    Chain {
        bias: false,
        act: Some(M::TANH_FWD),
    },
    Chain {
        bias: true,
        act: None,
    },
];

#[test]
fn fused_conv_residual_equals_the_node_by_node_graph_on_every_gemm_path() {
    for (name, p) in PATHS {
        for chain in CHAINS {
            let (fused, plain) = both(p, chain, R, false);
            assert_eq!(fused, plain, "{name} {chain:?}");
            let (fused, plain) = both(p, chain, R2, false);
            assert_eq!(fused, plain, "{name} {chain:?}, computed residual");
        }
    }
}

#[test]
fn every_residual_chain_is_folded_into_one_conv_step() {
    for (name, p) in PATHS {
        for chain in CHAINS {
            let steps = plan_steps(graph(p, chain, true, R, false).0).expect("plans");
            assert_eq!(steps, ["ConvFprop"], "{name} {chain:?}");
            // A residual computed before the conv is ready: still one step after the EXP.
            let steps = plan_steps(graph(p, chain, true, R2, false).0).expect("plans");
            assert_eq!(steps, ["Pointwise", "ConvFprop"], "{name} {chain:?}");
        }
    }
}

#[test]
fn a_residual_computed_after_the_conv_stops_the_fold_and_gives_the_node_by_node_result() {
    let chain = CHAINS[0];
    let p = PATHS[0].1;
    let (fused, plain) = both(p, chain, R2, true);
    assert_eq!(fused, plain);
    let steps = plan_steps(graph(p, chain, true, R2, true).0).expect("plans");
    // Wherever the plan's order puts EXP: when it is after the conv, the residual ADD and
    // the activation stay nodes; when before, everything folds.
    assert!(
        steps == ["ConvFprop", "Pointwise", "Pointwise", "Pointwise"]
            || steps == ["Pointwise", "ConvFprop"],
        "{steps:?}"
    );
}

/// A ResNet stage's first block end: `a = conv(x) + bias_a` (main path, built first),
/// `d = conv(x) + bias_d` (downsample branch, built after), `z = RELU(a + d)`.
fn block_end(fused: bool) -> GraphBuilder {
    const WD: i64 = 20;
    const BD: i64 = 21;
    const A: i64 = 22;
    const TA: i64 = 23;
    const DY: i64 = 24;
    const TD: i64 = 25;
    const SUM: i64 = 26;
    let p = PATHS[2].1;
    let yd = p.out();
    let mut g = GraphBuilder::new("block_end");
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &[p.n, p.c, p.h, p.w]))
        .tensor(TensorSpec::new(W, "w", DT::FLOAT, &[p.k, p.c, 1, 1]))
        .tensor(TensorSpec::new(B, "b", DT::FLOAT, &[1, p.k, 1, 1]))
        .tensor(TensorSpec::new(WD, "wd", DT::FLOAT, &[p.k, p.c, 1, 1]))
        .tensor(TensorSpec::new(BD, "bd", DT::FLOAT, &[1, p.k, 1, 1]))
        .tensor(TensorSpec::new(Z, "z", DT::FLOAT, &yd));
    for u in [A, TA, DY, TD, SUM] {
        let t = TensorSpec::new(u, &format!("t{u}"), DT::FLOAT, &yd);
        g.tensor(if fused { t.virtual_() } else { t });
    }
    let conv = |g: &mut GraphBuilder, w: i64, y: i64| {
        g.conv_fprop(
            "conv",
            X,
            w,
            y,
            &ConvGeometry {
                pre: vec![0, 0],
                post: vec![0, 0],
                stride: vec![1, 1],
                dilation: vec![1, 1],
                flip: false,
            },
        );
    };
    conv(&mut g, W, A);
    g.pointwise("bias_a", pw_args(M::ADD, &[A, B], TA));
    conv(&mut g, WD, DY);
    g.pointwise("bias_d", pw_args(M::ADD, &[DY, BD], TD));
    g.pointwise("sum", pw_args(M::ADD, &[TA, TD], SUM));
    g.pointwise("relu", pw_args(M::RELU_FWD, &[SUM], Z));
    g
}

#[test]
fn a_block_end_with_a_downsample_branch_folds_into_two_conv_steps() {
    let p = PATHS[2].1;
    let mut ins: Vec<_> = inputs(p).into_iter().filter(|(u, _)| *u != R).collect();
    let n = (p.k * p.c) as usize;
    ins.push((20, random_values(n, 25, -0.5, 0.5)));
    ins.push((21, random_values(p.k as usize, 26, -1.0, 1.0)));
    let fused = run_graph(block_end(true), &ins, &[Z]).expect("fused runs");
    let plain = run_graph(block_end(false), &ins, &[Z, 26, 25, 24, 23, 22]).expect("plain runs");
    assert_eq!(bits(&fused[0]), bits(&plain[0]));
    // The main path's conv takes its bias; the downsample conv (planned after it) takes its
    // bias, the main path's output as its residual, and the RELU.
    let steps = plan_steps(block_end(true)).expect("plans");
    assert_eq!(steps, ["ConvFprop", "ConvFprop"]);
}
