//! The CPU reference engine folds `matmul → ADD(bias) → ADD(residual) → activation` chains
//! (each node optional; a `Linear` layer with its bias, GELU or residual connection) into the
//! GEMM output pass only where that changes no bit: the fused graph (virtual FLOAT
//! intermediates) gives exactly the output of the same graph run node by node (bound
//! intermediates), and the plan shows the fold (one `Matmul` step, no `Pointwise`). A residual
//! that another node computes after the matmul step stops the fold there.

use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, plan_steps, pw_args, random_values, run_graph,
};
use hipdnn_schema::graph::{DataType as DT, PointwiseMode as M};

const A: i64 = 1;
const B: i64 = 2;
const C: i64 = 3;
const BIAS: i64 = 4;
const RES: i64 = 5;
const T1: i64 = 6;
const T2: i64 = 7;
const Z: i64 = 8;

/// Which pointwise nodes follow the matmul.
#[derive(Clone, Copy, Debug)]
struct Chain {
    bias: bool,
    res: bool,
    act: Option<M>,
}

const DIMS_A: [i64; 3] = [2, 5, 7];
const DIMS_C: [i64; 3] = [2, 5, 9];

/// a (2, 5, 7) · b (7, 9) column-major (a `Linear` weight, broadcast over the batch) →
/// [ADD bias (1, 1, 9)] → [ADD residual (2, 5, 9)] → [activation]. `fused`: the
/// intermediates are virtual FLOAT; else they are bound outputs (the node-by-node run).
fn graph(chain: Chain, fused: bool) -> (GraphBuilder, i64, Vec<i64>) {
    graph_with(chain, fused, RES, false)
}

/// [`graph`] with `res` as the residual operand, and with every chain tensor virtual when
/// `all_virtual` (another node reads the last one).
fn graph_with(
    chain: Chain,
    fused: bool,
    res: i64,
    all_virtual: bool,
) -> (GraphBuilder, i64, Vec<i64>) {
    let mut g = GraphBuilder::new("matmul_fusion");
    g.tensor(TensorSpec::new(A, "a", DT::FLOAT, &DIMS_A))
        .tensor(TensorSpec::new(B, "b", DT::FLOAT, &[1, 7, 9]).strides(&[63, 1, 7]))
        .tensor(TensorSpec::new(BIAS, "bias", DT::FLOAT, &[1, 1, 9]))
        .tensor(TensorSpec::new(RES, "res", DT::FLOAT, &DIMS_C));
    // The chain's tensors: C, then one per pointwise node; the last is the bound output.
    let mut outs = vec![C];
    if chain.bias {
        outs.push(T1);
    }
    if chain.res {
        outs.push(T2);
    }
    if chain.act.is_some() {
        outs.push(Z);
    }
    let last = *outs.last().unwrap();
    for &u in &outs {
        let t = TensorSpec::new(u, &format!("t{u}"), DT::FLOAT, &DIMS_C);
        g.tensor(if fused && (u != last || all_virtual) {
            t.virtual_()
        } else {
            t
        });
    }
    g.matmul("matmul", A, B, C);
    let mut it = outs.iter().copied();
    let mut cur = it.next().unwrap();
    if chain.bias {
        let out = it.next().unwrap();
        // bias first, to check that the operand order does not matter.
        g.pointwise("bias", pw_args(M::ADD, &[BIAS, cur], out));
        cur = out;
    }
    if chain.res {
        let out = it.next().unwrap();
        g.pointwise("residual", pw_args(M::ADD, &[cur, res], out));
        cur = out;
    }
    if let Some(m) = chain.act {
        let out = it.next().unwrap();
        g.pointwise("act", pw_args(m, &[cur], out));
        cur = out;
    }
    (g, cur, outs)
}

fn inputs() -> Vec<(i64, Vec<f32>)> {
    vec![
        (A, random_values(2 * 5 * 7, 11, -2.0, 2.0)),
        (B, random_values(63, 12, -1.0, 1.0)),
        (BIAS, random_values(9, 13, -1.0, 1.0)),
        (RES, random_values(2 * 5 * 9, 14, -1.0, 1.0)),
    ]
}

fn run(chain: Chain, fused: bool) -> Vec<u32> {
    let (g, out, all) = graph(chain, fused);
    let outs = if fused {
        vec![out]
    } else {
        all.into_iter().rev().collect()
    };
    let r = run_graph(g, &inputs(), &outs).expect("runs");
    r[0].iter().map(|v| v.to_bits()).collect()
}

const CHAINS: [Chain; 6] = [
    Chain {
        bias: true,
        res: false,
        act: Some(M::GELU_FWD),
    },
    Chain {
        bias: true,
        res: true,
        act: None,
    },
    Chain {
        bias: true,
        res: true,
        act: Some(M::RELU_FWD),
    },
    Chain {
        bias: false,
        res: true,
        act: Some(M::TANH_FWD),
    },
    Chain {
        bias: true,
        res: false,
        act: None,
    },
    Chain {
        bias: false,
        res: false,
        act: Some(M::ERF),
    },
];

