//! CPU reference pointwise, matmul, norms, reduction, pooling and SDPA against straightforward
//! implementations written here (plain loops, f64 where it helps).

use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, assert_close, random_values, run_graph, tolerance,
};
use hipdnn_schema::graph::{
    BatchnormAttributes, BatchnormAttributesArgs, BatchnormInferenceAttributes,
    BatchnormInferenceAttributesArgs, BatchnormInferenceAttributesVarianceExt,
    BatchnormInferenceAttributesVarianceExtArgs, DataType as DT, LayernormAttributes,
    LayernormAttributesArgs, NodeAttributes, PaddingMode, PointwiseAttributesArgs,
    PointwiseMode as M, RMSNormAttributes, RMSNormAttributesArgs, ReductionAttributes,
    ReductionAttributesArgs, ReductionMode as R, ResampleFwdAttributes, ResampleFwdAttributesArgs,
    ResampleMode, SdpaAttributes, SdpaAttributesArgs,
};
use hipdnn_schema::tensor_value::TensorValue;

fn vol(d: &[i64]) -> usize {
    d.iter().product::<i64>() as usize
}

/// erf by its Maclaurin series (f64, |x| ≤ 3 here).
fn erf_series(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn unary_ref(m: M, x: f64) -> f64 {
    let gelu_u = |x: f64| (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3));
    match m {
        M::ABS => x.abs(),
        M::CEIL => x.ceil(),
        M::ERF => erf_series(x),
        M::EXP => x.exp(),
        M::FLOOR => x.floor(),
        M::IDENTITY => x,
        M::LOG => x.ln(),
        M::LOGICAL_NOT => f64::from(u8::from(x == 0.0)),
        M::NEG => -x,
        M::RECIPROCAL => 1.0 / x,
        M::RSQRT => 1.0 / x.sqrt(),
        M::SIGMOID_FWD => sig(x),
        M::SIN => x.sin(),
        M::SQRT => x.sqrt(),
        M::TAN => x.tan(),
        M::TANH_FWD => x.tanh(),
        M::ELU_FWD => {
            if x > 0.0 {
                x
            } else {
                0.7 * (x.exp() - 1.0)
            }
        }
        M::GELU_FWD => 0.5 * x * (1.0 + erf_series(x / 2f64.sqrt())),
        M::GELU_APPROX_TANH_FWD => 0.5 * x * (1.0 + gelu_u(x).tanh()),
        M::SOFTPLUS_FWD => (1.0 + (1.5 * x).exp()).ln() / 1.5,
        M::SWISH_FWD => x * sig(1.3 * x),
        M::RELU_FWD => {
            if x <= -0.2 {
                0.1 * (x + 0.2) - 0.2
            } else {
                x.min(0.5)
            }
        }
        _ => unreachable!(),
    }
}

fn binary_ref(m: M, a: f64, x: f64) -> f64 {
    let b = |v: bool| f64::from(u8::from(v));
    let d = 1e-6;
    // Backward modes: dy · d/dx of the forward, by a central difference of unary_ref.
    let fwd = |f: M| a * (unary_ref(f, x + d) - unary_ref(f, x - d)) / (2.0 * d);
    match m {
        M::ADD => a + x,
        M::SUB => a - x,
        M::MUL => a * x,
        M::DIV => a / x,
        M::ADD_SQUARE => a + x * x,
        M::MAX_OP => a.max(x),
        M::MIN_OP => a.min(x),
        M::CMP_EQ => b(a == x),
        M::CMP_NEQ => b(a != x),
        M::CMP_GT => b(a > x),
        M::CMP_GE => b(a >= x),
        M::CMP_LT => b(a < x),
        M::CMP_LE => b(a <= x),
        M::LOGICAL_AND => b(a != 0.0 && x != 0.0),
        M::LOGICAL_OR => b(a != 0.0 || x != 0.0),
        M::SIGMOID_BWD => fwd(M::SIGMOID_FWD),
        M::TANH_BWD => fwd(M::TANH_FWD),
        M::ELU_BWD => fwd(M::ELU_FWD),
        M::GELU_BWD => fwd(M::GELU_FWD),
        M::GELU_APPROX_TANH_BWD => fwd(M::GELU_APPROX_TANH_FWD),
        M::SOFTPLUS_BWD => fwd(M::SOFTPLUS_FWD),
        M::SWISH_BWD => fwd(M::SWISH_FWD),
        M::RELU_BWD => fwd(M::RELU_FWD),
        _ => unreachable!(),
    }
}

