//! The CPU reference engine runs a softmax (log-softmax) graph — reduction MAX, SUB, EXP,
//! reduction ADD, DIV (LOG, SUB) — as one fused step when its intermediates are virtual FLOAT
//! tensors read only inside the pattern (issue 30): the fused step matches a float64 softmax,
//! gives exactly the bits of the same graph run node by node (an intermediate bound as a graph
//! output keeps the pattern unfused), and the same bits for 1 and N rayon threads.

use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, plan_steps, pw_args, random_values, run_graph,
};
use hipdnn_schema::graph::{
    DataType as DT, NodeAttributes, PointwiseMode as M, ReductionAttributes,
    ReductionAttributesArgs, ReductionMode as R,
};

const X: i64 = 1;
const MAX: i64 = 2;
const D: i64 = 3;
const E: i64 = 4;
const S: i64 = 5;
const L: i64 = 6;
const Y: i64 = 7;

fn reduction(g: &mut GraphBuilder, name: &str, mode: R, x: i64, y: i64) {
    g.node(
        name,
        Box::new(move |fbb| {
            (
                NodeAttributes::ReductionAttributes,
                ReductionAttributes::create(
                    fbb,
                    &ReductionAttributesArgs {
                        mode,
                        in_tensor_uid: x,
                        out_tensor_uid: y,
                        is_deterministic: true,
                    },
                )
                .as_union_value(),
            )
        }),
    );
}

/// Softmax (`log`: log-softmax) of x (`dims`) over the axes where `red` is 1; the tensors in
/// `bound` are graph outputs (FLOAT, not virtual), the other intermediates virtual FLOAT.
fn graph(log: bool, dims: &[i64], red: &[i64], bound: &[i64]) -> GraphBuilder {
    graph_with(log, dims, red, bound, DT::FLOAT)
}

/// [`graph`] with e = exp(x − max) of type `e_type`.
fn graph_with(log: bool, dims: &[i64], red: &[i64], bound: &[i64], e_type: DT) -> GraphBuilder {
    let mut g = GraphBuilder::new("softmax");
    let typed = |u: i64, n: &str, d: &[i64], dt: DT| {
        let t = TensorSpec::new(u, n, dt, d);
        if bound.contains(&u) { t } else { t.virtual_() }
    };
    let t = |u: i64, n: &str, d: &[i64]| typed(u, n, d, DT::FLOAT);
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, dims))
        .tensor(t(MAX, "m", red))
        .tensor(t(D, "d", dims))
        .tensor(typed(E, "e", dims, e_type))
        .tensor(t(S, "s", red))
        .tensor(TensorSpec::new(Y, "y", DT::FLOAT, dims));
    reduction(&mut g, "max", R::MAX_OP, X, MAX);
    g.pointwise("sub", pw_args(M::SUB, &[X, MAX], D));
    g.pointwise("exp", pw_args(M::EXP, &[D], E));
    reduction(&mut g, "sum", R::ADD, E, S);
    if log {
        g.tensor(t(L, "l", red));
        g.pointwise("log", pw_args(M::LOG, &[S], L));
        g.pointwise("y", pw_args(M::SUB, &[D, L], Y));
    } else {
        g.pointwise("y", pw_args(M::DIV, &[E, S], Y));
    }
    g
}

/// y of the graph on `x`, and the plan's step kinds.
fn run(log: bool, dims: &[i64], red: &[i64], bound: &[i64], x: &[f32]) -> (Vec<f32>, Vec<String>) {
    let mut outs = vec![Y];
    outs.extend_from_slice(bound);
    let y = run_graph(graph(log, dims, red, bound), &[(X, x.to_vec())], &outs)
        .expect("runs")
        .remove(0);
    (y, plan_steps(graph(log, dims, red, bound)).expect("plans"))
}

/// Asserts `a` and `b` are the same bits, naming the first element that differs.
fn assert_same_bits(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    let diff = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count();
    if let Some(i) = (0..a.len()).find(|&i| a[i].to_bits() != b[i].to_bits()) {
        panic!(
            "{what}: {diff} elements differ, the first at {i}: {:e} vs {:e}",
            a[i], b[i]
        );
    }
}

/// Random values in [−30, 30) with special rows mixed in: ±0 (a zero maximum of either sign),
/// ±inf, NaN, an all −inf row, huge and tiny values.
fn values(n: usize, row: usize, seed: u64) -> Vec<f32> {
    let mut x = random_values(n, seed, -30.0, 30.0);
    let specials: [&[f32]; 6] = [
        &[-0.0, 0.0, -0.0, -50.0],
        &[0.0, -0.0, -120.0, -0.0],
        &[f32::INFINITY, 1.0, -2.0],
        &[f32::NAN, 3.0, f32::NEG_INFINITY],
        &[f32::NEG_INFINITY; 3],
        &[3.0e38, -3.0e38, 1e-40, 88.0],
    ];
    for (r, sp) in specials.iter().enumerate() {
        let base = (r * 3 + 1) * row;
        if base + row <= n {
            x[base..base + row].fill(-1.0);
            for (i, &v) in sp.iter().enumerate() {
                x[base + (i * 7) % row] = v;
            }
        }
    }
    x
}

