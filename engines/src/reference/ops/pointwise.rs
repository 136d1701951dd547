//! Pointwise kernels: every `PointwiseMode` with a mathematical meaning, numpy broadcasting
//! of inputs to the output dims, computed in f32 (upstream `hipdnn_sdk` CPU reference rules for
//! relu clips and slope).
//!
//! EXP is [`super::exp::exp`] (the vectorizable exponential the fused softmax uses too, so a
//! softmax graph gives the same bits fused or node by node); the other modes' transcendentals
//! are the standard library's.
//!
//! Owns only element math; it never reads bytes or graph attributes.

use super::PAR_MIN_ELEMS;
use super::exp::exp;
use hipdnn_schema::graph::PointwiseMode as M;
use ndarray::{ArrayD, IxDyn, Zip};
use rayon::prelude::*;

/// Elements per rayon task of the slice path of [`pointwise`] (64 KiB).
const UNARY_BLOCK: usize = 16 * 1024;

/// Attributes of one pointwise node.
#[derive(Debug, Clone, Copy)]
pub struct PointwiseParams {
    /// The mode.
    pub mode: M,
    /// RELU lower clip (default 0).
    pub lower_clip: f32,
    /// RELU upper clip (default `f32::MAX`).
    pub upper_clip: f32,
    /// RELU slope below the lower clip (default 0).
    pub lower_slope: f32,
    /// SWISH beta (default 1).
    pub swish_beta: f32,
    /// ELU alpha (default 1).
    pub elu_alpha: f32,
    /// SOFTPLUS beta (default 1).
    pub softplus_beta: f32,
    /// GEN_INDEX axis (default 0).
    pub axis: usize,
}

/// The error function in f32, branch-free so that a loop over a slice vectorizes. For
/// `|x| < 0.5` its Maclaurin series `2/√π · (x − x³/3 + x⁵/10 − …)` to the x¹⁵ term (relative
/// error ~1 ulp, exact at ±0); beyond, the Numerical Recipes `erfc` Chebyshev fit
/// `erfc(z) ≈ t·exp(−z² + P(t))`, `t = 1/(1 + z/2)`, `z = |x|` (fit error below 1.2e-7
/// relative), evaluated in f32 with the engine's own [`exp`], then `erf(x) = ±(1 −
/// erfc(|x|))`. Absolute error below 3e-7 everywhere (pinned by a test against a float64
/// series); `erf(±0) = ±0`, `erf(±inf) = ±1`, NaN stays NaN. Only `+ − × ÷` and bit
/// operations (both branches are computed and one is selected), no fused multiply-add, so
/// every build and vector width gives the same bits.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_95
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_2 + t * 0.170_872_77))))))));
    let far = (1.0 - t * exp(-z * z + p)).copysign(x);
    let x2 = x * x;
    let near = x
        * (std::f32::consts::FRAC_2_SQRT_PI
            * (1.0
                + x2 * (-1.0 / 3.0
                    + x2 * (1.0 / 10.0
                        + x2 * (-1.0 / 42.0
                            + x2 * (1.0 / 216.0
                                + x2 * (-1.0 / 1320.0
                                    + x2 * (1.0 / 9360.0 + x2 * (-1.0 / 75600.0)))))))));
    if z < 0.5 { near } else { far }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f32, beta: f32) -> f32 {
    let bx = beta * x;
    // log1p(exp(bx)) / beta, stable for large bx.
    if bx > 20.0 {
        x
    } else {
        bx.exp().ln_1p() / beta
    }
}

const SQRT_2_OVER_PI: f32 = 0.797_884_6;
const GELU_C: f32 = 0.044_715;

#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + GELU_C * x * x * x)).tanh())
}

fn b(v: bool) -> f32 {
    if v { 1.0 } else { 0.0 }
}

