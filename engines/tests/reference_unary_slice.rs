//! The vectorized unary loops of the CPU reference engine (`pointwise::unary_slice`, used by
//! the GEMM epilogues, and the slice path of the standalone pointwise node) give exactly the
//! bits of the per-element `pointwise::unary` for every mode and RELU clip/slope parameter,
//! on ordinary values and on the special ones (±0, ±inf, NaN, the clips themselves).

use hipdnn_engines::reference::ops::pointwise::{PointwiseParams, pointwise, unary, unary_slice};
use hipdnn_engines::reference::testing::random_values;
use hipdnn_schema::graph::PointwiseMode as M;
use ndarray::{ArrayD, IxDyn};

fn params(mode: M) -> PointwiseParams {
    PointwiseParams::defaults(mode)
}

fn values() -> Vec<f32> {
    let mut v = random_values(1000, 5, -4.0, 4.0);
    v.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        0.5,
        -0.5,
        6.0,
        -1.0,
        1.0,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        1e-40,
    ]);
    v
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn unary_slice_gives_the_bits_of_unary_for_every_mode_and_relu_parameter() {
    let mut cases = Vec::new();
    for mode in [
        M::RELU_FWD,
        M::IDENTITY,
        M::ABS,
        M::NEG,
        M::EXP,
        M::ERF,
        M::GELU_FWD,
        M::TANH_FWD,
        M::SIGMOID_FWD,
        M::ELU_FWD,
        M::SWISH_FWD,
        M::SOFTPLUS_FWD,
        M::GELU_APPROX_TANH_FWD,
    ] {
        cases.push(params(mode));
    }
    // RELU: clipped (ReLU6), leaky, shifted, inverted clips, infinite clips, NaN slope.
    for (lc, uc, sl) in [
        (0.0, 6.0, 0.0),
        (0.0, f32::MAX, 0.01),
        (-1.0, 1.0, 0.2),
        (0.5, -0.5, 0.3),
        (f32::NEG_INFINITY, f32::INFINITY, 0.0),
        (-0.0, 0.0, -2.0),
        (1.0, 2.0, f32::NAN),
    ] {
        cases.push(PointwiseParams {
            lower_clip: lc,
            upper_clip: uc,
            lower_slope: sl,
            ..params(M::RELU_FWD)
        });
    }
    let x = values();
    for p in cases {
        let want: Vec<f32> = x.iter().map(|&v| unary(&p, v)).collect();
        let mut got = x.clone();
        unary_slice(&p, &mut got);
        assert_eq!(bits(&got), bits(&want), "{p:?}");
        // The standalone node's slice path (dense input of the output's dims).
        let a = ArrayD::from_shape_vec(IxDyn(&[x.len()]), x.clone()).expect("dims");
        let out = pointwise(&p, &[&a], &[x.len()]).expect("runs");
        assert_eq!(
            bits(out.as_slice().expect("dense")),
            bits(&want),
            "node {p:?}"
        );
    }
}

#[test]
fn gemm_epilogue_bias_residual_relu_gives_the_bits_of_the_separate_operations() {
    use hipdnn_engines::reference::ops::gemm::{Bias, Epilogue, Job, run};
    use ndarray::Array2;
    let (m, k, n) = (20, 7, 33);
    let a = Array2::from_shape_vec((m, k), random_values(m * k, 51, -1.0, 1.0)).unwrap();
    let b = Array2::from_shape_vec((k, n), random_values(k * n, 52, -1.0, 1.0)).unwrap();
    let mut r = random_values(m * n, 53, -1.0, 1.0);
    // Special residual values: the clips themselves, ±0, ±inf, NaN.
    r[..8].copy_from_slice(&[
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        6.0,
        -0.2,
        0.5,
    ]);
    let res = Array2::from_shape_vec((m, n), r).unwrap();
    let mut bias = random_values(m, 54, -1.0, 1.0);
    bias[0] = -0.0;
    bias[1] = f32::NAN;
    let mut bare = Array2::<f32>::zeros((m, n));
    run(
        vec![Job {
            a: a.view(),
            b: b.view(),
            c: bare.view_mut(),
            row_base: 0,
            res: None,
        }],
        false,
        &Epilogue::NONE,
    );
    let mut relus = vec![None, Some(params(M::RELU_FWD))];
    for (lc, uc, sl) in [(0.0, 6.0, 0.0), (-0.2, 0.5, 0.1), (0.5, -0.5, 0.3)] {
        relus.push(Some(PointwiseParams {
            lower_clip: lc,
            upper_clip: uc,
            lower_slope: sl,
            ..params(M::RELU_FWD)
        }));
    }
    for act in relus {
        for (with_bias, with_res) in [(true, true), (true, false), (false, true), (false, false)] {
            let epi = Epilogue {
                bias: if with_bias {
                    Bias::PerRow(&bias)
                } else {
                    Bias::None
                },
                act,
            };
            let mut got = Array2::<f32>::zeros((m, n));
            run(
                vec![Job {
                    a: a.view(),
                    b: b.view(),
                    c: got.view_mut(),
                    row_base: 0,
                    res: with_res.then(|| res.view()),
                }],
                false,
                &epi,
            );
            let want: Vec<f32> = bare
                .indexed_iter()
                .map(|((i, j), &c)| {
                    let mut v = c;
                    if with_bias {
                        v += bias[i];
                    }
                    if with_res {
                        v += res[(i, j)];
                    }
                    act.map_or(v, |p| unary(&p, v))
                })
                .collect();
            let got: Vec<f32> = got.iter().copied().collect();
            assert_eq!(
                bits(&got),
                bits(&want),
                "{act:?} bias {with_bias} res {with_res}"
            );
        }
    }
}