fn pw_args(m: M, ins: &[i64], out: i64) -> PointwiseAttributesArgs {
    PointwiseAttributesArgs {
        operation: m,
        in_0_tensor_uid: ins[0],
        in_1_tensor_uid: ins.get(1).copied(),
        in_2_tensor_uid: ins.get(2).copied(),
        out_0_tensor_uid: out,
        relu_lower_clip: Some(-0.2),
        relu_upper_clip: Some(0.5),
        relu_lower_clip_slope: Some(0.1),
        elu_alpha: Some(0.7),
        softplus_beta: Some(1.5),
        swish_beta: Some(1.3),
        ..Default::default()
    }
}

#[test]
fn pointwise_unary_modes_match_formulas() {
    let positive = [M::LOG, M::SQRT, M::RSQRT, M::RECIPROCAL];
    let modes = [
        M::ABS,
        M::CEIL,
        M::ERF,
        M::EXP,
        M::FLOOR,
        M::IDENTITY,
        M::LOG,
        M::LOGICAL_NOT,
        M::NEG,
        M::RECIPROCAL,
        M::RSQRT,
        M::SIGMOID_FWD,
        M::SIN,
        M::SQRT,
        M::TAN,
        M::TANH_FWD,
        M::ELU_FWD,
        M::GELU_FWD,
        M::GELU_APPROX_TANH_FWD,
        M::SOFTPLUS_FWD,
        M::SWISH_FWD,
        M::RELU_FWD,
    ];
    for m in modes {
        let (lo, hi) = if positive.contains(&m) {
            (0.1, 2.0)
        } else {
            (-1.5, 1.5)
        };
        let mut x = random_values(24, m.0 as u64, lo, hi);
        x[0] = 0.0_f32.max(lo);
        let mut g = GraphBuilder::new("pw");
        g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[2, 3, 4]).channels_last())
            .tensor(TensorSpec::new(2, "y", DT::FLOAT, &[2, 3, 4]));
        g.pointwise("pw", pw_args(m, &[1], 2));
        let got = run_graph(g, &[(1, x.clone())], &[2])
            .expect("run")
            .remove(0);
        let want: Vec<f32> = x
            .iter()
            .map(|&v| unary_ref(m, f64::from(v)) as f32)
            .collect();
        assert_close(&format!("{m:?}"), &got, &want, 1e-5);
    }
}

#[test]
fn pointwise_binary_modes_broadcast_and_match_formulas() {
    let modes = [
        M::ADD,
        M::SUB,
        M::MUL,
        M::DIV,
        M::ADD_SQUARE,
        M::MAX_OP,
        M::MIN_OP,
        M::CMP_EQ,
        M::CMP_NEQ,
        M::CMP_GT,
        M::CMP_GE,
        M::CMP_LT,
        M::CMP_LE,
        M::LOGICAL_AND,
        M::LOGICAL_OR,
        M::SIGMOID_BWD,
        M::TANH_BWD,
        M::ELU_BWD,
        M::GELU_BWD,
        M::GELU_APPROX_TANH_BWD,
        M::SOFTPLUS_BWD,
        M::SWISH_BWD,
        M::RELU_BWD,
    ];
    for m in modes {
        let a = random_values(24, 100 + m.0 as u64, -1.5, 1.5);
        let mut x = random_values(3, 200 + m.0 as u64, -1.5, 1.5);
        x[1] = a[4]; // an equal pair for the comparisons
        // A zero for the logical modes; away from the activation kinks for the *_BWD modes.
        x[2] = if matches!(
            m,
            M::ADD | M::MUL | M::CMP_EQ | M::LOGICAL_AND | M::LOGICAL_OR
        ) {
            0.0
        } else {
            0.37
        };
        let mut g = GraphBuilder::new("pw");
        g.tensor(TensorSpec::new(1, "a", DT::FLOAT, &[2, 3, 4]))
            .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[3, 1]))
            .tensor(TensorSpec::new(3, "y", DT::FLOAT, &[2, 3, 4]));
        g.pointwise("pw", pw_args(m, &[1, 2], 3));
        let got = run_graph(g, &[(1, a.clone()), (2, x.clone())], &[3])
            .expect("run")
            .remove(0);
        let want: Vec<f32> = (0..24)
            .map(|i| binary_ref(m, f64::from(a[i]), f64::from(x[(i / 4) % 3])) as f32)
            .collect();
        let tol = if m.0 == M::RELU_BWD.0 || (13..=20).contains(&m.0) || m.0 >= 36 {
            1e-3
        } else {
            1e-5
        };
        assert_close(&format!("{m:?}"), &got, &want, tol);
    }
}