/// RELU with clips and slope, as [`unary`] computes it but branch-free (both sides computed,
/// one selected), so that a loop over a slice vectorizes: the same bits for every input and
/// parameter (NaN stays NaN).
#[inline(always)]
fn relu_fn(x: f32, lower_clip: f32, upper_clip: f32, lower_slope: f32) -> f32 {
    let below = lower_slope * (x - lower_clip) + lower_clip;
    let rest = if x >= upper_clip { upper_clip } else { x };
    if x <= lower_clip { below } else { rest }
}

impl PointwiseParams {
    /// `mode` with every attribute at its schema default: RELU clips 0 and `f32::MAX`, slope
    /// 0, SWISH/ELU/SOFTPLUS parameters 1, GEN_INDEX axis 0.
    pub fn defaults(mode: M) -> PointwiseParams {
        PointwiseParams {
            mode,
            lower_clip: 0.0,
            upper_clip: f32::MAX,
            lower_slope: 0.0,
            swish_beta: 1.0,
            elu_alpha: 1.0,
            softplus_beta: 1.0,
            axis: 0,
        }
    }
}

/// `vals[i] = unary(p, vals[i])` for every element, the same bits as [`unary`]; GELU (erf),
/// EXP, RELU (any clips and slope), IDENTITY, ABS and NEG run as loops compiled for the CPU's
/// vector unit (`pulp`'s run-time dispatch), the other modes element by element.
pub fn unary_slice(p: &PointwiseParams, vals: &mut [f32]) {
    match p.mode {
        M::IDENTITY => {}
        M::GELU_FWD | M::EXP | M::ERF | M::RELU_FWD | M::ABS | M::NEG => {
            pulp::Arch::new().dispatch(UnarySlice { p, vals })
        }
        _ => vals.iter_mut().for_each(|v| *v = unary(p, *v)),
    }
}

/// `vals[i] = act((vals[i] + bias) + res[i])` (each part optional; `act` absent or RELU), in
/// one loop compiled for the CPU's vector unit: the same f32 operations, in the same order, as
/// adding the bias, then the residual, then [`unary_slice`] (so the same bits). `res` is as
/// long as `vals`.
pub(crate) fn bias_res_relu(
    bias: Option<f32>,
    res: Option<&[f32]>,
    relu: Option<&PointwiseParams>,
    vals: &mut [f32],
) {
    pulp::Arch::new().dispatch(BiasResRelu {
        bias,
        res,
        relu: relu.map(|p| (p.lower_clip, p.upper_clip, p.lower_slope)),
        vals,
    })
}

/// One [`bias_res_relu`] call.
struct BiasResRelu<'a> {
    bias: Option<f32>,
    res: Option<&'a [f32]>,
    relu: Option<(f32, f32, f32)>,
    vals: &'a mut [f32],
}

/// The loops of [`bias_res_relu`] for one activation `f`.
#[inline(always)]
fn bias_res_with(bias: Option<f32>, res: Option<&[f32]>, vals: &mut [f32], f: impl Fn(f32) -> f32) {
    match (bias, res) {
        (Some(b), Some(r)) => vals
            .iter_mut()
            .zip(r)
            .for_each(|(v, r)| *v = f((*v + b) + r)),
        (Some(b), None) => vals.iter_mut().for_each(|v| *v = f(*v + b)),
        (None, Some(r)) => vals.iter_mut().zip(r).for_each(|(v, r)| *v = f(*v + r)),
        (None, None) => vals.iter_mut().for_each(|v| *v = f(*v)),
    }
}

impl pulp::WithSimd for BiasResRelu<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let BiasResRelu {
            bias,
            res,
            relu,
            vals,
        } = self;
        match relu {
            Some((lc, uc, sl)) => bias_res_with(bias, res, vals, |x| relu_fn(x, lc, uc, sl)),
            None => bias_res_with(bias, res, vals, |x| x),
        }
    }
}

/// One [`unary_slice`] call of a vectorizable mode.
struct UnarySlice<'a> {
    p: &'a PointwiseParams,
    vals: &'a mut [f32],
}

