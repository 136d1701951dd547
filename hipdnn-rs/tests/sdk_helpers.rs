//! The `Graph` helpers (issue 32 item 4): each helper's graph is node for node the graph built
//! by hand with the op methods (the pattern the engines fuse), and executed on the CPU handle
//! it matches an f64 reference — on the last axis, on a non-last axis and on channels-last
//! inputs. Bad axes and ranks are typed errors with the fix in the message.

use hipdnn::ndarray::{ArrayD, Axis, IxDyn};
use hipdnn::*;

fn f32_tensor(g: &mut Graph, name: &str, dims: &[i64]) -> TensorId {
    g.tensor(
        TensorAttributes::new(name)
            .data_type(DataType::Float)
            .dims(dims.to_vec()),
    )
}

fn pw(mode: PointwiseMode) -> PointwiseAttributes {
    PointwiseAttributes::with_mode(mode)
}

fn red(mode: ReductionMode) -> ReductionAttributes {
    ReductionAttributes::new().mode(mode)
}

/// Deterministic values in about [-3, 3).
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let v = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8;
            (v % 6000) as f32 / 1000.0 - 3.0
        })
        .collect()
}

/// Builds `g` on the CPU, binds `inputs` (by handle, logical arrays laid out as their tensors
/// are) and returns output `y` as a logical f64 array.
fn run(g: &mut Graph, inputs: &[(TensorId, &ArrayD<f32>)], y: TensorId) -> ArrayD<f64> {
    g.set_output(y, true);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let bufs: Vec<(TensorId, Buffer<f32>)> = inputs
        .iter()
        .map(|(t, a)| {
            let attrs = g.tensor_attributes(*t);
            // Scatter the logical array into memory at the tensor's strides.
            let len = attrs
                .dims
                .iter()
                .zip(&attrs.strides)
                .map(|(d, s)| (d - 1) * s)
                .sum::<i64>() as usize
                + 1;
            let mut mem = vec![0f32; len];
            for (ix, v) in a.indexed_iter() {
                let off: i64 = (0..attrs.dims.len())
                    .map(|d| ix[d] as i64 * attrs.strides[d])
                    .sum();
                mem[off as usize] = *v;
            }
            (*t, Buffer::from_slice(&mem))
        })
        .collect();
    let ya = g.tensor_attributes(y).clone();
    let n = ya
        .dims
        .iter()
        .zip(&ya.strides)
        .map(|(d, s)| (d - 1) * s)
        .sum::<i64>() as usize
        + 1;
    let mut yb = Buffer::<f32>::zeros(n);
    let mut pack = VariantPack::new();
    for (t, b) in &bufs {
        pack = pack.bind(*t, b);
    }
    let ws = g.workspace_size().unwrap();
    g.execute(&handle, pack.bind(y, &mut yb), Some(&mut Buffer::zeros(ws)))
        .unwrap();
    yb.to_array::<IxDyn>(&ya).unwrap().mapv(f64::from)
}

fn logical(dims: &[usize], seed: u32) -> ArrayD<f32> {
    let n = dims.iter().product();
    ArrayD::from_shape_vec(IxDyn(dims), values(n, seed)).unwrap()
}

/// f64 softmax (or log-softmax) of `x` along `axis`.
fn softmax_ref(x: &ArrayD<f32>, axis: usize, log: bool) -> ArrayD<f64> {
    let x = x.mapv(f64::from);
    let mut y = x.clone();
    for (xl, mut yl) in x.lanes(Axis(axis)).into_iter().zip(y.lanes_mut(Axis(axis))) {
        let m = xl.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = xl.iter().map(|v| (v - m).exp()).sum();
        for (o, v) in yl.iter_mut().zip(xl.iter()) {
            *o = if log {
                (v - m) - s.ln()
            } else {
                (v - m).exp() / s
            };
        }
    }
    y
}

fn assert_close(got: &ArrayD<f64>, want: &ArrayD<f64>, tol: f64) {
    assert_eq!(got.shape(), want.shape());
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!((g - w).abs() <= tol, "element {i}: got {g}, want {w}");
    }
}

/// The five nodes of softmax (six of log-softmax) written by hand, as the MiniLM/bench code
/// writes them.
fn softmax_by_hand(g: &mut Graph, x: TensorId, reduced: &[i64], log: bool) -> TensorId {
    let m = g.reduction(x, reduced.to_vec(), red(ReductionMode::MaxOp));
    let d = g.pointwise(x, m, pw(PointwiseMode::Sub));
    let e = g.pointwise_unary(d, pw(PointwiseMode::Exp));
    let s = g.reduction(e, reduced.to_vec(), red(ReductionMode::Add));
    if log {
        let l = g.pointwise_unary(s, pw(PointwiseMode::Log));
        g.pointwise(d, l, pw(PointwiseMode::Sub))
    } else {
        g.pointwise(e, s, pw(PointwiseMode::Div))
    }
}