#[test]
fn fused_matmul_epilogue_graph_equals_the_node_by_node_graph() {
    for chain in CHAINS {
        let fused = run(chain, true);
        let plain = run(chain, false);
        assert_eq!(fused, plain, "{chain:?}");
    }
}

#[test]
fn every_chain_is_folded_into_one_matmul_step() {
    for chain in CHAINS {
        let steps = plan_steps(graph(chain, true).0).expect("plans");
        assert_eq!(steps, ["Matmul"], "{chain:?}");
        // Bound intermediates are outputs of their own: nothing is folded.
        let steps = plan_steps(graph(chain, false).0).expect("plans");
        assert_eq!(
            steps.len(),
            1 + chain.bias as usize + chain.res as usize + chain.act.is_some() as usize,
            "{chain:?}"
        );
    }
}

#[test]
fn fused_linear_gelu_matches_a_float64_reference() {
    let chain = CHAINS[0];
    let (g, out, _) = graph(chain, true);
    let got = &run_graph(g, &inputs(), &[out]).expect("runs")[0];
    let ins = inputs();
    let (a, b, bias) = (&ins[0].1, &ins[1].1, &ins[2].1);
    for bi in 0..2 {
        for i in 0..5 {
            for j in 0..9 {
                let mut s = f64::from(bias[j]);
                for k in 0..7 {
                    // Values are given in logical row-major order (the buffer is column-major).
                    s += f64::from(a[(bi * 5 + i) * 7 + k]) * f64::from(b[k * 9 + j]);
                }
                let want = 0.5 * s * (1.0 + libm_erf(s / std::f64::consts::SQRT_2));
                let g = f64::from(got[(bi * 5 + i) * 9 + j]);
                assert!(
                    (g - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "({bi},{i},{j}): {g} vs {want}"
                );
            }
        }
    }
}

/// erf in f64 by its Maclaurin series (|x| ≤ 3) or the continued fraction of erfc (beyond),
/// accurate to ~1e-15 here: a reference independent of the engine's f32 fit.
fn libm_erf(x: f64) -> f64 {
    let z = x.abs();
    let r = if z <= 3.0 {
        let (mut term, mut sum, mut n) = (z, z, 0.0);
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -z * z / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc(z) = exp(-z²)/√π · 1/(z + 1/2/(z + 1/(z + 3/2/(z + …))))
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = f64::from(k) / 2.0 / (z + f);
        }
        1.0 - (-z * z).exp() / std::f64::consts::PI.sqrt() / (z + f)
    };
    r.copysign(x)
}

#[test]
fn a_residual_computed_by_another_node_gives_the_node_by_node_result() {
    // The residual is EXP(res), computed by a node listed after the matmul chain: wherever the
    // plan's order puts it, the fused graph must equal the bound-intermediate run.
    const R2: i64 = 20;
    let chain = Chain {
        bias: true,
        res: true,
        act: Some(M::RELU_FWD),
    };
    let build = |fused: bool| {
        let (mut g, out, all) = graph_with(chain, fused, R2, false);
        let t = TensorSpec::new(R2, "res2", DT::FLOAT, &DIMS_C);
        g.tensor(if fused { t.virtual_() } else { t });
        g.pointwise("exp", pw_args(M::EXP, &[RES], R2));
        (g, out, all)
    };
    let (g, out, _) = build(true);
    let fused = run_graph(g, &inputs(), &[out]).expect("runs");
    let (g, out, all) = build(false);
    let mut outs: Vec<i64> = all.into_iter().rev().collect();
    outs.push(R2);
    assert_eq!(outs[0], out);
    let plain = run_graph(g, &inputs(), &outs).expect("runs");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&fused[0]), bits(&plain[0]));
    let steps = plan_steps(build(true).0).expect("plans");
    // The plan runs the matmul (bias folded) before EXP, so the residual is not ready when
    // the matmul step runs: the chain stops there and the residual ADD and RELU run as nodes.
    assert_eq!(steps, ["Matmul", "Pointwise", "Pointwise", "Pointwise"]);
}

#[test]
fn erf_is_within_3e_7_absolute_of_a_float64_reference() {
    use hipdnn_engines::reference::ops::pointwise::erf;
    let mut worst = (0f64, 0f32);
    let mut x = -6.0f32;
    while x <= 6.0 {
        let err = (f64::from(erf(x)) - libm_erf(f64::from(x))).abs();
        if err > worst.0 {
            worst = (err, x);
        }
        x += 1.0 / 1024.0;
    }
    assert!(
        worst.0 <= 3e-7,
        "worst |erf error| {} at x = {}",
        worst.0,
        worst.1
    );
    assert_eq!(erf(0.0).to_bits(), 0f32.to_bits());
    assert_eq!(erf(-0.0).to_bits(), (-0f32).to_bits());
    assert_eq!((erf(f32::INFINITY), erf(f32::NEG_INFINITY)), (1.0, -1.0));
    assert!(erf(f32::NAN).is_nan());
}