impl pulp::WithSimd for UnarySlice<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let UnarySlice { p, vals } = self;
        match p.mode {
            M::GELU_FWD => vals.iter_mut().for_each(|v| *v = gelu(*v)),
            M::ERF => vals.iter_mut().for_each(|v| *v = erf(*v)),
            M::RELU_FWD => {
                let (lc, uc, sl) = (p.lower_clip, p.upper_clip, p.lower_slope);
                vals.iter_mut().for_each(|v| *v = relu_fn(*v, lc, uc, sl));
            }
            M::ABS => vals.iter_mut().for_each(|v| *v = v.abs()),
            M::NEG => vals.iter_mut().for_each(|v| *v = -*v),
            _ => vals.iter_mut().for_each(|v| *v = exp(*v)),
        }
    }
}

/// One unary element.
pub fn unary(p: &PointwiseParams, x: f32) -> f32 {
    match p.mode {
        M::ABS => x.abs(),
        M::CEIL => x.ceil(),
        M::ERF => erf(x),
        M::EXP => exp(x),
        M::FLOOR => x.floor(),
        M::IDENTITY => x,
        M::LOG => x.ln(),
        M::LOGICAL_NOT => b(x == 0.0),
        M::NEG => -x,
        M::RECIPROCAL => 1.0 / x,
        M::RELU_FWD => {
            if x <= p.lower_clip {
                p.lower_slope * (x - p.lower_clip) + p.lower_clip
            } else if x >= p.upper_clip {
                p.upper_clip
            } else {
                x
            }
        }
        M::RSQRT => 1.0 / x.sqrt(),
        M::SIGMOID_FWD => sigmoid(x),
        M::SIN => x.sin(),
        M::SOFTPLUS_FWD => softplus(x, p.softplus_beta),
        M::SQRT => x.sqrt(),
        M::TAN => x.tan(),
        M::TANH_FWD => x.tanh(),
        M::ELU_FWD => {
            if x > 0.0 {
                x
            } else {
                p.elu_alpha * (x.exp() - 1.0)
            }
        }
        M::GELU_FWD => gelu(x),
        M::GELU_APPROX_TANH_FWD => gelu_tanh(x),
        M::SWISH_FWD => x * sigmoid(p.swish_beta * x),
        _ => f32::NAN,
    }
}

/// One binary element; for `*_BWD` modes `a` is dy and `x` the forward input (cuDNN order).
pub fn binary(p: &PointwiseParams, a: f32, x: f32) -> f32 {
    match p.mode {
        M::ADD => a + x,
        M::ADD_SQUARE => a + x * x,
        M::CMP_EQ => b(a == x),
        M::CMP_GE => b(a >= x),
        M::CMP_GT => b(a > x),
        M::CMP_LE => b(a <= x),
        M::CMP_LT => b(a < x),
        M::CMP_NEQ => b(a != x),
        M::DIV => a / x,
        M::MAX_OP => a.max(x),
        M::MIN_OP => a.min(x),
        M::MUL => a * x,
        M::SUB => a - x,
        M::LOGICAL_AND => b(a != 0.0 && x != 0.0),
        M::LOGICAL_OR => b(a != 0.0 || x != 0.0),
        M::RELU_BWD => {
            let d = if x <= p.lower_clip {
                p.lower_slope
            } else if x >= p.upper_clip {
                0.0
            } else {
                1.0
            };
            a * d
        }
        M::SIGMOID_BWD => {
            let s = sigmoid(x);
            a * s * (1.0 - s)
        }
        M::TANH_BWD => {
            let t = x.tanh();
            a * (1.0 - t * t)
        }
        M::ELU_BWD => a * if x > 0.0 { 1.0 } else { p.elu_alpha * x.exp() },
        M::GELU_BWD => {
            let cdf = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            let pdf = (-0.5 * x * x).exp() * 0.398_942_3;
            a * (cdf + x * pdf)
        }
        M::GELU_APPROX_TANH_BWD => {
            let u = SQRT_2_OVER_PI * (x + GELU_C * x * x * x);
            let t = u.tanh();
            let du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_C * x * x);
            a * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)
        }
        M::SOFTPLUS_BWD => a * sigmoid(p.softplus_beta * x),
        M::SWISH_BWD => {
            let s = sigmoid(p.swish_beta * x);
            a * (s + p.swish_beta * x * s * (1.0 - s))
        }
        _ => f32::NAN,
    }
}