/// float64 softmax (log-softmax) of the rows of `row` elements.
fn reference(x: &[f32], row: usize, log: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for r in x.chunks(row) {
        let m = r
            .iter()
            .map(|&v| f64::from(v))
            .fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = r.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        out.extend(r.iter().map(|&v| {
            let d = f64::from(v) - m;
            if log { d - s.ln() } else { d.exp() / s }
        }));
    }
    out
}

/// Fused softmax within 1e-5 · |want| + 1e-37 of float64, log-softmax within
/// 2e-6 · (1 + |want|), inputs in [−20, 20): the f32 graph's own rounding (x − max rounded to
/// f32 is off by up to 2⁻²⁴·|x − max| ≤ 2.4e-6 relative to e^(x − max), the exp within 1 ulp,
/// the 16-lane sum, one division) stays below that; rows of 1 (degenerate), 37, 300 and 1024 elements, one and two
/// trailing reduced axes.
#[test]
fn fused_softmax_matches_float64() {
    let cases: [(&[i64], &[i64]); 5] = [
        (&[7, 300], &[7, 1]),
        (&[3, 5, 37], &[3, 5, 1]),
        (&[2, 3, 4, 19], &[2, 3, 1, 1]),
        (&[16, 1024], &[16, 1]),
        (&[5, 1], &[5, 1]),
    ];
    let mut worst = [0f64; 2];
    for (dims, red) in cases {
        let n: usize = dims.iter().product::<i64>() as usize;
        let row = n / red.iter().product::<i64>() as usize;
        let x = random_values(n, 7, -20.0, 20.0);
        for log in [false, true] {
            let (y, steps) = run(log, dims, red, &[], &x);
            assert_eq!(steps, ["Softmax"], "{dims:?} log {log}: fused");
            let want = reference(&x, row, log);
            for (i, (&g, &w)) in y.iter().zip(&want).enumerate() {
                let err = (f64::from(g) - w).abs();
                let (tol, scale) = if log {
                    (2e-6 * (1.0 + w.abs()), 1.0 + w.abs())
                } else {
                    (1e-5 * w.abs() + 1e-37, w.abs().max(1e-30))
                };
                worst[usize::from(log)] = worst[usize::from(log)].max(err / scale);
                assert!(
                    err <= tol,
                    "{dims:?} log {log}: y[{i}] = {g}, float64 {w}, error {err:e} > {tol:e}"
                );
            }
        }
    }
    println!(
        "worst relative error: softmax {:e}, log-softmax {:e}",
        worst[0], worst[1]
    );
}

/// The fused step equals the graph run node by node bit for bit, special values included:
/// binding an intermediate as a graph output keeps the nodes unfused (each one in turn).
#[test]
fn fused_softmax_equals_the_node_by_node_graph() {
    let (dims, red): (&[i64], &[i64]) = (&[24, 45], &[24, 1]);
    let x = values(24 * 45, 45, 11);
    for log in [false, true] {
        let (fused, steps) = run(log, dims, red, &[], &x);
        assert_eq!(steps, ["Softmax"]);
        let mids: &[i64] = if log {
            &[MAX, D, E, S, L]
        } else {
            &[MAX, D, E, S]
        };
        for &b in mids {
            let (plain, steps) = run(log, dims, red, &[b], &x);
            assert!(
                !steps.contains(&"Softmax".to_string()),
                "bound {b}: not fused"
            );
            assert_same_bits(
                &fused,
                &plain,
                &format!("log {log}, intermediate {b} bound"),
            );
        }
    }
}

/// What must not fuse runs node by node: a reduced axis that is not trailing, a HALF
/// intermediate (rounded between the nodes).
#[test]
fn softmax_over_a_middle_axis_or_with_a_half_intermediate_is_not_fused() {
    let x = random_values(4 * 9 * 5, 3, -4.0, 4.0);
    let (y, steps) = run(false, &[4, 9, 5], &[4, 1, 5], &[], &x);
    assert!(!steps.contains(&"Softmax".to_string()), "{steps:?}");
    // Still a softmax over the middle axis.
    for a in 0..4 {
        for c in 0..5 {
            let s: f32 = (0..9).map(|b| y[(a * 9 + b) * 5 + c]).sum();
            assert!((s - 1.0).abs() < 1e-5, "column sum {s}");
        }
    }
    let steps = plan_steps(graph_with(false, &[4, 45], &[4, 1], &[], DT::HALF)).expect("plans");
    assert!(!steps.contains(&"Softmax".to_string()), "{steps:?}");
}

/// One rayon thread and four give the same bits, for short rows grouped into tasks and long
/// rows.
#[test]
fn fused_softmax_is_bit_identical_for_1_and_n_threads() {
    let in_pool = |n: usize, f: &(dyn Fn() -> Vec<f32> + Sync)| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
            .install(f)
    };
    for (dims, red) in [
        (&[513i64, 37][..], &[513i64, 1][..]),
        (&[33, 1000], &[33, 1]),
    ] {
        let n = (dims[0] * dims[1]) as usize;
        let x = values(n, dims[1] as usize, 5);
        for log in [false, true] {
            let f = || run(log, dims, red, &[], &x).0;
            assert_same_bits(
                &in_pool(1, &f),
                &in_pool(4, &f),
                &format!("{dims:?} log {log}"),
            );
        }
    }
}
