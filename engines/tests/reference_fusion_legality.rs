//! Fusion legality of the CPU reference engine (issue 37, classes 4 and 6): epilogue fusion must
//! never change the math — not across a nonlinearity, not when the ADDs come in another order,
//! not at odd channel counts. Every chain of up to three pointwise nodes drawn from ADD(bias),
//! ADD(residual), a clipped leaky RELU and SIGMOID, in every order, after a conv (odd channels
//! C = 3 → K = 5 with 3×3 and 1×1 filters; 16 → 16 3×3, the Winograd path) or a batched matmul
//! (M = 5 and M = 33, odd K and N), runs with virtual FLOAT intermediates (the plan fuses what
//! it may) and with every intermediate bound (node by node): the outputs must be bit-identical.

use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, pw_args, random_values, run_graph,
};
use hipdnn_schema::graph::{DataType as DT, PointwiseAttributesArgs, PointwiseMode as M};

const X: i64 = 1;
const W: i64 = 2;
const Y: i64 = 3;
const BIAS: i64 = 4;
const RES: i64 = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Bias,
    Res,
    Act(M),
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Conv { c: i64, k: i64, f: i64 },
    Matmul { m: i64, k: i64, n: i64 },
}

impl Kind {
    fn dims(self) -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>) {
        match self {
            Kind::Conv { c, k, f } => (
                vec![2, c, 7, 5],
                vec![k, c, f, f],
                vec![2, k, 7, 5],
                vec![1, k, 1, 1],
            ),
            Kind::Matmul { m, k, n } => {
                (vec![2, m, k], vec![1, k, n], vec![2, m, n], vec![1, 1, n])
            }
        }
    }
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

/// The graph of `kind` followed by `chain`; returns it with the output UID and the UIDs of
/// the intermediates (bound when `!fused`).
fn graph(kind: Kind, chain: &[St], fused: bool) -> (GraphBuilder, i64, Vec<i64>) {
    let (xd, wd, yd, bd) = kind.dims();
    let mut g = GraphBuilder::new("legality");
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &xd))
        .tensor(TensorSpec::new(W, "w", DT::FLOAT, &wd))
        .tensor(TensorSpec::new(BIAS, "bias", DT::FLOAT, &bd))
        .tensor(TensorSpec::new(RES, "res", DT::FLOAT, &yd));
    let mid = |u: i64, last: bool| {
        let t = TensorSpec::new(u, &format!("t{u}"), DT::FLOAT, &yd);
        if fused && !last { t.virtual_() } else { t }
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
        let name = format!("pw{i}");
        // Both operand orders of the ADDs.
        match *st {
            St::Bias if i % 2 == 0 => g.pointwise(&name, pw(M::ADD, &[cur, BIAS], out)),
            St::Bias => g.pointwise(&name, pw(M::ADD, &[BIAS, cur], out)),
            St::Res if i % 2 == 0 => g.pointwise(&name, pw(M::ADD, &[RES, cur], out)),
            St::Res => g.pointwise(&name, pw(M::ADD, &[cur, RES], out)),
            St::Act(m) => g.pointwise(&name, pw(m, &[cur], out)),
        };
        mids.push(out);
        cur = out;
    }
    mids.pop();
    (g, cur, mids)
}

fn run(kind: Kind, chain: &[St], fused: bool) -> Vec<u32> {
    let (xd, wd, yd, bd) = kind.dims();
    let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
    let inputs = vec![
        (X, random_values(vol(&xd), 1, -1.0, 1.0)),
        (W, random_values(vol(&wd), 2, -1.0, 1.0)),
        (BIAS, random_values(vol(&bd), 3, -1.0, 1.0)),
        (RES, random_values(vol(&yd), 4, -1.0, 1.0)),
    ];
    let (g, out, mids) = graph(kind, chain, fused);
    let mut outs = vec![out];
    if !fused {
        outs.extend(mids);
    }
    let r = run_graph(g, &inputs, &outs).expect("runs");
    r[0].iter().map(|v| v.to_bits()).collect()
}

/// Every ordered selection of up to three distinct nodes.
fn chains() -> Vec<Vec<St>> {
    let all = [
        St::Bias,
        St::Res,
        St::Act(M::RELU_FWD),
        St::Act(M::SIGMOID_FWD),
    ];
    let mut out = vec![vec![]];
    let mut frontier = vec![vec![]];
    for _ in 0..3 {
        let mut next = Vec::new();
        for c in &frontier {
            for s in all {
                if !c.contains(&s) {
                    let mut c2: Vec<St> = c.clone();
                    c2.push(s);
                    next.push(c2);
                }
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

#[test]
fn fusion_never_changes_a_bit_in_any_order_or_at_odd_channel_counts() {
    let kinds = [
        Kind::Conv { c: 3, k: 5, f: 3 },
        Kind::Conv { c: 3, k: 5, f: 1 },
        Kind::Conv { c: 16, k: 16, f: 3 },
        Kind::Matmul { m: 5, k: 7, n: 5 },
        Kind::Matmul { m: 33, k: 9, n: 3 },
    ];
    let chains = chains();
    assert_eq!(chains.len(), 1 + 4 + 12 + 24);
    for kind in kinds {
        for chain in &chains {
            assert_eq!(
                run(kind, chain, true),
                run(kind, chain, false),
                "{kind:?} then {chain:?}: the fused plan differs from the node-by-node run"
            );
        }
    }
}