#[test]
fn pointwise_bool_output_select_gen_index_and_int_types() {
    // CMP_LT into a BOOLEAN output, then BINARY_SELECT (in2 ? in0 : in1) into f16.
    let a = random_values(12, 7, -1.0, 1.0);
    let b = random_values(12, 8, -1.0, 1.0);
    let mut g = GraphBuilder::new("sel");
    g.tensor(TensorSpec::new(1, "a", DT::FLOAT, &[3, 4]))
        .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[3, 4]))
        .tensor(TensorSpec::new(3, "lt", DT::BOOLEAN, &[3, 4]))
        .tensor(TensorSpec::new(4, "y", DT::HALF, &[3, 4]))
        .tensor(TensorSpec::new(5, "idx", DT::INT32, &[3, 4]))
        .tensor(TensorSpec::new(6, "i8", DT::INT8, &[3, 4]))
        .tensor(TensorSpec::new(7, "sum", DT::INT32, &[3, 4]));
    g.pointwise("lt", pw_args(M::CMP_LT, &[1, 2], 3));
    g.pointwise("sel", pw_args(M::BINARY_SELECT, &[1, 2, 3], 4));
    g.pointwise(
        "gen",
        PointwiseAttributesArgs {
            operation: M::GEN_INDEX,
            in_0_tensor_uid: 1,
            out_0_tensor_uid: 5,
            axis_tensor_uid: Some(1),
            ..Default::default()
        },
    );
    g.pointwise("add", pw_args(M::ADD, &[5, 6], 7));
    let i8v: Vec<f32> = (0..12).map(|i| (i as f32) - 6.0).collect();
    let out = run_graph(
        g,
        &[(1, a.clone()), (2, b.clone()), (6, i8v.clone())],
        &[3, 4, 5, 7],
    )
    .expect("run");
    let lt: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| if x < y { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(out[0], lt);
    let sel: Vec<f32> = (0..12)
        .map(|i| half::f16::from_f32(if lt[i] != 0.0 { a[i] } else { b[i] }).to_f32())
        .collect();
    assert_eq!(out[1], sel);
    let idx: Vec<f32> = (0..12).map(|i| (i % 4) as f32).collect();
    assert_eq!(out[2], idx);
    assert_eq!(out[3], (0..12).map(|i| idx[i] + i8v[i]).collect::<Vec<_>>());
}

#[test]
fn pointwise_pass_by_value_scalars_and_bfloat16() {
    let x = random_values(8, 9, -2.0, 2.0);
    let mut g = GraphBuilder::new("scal");
    g.tensor(TensorSpec::new(1, "x", DT::BFLOAT16, &[2, 4]))
        .tensor(TensorSpec::scalar(2, "c", TensorValue::Float32(0.75)))
        .tensor(TensorSpec::new(3, "t", DT::FLOAT, &[2, 4]).virtual_())
        .tensor(TensorSpec::new(4, "r", DT::FLOAT, &[1]).runtime())
        .tensor(TensorSpec::new(5, "y", DT::BFLOAT16, &[2, 4]));
    g.pointwise("mul", pw_args(M::MUL, &[1, 2], 3));
    g.pointwise("add", pw_args(M::ADD, &[3, 4], 5));
    let xq = TensorSpec::new(1, "x", DT::BFLOAT16, &[2, 4]).quantize(&x);
    let got = run_graph(g, &[(1, x.clone()), (4, vec![-0.5])], &[5])
        .expect("run")
        .remove(0);
    let want: Vec<f32> = xq.iter().map(|v| v * 0.75 - 0.5).collect();
    assert_close("bf16 scalars", &got, &want, tolerance(DT::BFLOAT16, false));
}

#[test]
fn matmul_batched_broadcast_matches_loops() {
    for (ad, bd, cd, dt) in [
        (vec![2, 3, 5, 7], vec![3, 7, 4], vec![2, 3, 5, 4], DT::FLOAT),
        (vec![1, 6, 9], vec![4, 9, 3], vec![4, 6, 3], DT::FLOAT),
        (vec![3, 8, 16], vec![3, 16, 5], vec![3, 8, 5], DT::HALF),
    ] {
        let a = random_values(vol(&ad), 21, -1.0, 1.0);
        let b = random_values(vol(&bd), 22, -1.0, 1.0);
        let mut g = GraphBuilder::new("mm");
        let (sa, sb) = (
            TensorSpec::new(1, "a", dt, &ad),
            TensorSpec::new(2, "b", dt, &bd),
        );
        let (aq, bq) = (sa.quantize(&a), sb.quantize(&b));
        g.tensor(sa)
            .tensor(sb)
            .tensor(TensorSpec::new(3, "c", dt, &cd));
        g.matmul("mm", 1, 2, 3);
        let got = run_graph(g, &[(1, a), (2, b)], &[3])
            .expect("run")
            .remove(0);
        let r = cd.len();
        let (m, n, k) = (
            cd[r - 2] as usize,
            cd[r - 1] as usize,
            ad[ad.len() - 1] as usize,
        );
        let batch: Vec<i64> = cd[..r - 2].to_vec();
        let nb = vol(&batch);
        let bidx = |d: &[i64], bi: usize| -> usize {
            // broadcast batch index of an operand with batch dims d[..len-2]
            let bd = &d[..d.len() - 2];
            let mut rem = bi;
            let mut idx = vec![0usize; batch.len()];
            for i in (0..batch.len()).rev() {
                idx[i] = rem % batch[i] as usize;
                rem /= batch[i] as usize;
            }
            let off = batch.len() - bd.len();
            let mut flat = 0;
            for (j, &dd) in bd.iter().enumerate() {
                flat = flat * dd as usize + if dd == 1 { 0 } else { idx[off + j] };
            }
            flat
        };
        let mut want = vec![0f32; nb * m * n];
        for bi in 0..nb {
            let (ab, bb) = (bidx(&ad, bi), bidx(&bd, bi));
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0f64;
                    for kk in 0..k {
                        s += f64::from(aq[(ab * m + i) * k + kk])
                            * f64::from(bq[(bb * k + kk) * n + j]);
                    }
                    want[(bi * m + i) * n + j] = s as f32;
                }
            }
        }
        assert_close(
            &format!("matmul {ad:?}x{bd:?}"),
            &got,
            &want,
            tolerance(dt, true),
        );
    }
}