#[test]
fn softmax_and_log_softmax_build_the_fused_pattern_node_for_node() {
    for log in [false, true] {
        for (axis, reduced) in [(2usize, [2i64, 3, 1]), (1, [2, 1, 4])] {
            let (mut a, mut b) = (Graph::new(), Graph::new());
            let xa = f32_tensor(&mut a, "x", &[2, 3, 4]);
            let xb = f32_tensor(&mut b, "x", &[2, 3, 4]);
            let ya = if log {
                a.log_softmax(xa, axis).unwrap()
            } else {
                a.softmax(xa, axis).unwrap()
            };
            let yb = softmax_by_hand(&mut b, xb, &reduced, log);
            assert_eq!(ya, yb);
            assert_eq!(a, b, "log {log} axis {axis}");
            let kinds: Vec<&str> = a.nodes().map(|(_, n)| n.method()).collect();
            let want: &[&str] = if log {
                &[
                    "reduction",
                    "pointwise",
                    "pointwise",
                    "reduction",
                    "pointwise",
                    "pointwise",
                ]
            } else {
                &[
                    "reduction",
                    "pointwise",
                    "pointwise",
                    "reduction",
                    "pointwise",
                ]
            };
            assert_eq!(kinds, want);
        }
    }
}

#[test]
fn softmax_on_the_last_axis_matches_an_f64_reference() {
    let x = logical(&[3, 5], 1);
    for log in [false, true] {
        let mut g = Graph::new();
        let xt = f32_tensor(&mut g, "x", &[3, 5]);
        let y = if log {
            g.log_softmax(xt, 1).unwrap()
        } else {
            g.softmax(xt, 1).unwrap()
        };
        let got = run(&mut g, &[(xt, &x)], y);
        assert_close(&got, &softmax_ref(&x, 1, log), 1e-6);
    }
}

#[test]
fn softmax_on_a_non_last_axis_matches_an_f64_reference() {
    let x = logical(&[2, 3, 4], 2);
    for (axis, log) in [(1, false), (0, true), (1, true)] {
        let mut g = Graph::new();
        let xt = f32_tensor(&mut g, "x", &[2, 3, 4]);
        let y = if log {
            g.log_softmax(xt, axis).unwrap()
        } else {
            g.softmax(xt, axis).unwrap()
        };
        assert_eq!(g.tensor_attributes(y).strides, [12, 4, 1]);
        let got = run(&mut g, &[(xt, &x)], y);
        assert_close(&got, &softmax_ref(&x, axis, log), 1e-6);
    }
}

#[test]
fn softmax_over_the_channels_of_a_channels_last_input_matches_an_f64_reference() {
    let x = logical(&[2, 3, 2, 2], 3);
    let mut g = Graph::new();
    let xt = g.tensor(
        TensorAttributes::new("x")
            .data_type(DataType::Float)
            .dims([2, 3, 2, 2])
            .packed_nhwc(),
    );
    let y = g.softmax(xt, 1).unwrap();
    assert_eq!(g.tensor_attributes(y).strides, [12, 1, 6, 3], "y is NHWC");
    let got = run(&mut g, &[(xt, &x)], y);
    assert_close(&got, &softmax_ref(&x, 1, false), 1e-6);
}

#[test]
fn a_softmax_axis_outside_the_tensor_is_refused_with_the_valid_range() {
    let mut g = Graph::new();
    let x = f32_tensor(&mut g, "x", &[2, 3]);
    let e = g.softmax(x, 2).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "softmax: axis 2 is not an axis of tensor 'x' (dims [2, 3]); pass an axis in 0..2"
    );
    let e = g.log_softmax(x, 7).unwrap_err();
    assert!(
        e.message
            .starts_with("log_softmax: axis 7 is not an axis of tensor 'x'"),
        "{}",
        e.message
    );
    assert_eq!(g.node_count(), 0, "nothing is added");
}

#[test]
fn global_pools_are_one_reduction_to_n_c_1_1() {
    for (avg, mode) in [(true, ReductionMode::Avg), (false, ReductionMode::MaxOp)] {
        let (mut a, mut b) = (Graph::new(), Graph::new());
        let xa = f32_tensor(&mut a, "x", &[2, 3, 4, 5]);
        let xb = f32_tensor(&mut b, "x", &[2, 3, 4, 5]);
        let ya = if avg {
            a.global_avg_pool(xa).unwrap()
        } else {
            a.global_max_pool(xa).unwrap()
        };
        b.reduction(xb, [2, 3, 1, 1], red(mode));
        assert_eq!(a, b);
        assert_eq!(a.tensor_attributes(ya).dims, [2, 3, 1, 1]);
        assert_eq!(a.tensor_attributes(ya).strides, [3, 1, 1, 1]);
    }
    let mut g = Graph::new();
    let x = f32_tensor(&mut g, "x", &[2, 3]);
    let e = g.global_avg_pool(x).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "global_avg_pool: tensor 'x' has dims [2, 3]; a global pool needs (N, C, spatial…), at least 3 dims"
    );
    assert!(g.global_max_pool(x).is_err());
    assert_eq!(g.node_count(), 0);
}