/// Runs a pointwise node: `inputs` (1–3 dense arrays, each broadcastable to `out_dims` by numpy
/// rules) → a dense array of `out_dims`. `BINARY_SELECT` gives `in2 != 0 ? in0 : in1`;
/// `GEN_INDEX` gives each element's index along `axis` of `out_dims`.
///
/// # Errors
/// A message when an input does not broadcast to `out_dims`.
pub fn pointwise(
    p: &PointwiseParams,
    inputs: &[&ArrayD<f32>],
    out_dims: &[usize],
) -> Result<ArrayD<f32>, String> {
    let shape = IxDyn(out_dims);
    let len: usize = out_dims.iter().product();
    // Every element is written below (each mode's loop covers the whole output).
    let buf = super::recycle::take(len);
    let mut out = ArrayD::from_shape_vec(shape.clone(), buf).expect("volume of out_dims");
    let mut views = Vec::with_capacity(inputs.len());
    for (i, a) in inputs.iter().enumerate() {
        views.push(a.broadcast(shape.clone()).ok_or_else(|| {
            format!(
                "input {i} dims {:?} do not broadcast to output dims {out_dims:?}",
                a.shape()
            )
        })?);
    }
    if p.mode == M::GEN_INDEX {
        let axis = p.axis;
        for (idx, o) in out.indexed_iter_mut() {
            *o = idx[axis] as f32;
        }
        return Ok(out);
    }
    // The commonest modes get a loop of their own (the same f32 operation as `unary` /
    // `binary`, so the same bits) instead of a per-element `match` on the mode.
    // One dense input of the output's dims and a slice-vectorized mode: copy it, then run
    // `unary_slice` on blocks in parallel (the same bits as `unary`, element by element).
    if let [a] = inputs
        && a.shape() == out_dims
        && let Some(src) = a.as_slice()
        && let Some(dst) = out.as_slice_mut()
    {
        dst.par_chunks_mut(UNARY_BLOCK)
            .zip(src.par_chunks(UNARY_BLOCK))
            .for_each(|(d, s)| {
                d.copy_from_slice(s);
                unary_slice(p, d);
            });
        return Ok(out);
    }
    // At least `PAR_MIN_ELEMS` elements a task (one task below that: no hand-off to the pool).
    match views.len() {
        1 => {
            let z = Zip::from(&mut out)
                .and(&views[0])
                .into_par_iter()
                .with_min_len(PAR_MIN_ELEMS);
            match p.mode {
                M::EXP => z.for_each(|(o, &x)| *o = exp(x)),
                M::IDENTITY => z.for_each(|(o, &x)| *o = x),
                _ => z.for_each(|(o, &x)| *o = unary(p, x)),
            }
        }
        2 => {
            let z = Zip::from(&mut out)
                .and(&views[0])
                .and(&views[1])
                .into_par_iter()
                .with_min_len(PAR_MIN_ELEMS);
            match p.mode {
                M::ADD => z.for_each(|(o, &a, &x)| *o = a + x),
                M::SUB => z.for_each(|(o, &a, &x)| *o = a - x),
                M::MUL => z.for_each(|(o, &a, &x)| *o = a * x),
                M::DIV => z.for_each(|(o, &a, &x)| *o = a / x),
                _ => z.for_each(|(o, &a, &x)| *o = binary(p, a, x)),
            }
        }
        _ => Zip::from(&mut out)
            .and(&views[0])
            .and(&views[1])
            .and(&views[2])
            .into_par_iter()
            .with_min_len(PAR_MIN_ELEMS)
            .for_each(|(o, &a, &x, &c)| *o = if c != 0.0 { a } else { x }),
    }
    Ok(out)
}