fn eps(uid: i64, v: f32) -> TensorSpec {
    TensorSpec::scalar(uid, "eps", TensorValue::Float32(v))
}

#[test]
fn batchnorm_inference_both_forms_match_formula() {
    let (n, c, h, w) = (2usize, 3usize, 4usize, 5usize);
    let x = random_values(n * c * h * w, 31, -2.0, 2.0);
    let mean = random_values(c, 32, -0.5, 0.5);
    let var = random_values(c, 33, 0.5, 2.0);
    let scale = random_values(c, 34, 0.5, 1.5);
    let bias = random_values(c, 35, -0.5, 0.5);
    let inv: Vec<f32> = var.iter().map(|v| 1.0 / (v + 1e-3f32).sqrt()).collect();
    let want: Vec<f32> = (0..x.len())
        .map(|i| {
            let ch = (i / (h * w)) % c;
            (x[i] - mean[ch]) * inv[ch] * scale[ch] + bias[ch]
        })
        .collect();
    for variance_form in [false, true] {
        let mut g = GraphBuilder::new("bn");
        g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[2, 3, 4, 5]).channels_last())
            .tensor(TensorSpec::new(2, "mean", DT::FLOAT, &[1, 3, 1, 1]))
            .tensor(TensorSpec::new(3, "stat", DT::FLOAT, &[1, 3, 1, 1]))
            .tensor(TensorSpec::new(4, "scale", DT::FLOAT, &[1, 3, 1, 1]))
            .tensor(TensorSpec::new(5, "bias", DT::FLOAT, &[1, 3, 1, 1]))
            .tensor(TensorSpec::new(6, "y", DT::FLOAT, &[2, 3, 4, 5]))
            .tensor(eps(7, 1e-3));
        g.node(
            "bn",
            Box::new(move |fbb| {
                if variance_form {
                    (
                        NodeAttributes::BatchnormInferenceAttributesVarianceExt,
                        BatchnormInferenceAttributesVarianceExt::create(
                            fbb,
                            &BatchnormInferenceAttributesVarianceExtArgs {
                                x_tensor_uid: 1,
                                mean_tensor_uid: 2,
                                variance_tensor_uid: 3,
                                scale_tensor_uid: 4,
                                bias_tensor_uid: 5,
                                y_tensor_uid: 6,
                                epsilon_tensor_uid: 7,
                            },
                        )
                        .as_union_value(),
                    )
                } else {
                    (
                        NodeAttributes::BatchnormInferenceAttributes,
                        BatchnormInferenceAttributes::create(
                            fbb,
                            &BatchnormInferenceAttributesArgs {
                                x_tensor_uid: 1,
                                mean_tensor_uid: 2,
                                inv_variance_tensor_uid: 3,
                                scale_tensor_uid: 4,
                                bias_tensor_uid: 5,
                                y_tensor_uid: 6,
                            },
                        )
                        .as_union_value(),
                    )
                }
            }),
        );
        let stat = if variance_form {
            var.clone()
        } else {
            inv.clone()
        };
        let got = run_graph(
            g,
            &[
                (1, x.clone()),
                (2, mean.clone()),
                (3, stat),
                (4, scale.clone()),
                (5, bias.clone()),
            ],
            &[6],
        )
        .expect("run")
        .remove(0);
        assert_close("batchnorm inference", &got, &want, 1e-4);
    }
}