#[test]
fn global_pools_of_nchw_and_channels_last_inputs_match_an_f64_reference() {
    let x = logical(&[2, 3, 4, 5], 4);
    for nhwc in [false, true] {
        for avg in [true, false] {
            let mut g = Graph::new();
            let mut attrs = TensorAttributes::new("x")
                .data_type(DataType::Float)
                .dims([2, 3, 4, 5]);
            if nhwc {
                attrs = attrs.packed_nhwc();
            }
            let xt = g.tensor(attrs);
            let y = if avg {
                g.global_avg_pool(xt).unwrap()
            } else {
                g.global_max_pool(xt).unwrap()
            };
            let want_strides: [i64; 4] = if nhwc { [3, 1, 3, 3] } else { [3, 1, 1, 1] };
            assert_eq!(g.tensor_attributes(y).strides, want_strides);
            let got = run(&mut g, &[(xt, &x)], y);
            let want = ArrayD::from_shape_fn(IxDyn(&[2, 3, 1, 1]), |ix| {
                let plane = x.index_axis(Axis(0), ix[0]);
                let plane = plane.index_axis(Axis(0), ix[1]);
                if avg {
                    plane.iter().map(|v| f64::from(*v)).sum::<f64>() / 20.0
                } else {
                    plane.iter().map(|v| f64::from(*v)).fold(f64::MIN, f64::max)
                }
            });
            assert_close(&got, &want, 1e-6);
        }
    }
}

/// The exact (erf) GELU.
fn gelu(v: f64) -> f64 {
    0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2))
}

/// erf by its Maclaurin series (exact to ~1e-9 for |x| ≤ 5; 1 − erf(5) < 2e-12).
fn erf(x: f64) -> f64 {
    if x.abs() > 5.0 {
        return x.signum();
    }
    let (mut term, mut sum) = (x, x);
    for n in 1..80 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn linear_is_matmul_bias_add_and_one_activation_node() {
    for act in [
        Activation::None,
        Activation::Relu,
        Activation::Gelu,
        Activation::GeluTanh,
        Activation::Silu,
        Activation::Sigmoid,
        Activation::Tanh,
    ] {
        for with_bias in [true, false] {
            let (mut a, mut b) = (Graph::new(), Graph::new());
            let mut ids = Vec::new();
            for g in [&mut a, &mut b] {
                let x = f32_tensor(g, "x", &[4, 3]);
                let w = f32_tensor(g, "w", &[3, 5]);
                let bias = f32_tensor(g, "bias", &[1, 5]);
                ids.push((x, w, bias));
            }
            let (x, w, bias) = ids[0];
            let ya = a.linear(x, w, with_bias.then_some(bias), act);
            let mut yb = b.matmul(x, w, MatmulAttributes::new());
            if with_bias {
                yb = b.pointwise(yb, bias, pw(PointwiseMode::Add));
            }
            if let Some(mode) = act.mode() {
                yb = b.pointwise_unary(yb, pw(mode));
            }
            assert_eq!(ya, yb);
            assert_eq!(a, b, "{act:?} bias {with_bias}");
        }
    }
    assert_eq!(Activation::Silu.mode(), Some(PointwiseMode::SwishFwd));
    assert_eq!(Activation::default(), Activation::None);
}

#[test]
fn linear_layers_match_an_f64_reference() {
    let (m, k, n) = (4usize, 3usize, 5usize);
    let x = logical(&[m, k], 5);
    let w = logical(&[k, n], 6).mapv(|v| v * 0.25);
    let bias = logical(&[1, n], 7);
    type F = fn(f64) -> f64;
    let acts: [(Activation, F); 4] = [
        (Activation::Relu, |v| v.max(0.0)),
        (Activation::Gelu, gelu),
        (Activation::Silu, |v| v / (1.0 + (-v).exp())),
        (Activation::None, |v| v),
    ];
    for (act, f) in acts {
        let mut g = Graph::new();
        let xt = f32_tensor(&mut g, "x", &[m as i64, k as i64]);
        // w given as the transpose of a PyTorch (N, K) weight: dims [K, N], strides [1, K].
        let wt = g.tensor(
            TensorAttributes::new("w")
                .data_type(DataType::Float)
                .dims([k as i64, n as i64])
                .strides([1, k as i64]),
        );
        let bt = f32_tensor(&mut g, "bias", &[1, n as i64]);
        let y = g.linear(xt, wt, Some(bt), act);
        let got = run(&mut g, &[(xt, &x), (wt, &w), (bt, &bias)], y);
        let want = ArrayD::from_shape_fn(IxDyn(&[m, n]), |ix| {
            let dot: f64 = (0..k)
                .map(|j| f64::from(x[[ix[0], j]]) * f64::from(w[[j, ix[1]]]))
                .sum();
            f(dot + f64::from(bias[[0, ix[1]]]))
        });
        assert_close(&got, &want, 1e-5);
    }
}

#[test]
fn norm_helpers_add_the_epsilon_scalar_and_one_inference_node() {
    let (mut a, mut b) = (Graph::new(), Graph::new());
    let mut ids = Vec::new();
    for g in [&mut a, &mut b] {
        let x = f32_tensor(g, "x", &[2, 6]);
        let s = f32_tensor(g, "scale", &[1, 6]);
        let bias = f32_tensor(g, "bias", &[1, 6]);
        ids.push((x, s, bias));
    }
    let (x, s, bias) = ids[0];
    let y1 = a.layernorm_inference(x, s, bias, 1e-5);
    let y2 = a.rmsnorm_inference(y1, s, 1e-6);
    let e1 =
        b.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)).name("Layernorm_0::EPSILON"));
    let attrs = LayernormAttributes::new()
        .epsilon(e1)
        .forward_phase(NormFwdPhase::Inference);
    let z1 = b.layernorm(x, s, bias, attrs).0;
    let e2 = b.scalar("RmsNorm_1::EPSILON", TensorValue::Float32(1e-6));
    let attrs = RmsNormAttributes::new()
        .epsilon(e2)
        .forward_phase(NormFwdPhase::Inference);
    let z2 = b.rmsnorm(z1, s, attrs).0;
    assert_eq!((y1, y2), (z1, z2));
    assert_eq!(a, b);
    let eps = a.tensors_by_name("Layernorm_0::EPSILON")[0];
    assert!(!a.tensor_attributes(eps).is_virtual);
    assert_eq!(
        a.tensor_attributes(eps).value,
        Some(TensorValue::Float32(1e-5))
    );
}