/// Batchnorm training forward over x (3, 2, 2, 3) with saved and running statistics: x 1,
/// scale 2, bias 3, epsilon 4, prev running mean 5 (dims `pm_dims`) and variance 6, momentum
/// 7, y 8, mean 9, inv_variance 10, next running mean 11 and variance 12.
fn bn_training_graph(pm_dims: &[i64]) -> GraphBuilder {
    let mut g = GraphBuilder::new("bnt");
    g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[3, 2, 2, 3]))
        .tensor(TensorSpec::new(2, "scale", DT::FLOAT, &[1, 2, 1, 1]))
        .tensor(TensorSpec::new(3, "bias", DT::FLOAT, &[1, 2, 1, 1]))
        .tensor(eps(4, 1e-5))
        .tensor(TensorSpec::new(5, "pm", DT::FLOAT, pm_dims))
        .tensor(TensorSpec::new(6, "pv", DT::FLOAT, &[1, 2, 1, 1]))
        .tensor(TensorSpec::scalar(7, "momentum", TensorValue::Float32(0.1)))
        .tensor(TensorSpec::new(8, "y", DT::FLOAT, &[3, 2, 2, 3]))
        .tensor(TensorSpec::new(9, "mean", DT::FLOAT, &[1, 2, 1, 1]))
        .tensor(TensorSpec::new(10, "inv", DT::FLOAT, &[1, 2, 1, 1]))
        .tensor(TensorSpec::new(11, "nm", DT::FLOAT, &[1, 2, 1, 1]))
        .tensor(TensorSpec::new(12, "nv", DT::FLOAT, &[1, 2, 1, 1]));
    g.node(
        "bn",
        Box::new(|fbb| {
            (
                NodeAttributes::BatchnormAttributes,
                BatchnormAttributes::create(
                    fbb,
                    &BatchnormAttributesArgs {
                        x_tensor_uid: 1,
                        scale_tensor_uid: 2,
                        bias_tensor_uid: 3,
                        epsilon_tensor_uid: 4,
                        prev_running_mean_tensor_uid: Some(5),
                        prev_running_variance_tensor_uid: Some(6),
                        momentum_tensor_uid: Some(7),
                        y_tensor_uid: 8,
                        mean_tensor_uid: Some(9),
                        inv_variance_tensor_uid: Some(10),
                        next_running_mean_tensor_uid: Some(11),
                        next_running_variance_tensor_uid: Some(12),
                        ..Default::default()
                    },
                )
                .as_union_value(),
            )
        }),
    );
    g
}

#[test]
fn batchnorm_running_statistics_of_another_volume_are_refused_at_plan_time() {
    // prev running mean of 3 values for C = 2: refused when planned (it used to panic in
    // execute's reshape).
    let e = run_graph(
        bn_training_graph(&[1, 3, 1, 1]),
        &[
            (1, vec![0.5; 36]),
            (2, vec![1.0; 2]),
            (3, vec![0.0; 2]),
            (5, vec![0.0; 3]),
            (6, vec![1.0; 2]),
        ],
        &[8, 9, 10, 11, 12],
    )
    .unwrap_err();
    assert_eq!(e.status, hipdnn_backend::PluginStatus::NotApplicable);
    assert!(
        e.message.ends_with(
            ": running statistics tensor uid 5 dims [1, 3, 1, 1] must hold C = 2 values"
        ),
        "{}",
        e.message
    );
}

#[test]
fn batchnorm_training_stats_and_running_averages_match_formula() {
    let (n, c, hw) = (3usize, 2usize, 6usize);
    let x = random_values(n * c * hw, 41, -2.0, 2.0);
    let scale = vec![1.5f32, 0.5];
    let bias = vec![0.1f32, -0.2];
    let (pm, pv) = (vec![0.2f32, -0.1], vec![1.0f32, 2.0]);
    let g = bn_training_graph(&[1, 2, 1, 1]);
    let out = run_graph(
        g,
        &[
            (1, x.clone()),
            (2, scale.clone()),
            (3, bias.clone()),
            (5, pm.clone()),
            (6, pv.clone()),
        ],
        &[8, 9, 10, 11, 12],
    )
    .expect("run");
    let mut y = vec![0f32; x.len()];
    for ch in 0..c {
        let vals: Vec<f64> = (0..n)
            .flat_map(|nn| (0..hw).map(move |i| (nn * c + ch) * hw + i))
            .map(|i| f64::from(x[i]))
            .collect();
        let cnt = vals.len() as f64;
        let mean = vals.iter().sum::<f64>() / cnt;
        let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cnt;
        let inv = 1.0 / (var + 1e-5).sqrt();
        assert_close("mean", &out[1][ch..=ch], &[mean as f32], 1e-5);
        assert_close("inv_variance", &out[2][ch..=ch], &[inv as f32], 1e-4);
        assert_close(
            "running mean",
            &out[3][ch..=ch],
            &[(0.9 * f64::from(pm[ch]) + 0.1 * mean) as f32],
            1e-5,
        );
        assert_close(
            "running var",
            &out[4][ch..=ch],
            &[(0.9 * f64::from(pv[ch]) + 0.1 * var * cnt / (cnt - 1.0)) as f32],
            1e-5,
        );
        for nn in 0..n {
            for i in 0..hw {
                let j = (nn * c + ch) * hw + i;
                y[j] = ((f64::from(x[j]) - mean) * inv * f64::from(scale[ch]) + f64::from(bias[ch]))
                    as f32;
            }
        }
    }
    assert_close("y", &out[0], &y, 1e-4);
}

#[test]
fn layernorm_and_rmsnorm_match_formula() {
    let (rows, cols) = (6usize, 10usize);
    let x = random_values(rows * cols, 51, -2.0, 2.0);
    let scale = random_values(cols, 52, 0.5, 1.5);
    let bias = random_values(cols, 53, -0.5, 0.5);
    for (ndc, rms) in [(2, false), (0, false), (0, true)] {
        let mut g = GraphBuilder::new("ln");
        g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[6, 2, 5]))
            .tensor(TensorSpec::new(2, "scale", DT::FLOAT, &[1, 2, 5]))
            .tensor(TensorSpec::new(3, "bias", DT::FLOAT, &[1, 2, 5]))
            .tensor(eps(4, 1e-5))
            .tensor(TensorSpec::new(5, "y", DT::FLOAT, &[6, 2, 5]))
            .tensor(TensorSpec::new(6, "mean", DT::FLOAT, &[6, 1, 1]))
            .tensor(TensorSpec::new(7, "inv", DT::FLOAT, &[6, 1, 1]));
        g.node(
            "ln",
            Box::new(move |fbb| {
                if rms {
                    (
                        NodeAttributes::RMSNormAttributes,
                        RMSNormAttributes::create(
                            fbb,
                            &RMSNormAttributesArgs {
                                x_tensor_uid: 1,
                                scale_tensor_uid: 2,
                                epsilon_tensor_uid: 4,
                                y_tensor_uid: 5,
                                bias_tensor_uid: Some(3),
                                inv_rms_tensor_uid: Some(7),
                                ..Default::default()
                            },
                        )
                        .as_union_value(),
                    )
                } else {
                    (
                        NodeAttributes::LayernormAttributes,
                        LayernormAttributes::create(
                            fbb,
                            &LayernormAttributesArgs {
                                x_tensor_uid: 1,
                                scale_tensor_uid: 2,
                                bias_tensor_uid: 3,
                                epsilon_tensor_uid: 4,
                                y_tensor_uid: 5,
                                normalized_dim_count: ndc,
                                mean_tensor_uid: Some(6),
                                inv_variance_tensor_uid: Some(7),
                                ..Default::default()
                            },
                        )
                        .as_union_value(),
                    )
                }
            }),
        );
        let outs: Vec<i64> = if rms { vec![5, 7] } else { vec![5, 6, 7] };
        let out = run_graph(
            g,
            &[(1, x.clone()), (2, scale.clone()), (3, bias.clone())],
            &outs,
        )
        .expect("run");
        let mut y = vec![0f32; x.len()];
        let mut stats = Vec::new();
        for r in 0..rows {
            let v: Vec<f64> = x[r * cols..(r + 1) * cols]
                .iter()
                .map(|&a| f64::from(a))
                .collect();
            let mean = if rms {
                0.0
            } else {
                v.iter().sum::<f64>() / cols as f64
            };
            let ms = v.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / cols as f64;
            let inv = 1.0 / (ms + 1e-5).sqrt();
            stats.push((mean as f32, inv as f32));
            for (i, a) in v.iter().enumerate() {
                y[r * cols + i] =
                    ((a - mean) * inv * f64::from(scale[i]) + f64::from(bias[i])) as f32;
            }
        }
        assert_close("y", &out[0], &y, 1e-4);
        let inv: Vec<f32> = stats.iter().map(|s| s.1).collect();
        assert_close("inv", out.last().unwrap(), &inv, 1e-4);
        if !rms {
            assert_close(
                "mean",
                &out[1],
                &stats.iter().map(|s| s.0).collect::<Vec<_>>(),
                1e-5,
            );
        }
    }
}