#[test]
fn norm_helpers_match_an_f64_reference() {
    let (r, c) = (3usize, 6usize);
    let x = logical(&[r, c], 8);
    let scale = logical(&[1, c], 9);
    let bias = logical(&[1, c], 10);
    for rms in [false, true] {
        let mut g = Graph::new();
        let xt = f32_tensor(&mut g, "x", &[r as i64, c as i64]);
        let st = f32_tensor(&mut g, "scale", &[1, c as i64]);
        let (y, inputs) = if rms {
            (
                g.rmsnorm_inference(xt, st, 1e-5),
                vec![(xt, &x), (st, &scale)],
            )
        } else {
            let bt = f32_tensor(&mut g, "bias", &[1, c as i64]);
            (
                g.layernorm_inference(xt, st, bt, 1e-5),
                vec![(xt, &x), (st, &scale), (bt, &bias)],
            )
        };
        let got = run(&mut g, &inputs, y);
        let want = ArrayD::from_shape_fn(IxDyn(&[r, c]), |ix| {
            let row: Vec<f64> = (0..c).map(|j| f64::from(x[[ix[0], j]])).collect();
            let v = row[ix[1]];
            let (sg, bs) = (f64::from(scale[[0, ix[1]]]), f64::from(bias[[0, ix[1]]]));
            if rms {
                let ms = row.iter().map(|a| a * a).sum::<f64>() / c as f64;
                v / (ms + 1e-5).sqrt() * sg
            } else {
                let mean = row.iter().sum::<f64>() / c as f64;
                let var = row.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / c as f64;
                (v - mean) / (var + 1e-5).sqrt() * sg + bs
            }
        });
        assert_close(&got, &want, 1e-5);
    }
}

#[path = "../examples/helpers_vs_raw.rs"]
mod helpers_vs_raw;

/// Issue 32's acceptance line: the app written with the helpers is at most 60% of the lines of
/// the same app written with raw nodes, and both compute the same probabilities (the example's
/// `main` checks both; this runs it).
#[test]
fn the_helper_app_is_at_most_60_percent_of_the_raw_app_and_computes_the_same() {
    helpers_vs_raw::main().unwrap();
    let source = include_str!("../examples/helpers_vs_raw.rs");
    let with_helpers = helpers_vs_raw::app_lines(source, "helpers");
    let raw = helpers_vs_raw::app_lines(source, "raw");
    assert!(with_helpers > 10 && raw > 10, "{with_helpers} / {raw}");
    assert!(
        with_helpers * 10 <= raw * 6,
        "{with_helpers} lines with helpers, {raw} raw"
    );
}