#[test]
fn reduction_all_modes_match_loops() {
    let x = random_values(2 * 3 * 4, 61, -2.0, 2.0);
    let mut x = x;
    x[5] = 0.0;
    for m in [
        R::ADD,
        R::MUL,
        R::MIN_OP,
        R::MAX_OP,
        R::AMAX,
        R::AVG,
        R::NORM1,
        R::NORM2,
        R::MUL_NO_ZEROS,
    ] {
        let mut g = GraphBuilder::new("red");
        g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[2, 3, 4]).strides(&[1, 8, 2]))
            .tensor(TensorSpec::new(2, "y", DT::FLOAT, &[2, 1, 4]));
        g.node(
            "red",
            Box::new(move |fbb| {
                (
                    NodeAttributes::ReductionAttributes,
                    ReductionAttributes::create(
                        fbb,
                        &ReductionAttributesArgs {
                            mode: m,
                            in_tensor_uid: 1,
                            out_tensor_uid: 2,
                            is_deterministic: true,
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        let got = run_graph(g, &[(1, x.clone())], &[2])
            .expect("run")
            .remove(0);
        let mut want = Vec::new();
        for a in 0..2 {
            for c in 0..4 {
                let v: Vec<f64> = (0..3).map(|b| f64::from(x[(a * 3 + b) * 4 + c])).collect();
                want.push(match m {
                    R::ADD => v.iter().sum(),
                    R::MUL => v.iter().product(),
                    R::MIN_OP => v.iter().cloned().fold(f64::INFINITY, f64::min),
                    R::MAX_OP => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                    R::AMAX => v.iter().map(|a| a.abs()).fold(0.0, f64::max),
                    R::AVG => v.iter().sum::<f64>() / 3.0,
                    R::NORM1 => v.iter().map(|a| a.abs()).sum(),
                    R::NORM2 => v.iter().map(|a| a * a).sum::<f64>().sqrt(),
                    _ => v.iter().filter(|a| **a != 0.0).product(),
                } as f32);
            }
        }
        assert_close(&format!("{m:?}"), &got, &want, 1e-4);
    }
}

#[test]
fn pooling_max_with_index_and_average_match_loops() {
    let (h, w) = (7i64, 6i64);
    let x = random_values((2 * h * w) as usize, 71, -2.0, 2.0);
    let (win, st, pre, post) = ([3i64, 2], [2i64, 2], [1i64, 0], [1i64, 1]);
    let oh = (h + pre[0] + post[0] - win[0]) / st[0] + 1;
    let ow = (w + pre[1] + post[1] - win[1]) / st[1] + 1;
    for mode in [
        ResampleMode::MAXPOOL,
        ResampleMode::AVGPOOL_INCLUDE_PADDING,
        ResampleMode::AVGPOOL_EXCLUDE_PADDING,
    ] {
        let max = mode == ResampleMode::MAXPOOL;
        let mut g = GraphBuilder::new("pool");
        g.tensor(TensorSpec::new(1, "x", DT::FLOAT, &[1, 2, h, w]).channels_last())
            .tensor(TensorSpec::new(2, "y", DT::FLOAT, &[1, 2, oh, ow]))
            .tensor(TensorSpec::new(3, "idx", DT::INT32, &[1, 2, oh, ow]));
        g.node(
            "pool",
            Box::new(move |fbb| {
                let (window, stride) = (fbb.create_vector(&win), fbb.create_vector(&st));
                let (pre_padding, post_padding) =
                    (fbb.create_vector(&pre), fbb.create_vector(&post));
                (
                    NodeAttributes::ResampleFwdAttributes,
                    ResampleFwdAttributes::create(
                        fbb,
                        &ResampleFwdAttributesArgs {
                            x_tensor_uid: 1,
                            y_tensor_uid: 2,
                            index_tensor_uid: if max { Some(3) } else { None },
                            pre_padding: Some(pre_padding),
                            post_padding: Some(post_padding),
                            stride: Some(stride),
                            window: Some(window),
                            resample_mode: mode,
                            padding_mode: PaddingMode::NEG_INF_PAD,
                            generate_index: Some(max),
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        let outs: Vec<i64> = if max { vec![2, 3] } else { vec![2] };
        let out = run_graph(g, &[(1, x.clone())], &outs).expect("run");
        let (mut y, mut idx) = (Vec::new(), Vec::new());
        for c in 0..2 {
            for i in 0..oh {
                for j in 0..ow {
                    let (mut best, mut bi, mut sum, mut cnt) = (f32::NEG_INFINITY, 0, 0f64, 0);
                    for a in 0..win[0] {
                        for b in 0..win[1] {
                            let (r, s) = (i * st[0] - pre[0] + a, j * st[1] - pre[1] + b);
                            if r < 0 || r >= h || s < 0 || s >= w {
                                continue;
                            }
                            let v = x[((c * h + r) * w + s) as usize];
                            if v > best {
                                best = v;
                                bi = a * win[1] + b;
                            }
                            sum += f64::from(v);
                            cnt += 1;
                        }
                    }
                    y.push(match mode {
                        ResampleMode::MAXPOOL => best,
                        ResampleMode::AVGPOOL_INCLUDE_PADDING => {
                            (sum / (win[0] * win[1]) as f64) as f32
                        }
                        _ => (sum / f64::from(cnt)) as f32,
                    });
                    idx.push(bi as f32);
                }
            }
        }
        assert_close(&format!("{mode:?}"), &out[0], &y, 1e-5);
        if max {
            assert_eq!(out[1], idx);
        }
    }
}

/// Straightforward attention: returns (o, logsumexp).
#[allow(clippy::too_many_arguments)]
fn sdpa_ref(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (b, h, hk, sq, skv, d): (usize, usize, usize, usize, usize, usize),
    scale: f32,
    causal_br: bool,
    mask: Option<&[f32]>,
) -> (Vec<f32>, Vec<f32>) {
    let (mut o, mut st) = (Vec::new(), Vec::new());
    for bi in 0..b {
        for hi in 0..h {
            let kh = hi / (h / hk);
            for i in 0..sq {
                let mut s = vec![f64::NEG_INFINITY; skv];
                for (j, sj) in s.iter_mut().enumerate() {
                    if causal_br && j as i64 > i as i64 + skv as i64 - sq as i64 {
                        continue;
                    }
                    let mut dot = 0f64;
                    for dd in 0..d {
                        dot += f64::from(q[((bi * h + hi) * sq + i) * d + dd])
                            * f64::from(k[((bi * hk + kh) * skv + j) * d + dd]);
                    }
                    *sj = dot * f64::from(scale) + mask.map_or(0.0, |m| f64::from(m[i * skv + j]));
                }
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
                let sum: f64 = p.iter().sum();
                for dd in 0..d {
                    o.push(
                        (p.iter()
                            .enumerate()
                            .map(|(j, pj)| pj * f64::from(v[((bi * hk + kh) * skv + j) * d + dd]))
                            .sum::<f64>()
                            / sum) as f32,
                    );
                }
                st.push((mx + sum.ln()) as f32);
            }
        }
    }
    (o, st)
}

#[test]
fn sdpa_matches_loops_with_gqa_causal_mask_and_scale_tensor() {
    let (b, h, hk, sq, skv, d) = (2usize, 4usize, 2usize, 5usize, 7usize, 8usize);
    let q = random_values(b * h * sq * d, 81, -1.0, 1.0);
    let k = random_values(b * hk * skv * d, 82, -1.0, 1.0);
    let v = random_values(b * hk * skv * d, 83, -1.0, 1.0);
    let mask = random_values(sq * skv, 84, -1.0, 1.0);
    for (causal, with_mask) in [(false, false), (true, false), (false, true)] {
        let mut g = GraphBuilder::new("sdpa");
        g.tensor(TensorSpec::new(
            1,
            "q",
            DT::FLOAT,
            &[b as i64, h as i64, sq as i64, d as i64],
        ))
        .tensor(TensorSpec::new(
            2,
            "k",
            DT::FLOAT,
            &[b as i64, hk as i64, skv as i64, d as i64],
        ))
        .tensor(TensorSpec::new(
            3,
            "v",
            DT::FLOAT,
            &[b as i64, hk as i64, skv as i64, d as i64],
        ))
        .tensor(TensorSpec::new(
            4,
            "o",
            DT::FLOAT,
            &[b as i64, h as i64, sq as i64, d as i64],
        ))
        .tensor(TensorSpec::new(
            5,
            "stats",
            DT::FLOAT,
            &[b as i64, h as i64, sq as i64, 1],
        ))
        .tensor(TensorSpec::scalar(6, "scale", TensorValue::Float32(0.35)))
        .tensor(TensorSpec::new(
            7,
            "mask",
            DT::FLOAT,
            &[1, 1, sq as i64, skv as i64],
        ));
        g.node(
            "sdpa",
            Box::new(move |fbb| {
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
                            scale_tensor_uid: Some(6),
                            causal_mask_bottom_right: causal,
                            attn_mask_tensor_uid: if with_mask { Some(7) } else { None },
                            ..Default::default()
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        let mut ins = vec![(1, q.clone()), (2, k.clone()), (3, v.clone())];
        if with_mask {
            ins.push((7, mask.clone()));
        }
        let out = run_graph(g, &ins, &[4, 5]).expect("run");
        let (o, st) = sdpa_ref(
            &q,
            &k,
            &v,
            (b, h, hk, sq, skv, d),
            0.35,
            causal,
            with_mask.then_some(&mask[..]),
        );
        assert_close("o", &out[0], &o, 1e-4);
        assert_close("stats", &out[1], &st, 1e-4);
    }
}
