//! CPU reference engine on seeded random shapes against plain nested loops written here.
//!
//! Every op kind the engine supports — pointwise (unary, binary with broadcasting, ternary
//! select, gen-index), conv fprop/dgrad/wgrad (1-D to 3-D), matmul, batchnorm inference and
//! training, layernorm, rmsnorm, reduction, pooling and SDPA — runs on shapes, attributes,
//! layouts and data types drawn from a fixed-seed generator (one seed per case, printed in
//! every failure message, so a failing case can be replayed alone).
//!
//! Layouts: every tensor gets strides from a random memory order — packed (NCHW-style),
//! channels-last (NHWC / NDHWC), or a random permutation of its axes, sometimes with a gap
//! after an axis (padded strides). Values are rounded to the tensor's storage type with the
//! `half` crate before the loops see them; the loops sum in `f64`.
//!
//! The loops below share no code with the engine: they index dense row-major values directly
//! and use only `std` math. Only the graph builder, runner and tolerance table come from
//! `hipdnn_engines::reference::testing`.
//!
//! Tolerances (`testing::tolerance`, `|got − want| ≤ tol · (1 + |want|)`): f32 1e-5
//! elementwise, 1e-4 for sums; f16 1e-2; bf16 2e-2; boolean / integer outputs exact. A case
//! with several types takes the loosest of them.

use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, assert_close, run_graph, tolerance,
};
use hipdnn_schema::graph::{
    BatchnormAttributes, BatchnormAttributesArgs, BatchnormInferenceAttributes,
    BatchnormInferenceAttributesArgs, BatchnormInferenceAttributesVarianceExt,
    BatchnormInferenceAttributesVarianceExtArgs, ConvMode, ConvolutionBwdAttributes,
    ConvolutionBwdAttributesArgs, ConvolutionFwdAttributes, ConvolutionFwdAttributesArgs,
    ConvolutionWrwAttributes, ConvolutionWrwAttributesArgs, DataType as DT, LayernormAttributes,
    LayernormAttributesArgs, NodeAttributes, PaddingMode, PointwiseAttributesArgs,
    PointwiseMode as M, RMSNormAttributes, RMSNormAttributesArgs, ReductionAttributes,
    ReductionAttributesArgs, ReductionMode as R, ResampleFwdAttributes, ResampleFwdAttributesArgs,
    ResampleMode, SdpaAttributes, SdpaAttributesArgs,
};
use hipdnn_schema::tensor_value::TensorValue;

// ---------------------------------------------------------------------------------------------
// Seeded generator, layouts, types
// ---------------------------------------------------------------------------------------------

/// splitmix64; one generator per case, seeded from (test, case index).
struct Rng(u64);

impl Rng {
    fn new(test: u64, case: u64) -> Rng {
        Rng(test.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ case.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform integer in `lo..=hi`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    fn coin(&mut self, p: f64) -> bool {
        self.f64() < p
    }
    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f64() as f32
    }
    fn values(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
    /// Values from a small set, so that ties and equalities happen.
    fn discrete(&mut self, n: usize, set: &[f32]) -> Vec<f32> {
        (0..n)
            .map(|_| set[self.int(0, set.len() as i64 - 1) as usize])
            .collect()
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.int(0, items.len() as i64 - 1) as usize]
    }
    fn float_type(&mut self) -> DT {
        // f32 half the time, f16 and bf16 a quarter each.
        self.pick(&[DT::FLOAT, DT::FLOAT, DT::HALF, DT::BFLOAT16])
    }
}

fn vol(d: &[i64]) -> usize {
    d.iter().product::<i64>() as usize
}

/// Strides for `dims` laid out in memory in `order` (outermost axis first), with an extra
/// element of padding after each axis whose `gap` flag is set.
fn strides_in_order(dims: &[i64], order: &[usize], gaps: &[bool]) -> Vec<i64> {
    let mut s = vec![0i64; dims.len()];
    let mut acc = 1i64;
    for &ax in order.iter().rev() {
        s[ax] = acc;
        acc *= dims[ax] + i64::from(gaps[ax]);
    }
    s
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// Row-major (NCHW-style).
    Packed,
    /// N, spatial…, C (rank ≥ 3), else packed.
    ChannelsLast,
    /// A random permutation of the axes, sometimes with gaps.
    Random,
}

fn layout_strides(rng: &mut Rng, dims: &[i64], l: Layout) -> Vec<i64> {
    let r = dims.len();
    let no_gaps = vec![false; r];
    match l {
        Layout::Packed => strides_in_order(dims, &(0..r).collect::<Vec<_>>(), &no_gaps),
        Layout::ChannelsLast if r >= 3 => {
            let mut order = vec![0];
            order.extend(2..r);
            order.push(1);
            strides_in_order(dims, &order, &no_gaps)
        }
        Layout::ChannelsLast => strides_in_order(dims, &(0..r).collect::<Vec<_>>(), &no_gaps),
        Layout::Random => {
            let mut order: Vec<usize> = (0..r).collect();
            for i in (1..r).rev() {
                order.swap(i, rng.int(0, i as i64) as usize);
            }
            let gaps: Vec<bool> = (0..r).map(|_| rng.coin(0.25)).collect();
            strides_in_order(dims, &order, &gaps)
        }
    }
}

fn any_layout(rng: &mut Rng) -> Layout {
    rng.pick(&[Layout::Packed, Layout::ChannelsLast, Layout::Random])
}

/// A tensor with the given layout.
fn spec(rng: &mut Rng, uid: i64, dt: DT, dims: &[i64], l: Layout) -> TensorSpec {
    let s = layout_strides(rng, dims, l);
    TensorSpec::new(uid, &format!("t{uid}"), dt, dims).strides(&s)
}

/// A tensor with a random layout.
fn spec_any(rng: &mut Rng, uid: i64, dt: DT, dims: &[i64]) -> TensorSpec {
    let l = any_layout(rng);
    spec(rng, uid, dt, dims, l)
}

/// `v` rounded to `dt` (independently of the engine's codecs).
fn round_to(dt: DT, v: f32) -> f32 {
    match dt {
        DT::HALF => half::f16::from_f32(v).to_f32(),
        DT::BFLOAT16 => half::bf16::from_f32(v).to_f32(),
        DT::BOOLEAN => f32::from(u8::from(v != 0.0)),
        _ => v,
    }
}

fn rounded(dt: DT, v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| round_to(dt, x)).collect()
}

/// Loosest tolerance of the given types.
fn tol(types: &[DT], sums: bool) -> f32 {
    types
        .iter()
        .map(|&t| tolerance(t, sums))
        .fold(0.0, f32::max)
}

/// Row-major multi-index of `flat` in `dims`.
fn unflat(dims: &[i64], mut flat: usize) -> Vec<i64> {
    let mut idx = vec![0i64; dims.len()];
    for d in (0..dims.len()).rev() {
        idx[d] = flat as i64 % dims[d];
        flat /= dims[d] as usize;
    }
    idx
}

/// Row-major flat index of `idx` in `dims`.
fn flat(dims: &[i64], idx: &[i64]) -> usize {
    idx.iter().zip(dims).fold(0i64, |acc, (&i, &d)| acc * d + i) as usize
}

/// Flat index in a right-aligned broadcast operand `dims` of output multi-index `out_idx`.
fn bcast_flat(dims: &[i64], out_idx: &[i64]) -> usize {
    let off = out_idx.len() - dims.len();
    let idx: Vec<i64> = dims
        .iter()
        .enumerate()
        .map(|(j, &d)| if d == 1 { 0 } else { out_idx[off + j] })
        .collect();
    flat(dims, &idx)
}

/// Dims of an operand that broadcasts to `out`: a random number of leading dims dropped and
/// some of the rest set to 1.
fn bcast_dims(rng: &mut Rng, out: &[i64]) -> Vec<i64> {
    let drop = rng.int(0, out.len() as i64 - 1) as usize;
    out[drop..]
        .iter()
        .map(|&d| if rng.coin(0.3) { 1 } else { d })
        .collect()
}

fn random_dims(rng: &mut Rng, rank_lo: i64, rank_hi: i64, dim_hi: i64) -> Vec<i64> {
    (0..rng.int(rank_lo, rank_hi))
        .map(|_| rng.int(1, dim_hi))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Pointwise
// ---------------------------------------------------------------------------------------------

const RELU_LO: f64 = -0.2;
const RELU_HI: f64 = 0.45;
const RELU_SLOPE: f64 = 0.1;
const ELU_ALPHA: f64 = 0.7;
const SOFTPLUS_BETA: f64 = 1.5;
const SWISH_BETA: f64 = 1.3;

fn pw_args(m: M, ins: &[i64], out: i64) -> PointwiseAttributesArgs {
    PointwiseAttributesArgs {
        operation: m,
        in_0_tensor_uid: ins[0],
        in_1_tensor_uid: ins.get(1).copied(),
        in_2_tensor_uid: ins.get(2).copied(),
        out_0_tensor_uid: out,
        relu_lower_clip: Some(RELU_LO as f32),
        relu_upper_clip: Some(RELU_HI as f32),
        relu_lower_clip_slope: Some(RELU_SLOPE as f32),
        elu_alpha: Some(ELU_ALPHA as f32),
        softplus_beta: Some(SOFTPLUS_BETA as f32),
        swish_beta: Some(SWISH_BETA as f32),
        ..Default::default()
    }
}

/// erf by its Maclaurin series (f64; accurate to ~1e-13 for |x| ≤ 3).
fn erf(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..120 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

fn unary(m: M, x: f64) -> f64 {
    match m {
        M::ABS => x.abs(),
        M::CEIL => x.ceil(),
        M::ERF => erf(x),
        M::EXP => x.exp(),
        M::FLOOR => x.floor(),
        M::IDENTITY => x,
        M::LOG => x.ln(),
        M::LOGICAL_NOT => f64::from(u8::from(x == 0.0)),
        M::NEG => -x,
        M::RECIPROCAL => 1.0 / x,
        M::RSQRT => 1.0 / x.sqrt(),
        M::SIGMOID_FWD => sigmoid(x),
        M::SIN => x.sin(),
        M::SQRT => x.sqrt(),
        M::TAN => x.tan(),
        M::TANH_FWD => x.tanh(),
        M::ELU_FWD => {
            if x > 0.0 {
                x
            } else {
                ELU_ALPHA * (x.exp() - 1.0)
            }
        }
        M::GELU_FWD => 0.5 * x * (1.0 + erf(x / 2f64.sqrt())),
        M::GELU_APPROX_TANH_FWD => {
            0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
        }
        M::SOFTPLUS_FWD => (1.0 + (SOFTPLUS_BETA * x).exp()).ln() / SOFTPLUS_BETA,
        M::SWISH_FWD => x * sigmoid(SWISH_BETA * x),
        M::RELU_FWD => {
            if x <= RELU_LO {
                RELU_SLOPE * (x - RELU_LO) + RELU_LO
            } else {
                x.min(RELU_HI)
            }
        }
        _ => unreachable!("{m:?}"),
    }
}

/// Binary modes; `*_BWD` take `a` = dy and `x` = the forward input (analytic derivatives).
fn binary(m: M, a: f64, x: f64) -> f64 {
    let b = |v: bool| f64::from(u8::from(v));
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
        M::RELU_BWD => {
            a * if x <= RELU_LO {
                RELU_SLOPE
            } else if x < RELU_HI {
                1.0
            } else {
                0.0
            }
        }
        M::SIGMOID_BWD => a * sigmoid(x) * (1.0 - sigmoid(x)),
        M::TANH_BWD => a * (1.0 - x.tanh().powi(2)),
        M::ELU_BWD => a * if x > 0.0 { 1.0 } else { ELU_ALPHA * x.exp() },
        M::GELU_BWD => {
            let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
            a * (0.5 * (1.0 + erf(x / 2f64.sqrt())) + x * pdf)
        }
        M::GELU_APPROX_TANH_BWD => {
            let u = SQRT_2_OVER_PI * (x + 0.044715 * x.powi(3));
            let du = SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x);
            a * (0.5 * (1.0 + u.tanh()) + 0.5 * x * (1.0 - u.tanh().powi(2)) * du)
        }
        M::SOFTPLUS_BWD => a * sigmoid(SOFTPLUS_BETA * x),
        M::SWISH_BWD => {
            let s = sigmoid(SWISH_BETA * x);
            a * (s + SWISH_BETA * x * s * (1.0 - s))
        }
        _ => unreachable!("{m:?}"),
    }
}

const UNARY: [M; 22] = [
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

const BINARY: [M; 23] = [
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
    M::RELU_BWD,
    M::SIGMOID_BWD,
    M::TANH_BWD,
    M::ELU_BWD,
    M::GELU_BWD,
    M::GELU_APPROX_TANH_BWD,
    M::SOFTPLUS_BWD,
    M::SWISH_BWD,
];

/// Two random cases per unary mode: random rank 1–4 shape, layouts and in/out types.
#[test]
fn random_pointwise_unary_matches_loops() {
    let mut case = 0u64;
    for m in UNARY {
        for _ in 0..2 {
            case += 1;
            let mut rng = Rng::new(1, case);
            let dims = random_dims(&mut rng, 1, 4, 5);
            let (dti, dto) = (rng.float_type(), rng.float_type());
            let (xs, ys) = (
                spec_any(&mut rng, 1, dti, &dims),
                spec_any(&mut rng, 2, dto, &dims),
            );
            let (lo, hi) = match m {
                M::LOG | M::SQRT | M::RSQRT | M::RECIPROCAL => (0.1, 3.0),
                M::TAN => (-1.2, 1.2),
                _ => (-2.5, 2.5),
            };
            let mut x = rounded(dti, &rng.values(vol(&dims), lo, hi));
            if m == M::LOGICAL_NOT {
                for v in x.iter_mut().step_by(3) {
                    *v = 0.0;
                }
            }
            let what = format!(
                "case {case} {m:?} {dims:?} {dti:?}->{dto:?} x{:?} y{:?}",
                xs.strides, ys.strides
            );
            let mut g = GraphBuilder::new("pw");
            g.tensor(xs).tensor(ys);
            g.pointwise("pw", pw_args(m, &[1], 2));
            let got = run_graph(g, &[(1, x.clone())], &[2])
                .expect("run")
                .remove(0);
            let want: Vec<f32> = x.iter().map(|&v| unary(m, f64::from(v)) as f32).collect();
            assert_close(&what, &got, &want, tol(&[dti, dto], false));
        }
    }
}

/// Two random cases per binary mode: both inputs broadcast (leading dims dropped, dims set
/// to 1), random layouts, types (boolean outputs for the comparisons).
#[test]
fn random_pointwise_binary_broadcast_matches_loops() {
    let mut case = 0u64;
    for m in BINARY {
        for _ in 0..2 {
            case += 1;
            let mut rng = Rng::new(2, case);
            let od = random_dims(&mut rng, 1, 4, 4);
            let (ad, bd) = (bcast_dims(&mut rng, &od), bcast_dims(&mut rng, &od));
            let dti = rng.float_type();
            let logical = (7..=14).contains(&(BINARY.iter().position(|&b| b == m).unwrap()));
            let dto = if logical && rng.coin(0.5) {
                DT::BOOLEAN
            } else {
                rng.float_type()
            };
            let (sa, sb, so) = (
                spec_any(&mut rng, 1, dti, &ad),
                spec_any(&mut rng, 2, dti, &bd),
                spec_any(&mut rng, 3, dto, &od),
            );
            let set = [-1.0, -0.5, 0.0, 0.5, 1.0];
            let (a, b) = match m {
                M::DIV => {
                    let a = rng.values(vol(&ad), -2.0, 2.0);
                    let b = rng
                        .values(vol(&bd), 0.5, 2.0)
                        .into_iter()
                        .map(|v| if rng.coin(0.5) { -v } else { v })
                        .collect();
                    (a, b)
                }
                M::MAX_OP | M::MIN_OP => {
                    (rng.discrete(vol(&ad), &set), rng.discrete(vol(&bd), &set))
                }
                _ if logical => (rng.discrete(vol(&ad), &set), rng.discrete(vol(&bd), &set)),
                _ => (
                    rng.values(vol(&ad), -2.0, 2.0),
                    rng.values(vol(&bd), -2.0, 2.0),
                ),
            };
            let (a, b) = (rounded(dti, &a), rounded(dti, &b));
            let what = format!("case {case} {m:?} {ad:?}⊕{bd:?}->{od:?} {dti:?}->{dto:?}");
            let mut g = GraphBuilder::new("pw");
            g.tensor(sa).tensor(sb).tensor(so);
            g.pointwise("pw", pw_args(m, &[1, 2], 3));
            let got = run_graph(g, &[(1, a.clone()), (2, b.clone())], &[3])
                .expect("run")
                .remove(0);
            let want: Vec<f32> = (0..vol(&od))
                .map(|i| {
                    let idx = unflat(&od, i);
                    let (va, vb) = (a[bcast_flat(&ad, &idx)], b[bcast_flat(&bd, &idx)]);
                    round_to(dto, binary(m, f64::from(va), f64::from(vb)) as f32)
                })
                .collect();
            assert_close(&what, &got, &want, tol(&[dti, dto], false));
        }
    }
}

/// BINARY_SELECT (`in2 ≠ 0 ? in0 : in1`, all three broadcast) and GEN_INDEX (random axis).
#[test]
fn random_pointwise_select_and_gen_index_match_loops() {
    for case in 0..20u64 {
        let mut rng = Rng::new(3, case);
        let od = random_dims(&mut rng, 1, 4, 4);
        let dt = rng.float_type();
        let (ad, bd, cd) = (
            bcast_dims(&mut rng, &od),
            bcast_dims(&mut rng, &od),
            bcast_dims(&mut rng, &od),
        );
        let cdt = rng.pick(&[DT::BOOLEAN, DT::FLOAT]);
        let (a, b) = (
            rounded(dt, &rng.values(vol(&ad), -2.0, 2.0)),
            rounded(dt, &rng.values(vol(&bd), -2.0, 2.0)),
        );
        let c = rng.discrete(vol(&cd), &[0.0, 1.0]);
        let axis = rng.int(0, od.len() as i64 - 1);
        let idt = rng.pick(&[DT::INT32, DT::FLOAT, DT::INT64]);
        let mut g = GraphBuilder::new("sel");
        g.tensor(spec_any(&mut rng, 1, dt, &ad))
            .tensor(spec_any(&mut rng, 2, dt, &bd))
            .tensor(spec_any(&mut rng, 3, cdt, &cd))
            .tensor(spec_any(&mut rng, 4, dt, &od))
            .tensor(spec_any(&mut rng, 5, dt, &od))
            .tensor(spec_any(&mut rng, 6, idt, &od));
        g.pointwise("sel", pw_args(M::BINARY_SELECT, &[1, 2, 3], 4));
        g.pointwise(
            "gen",
            PointwiseAttributesArgs {
                operation: M::GEN_INDEX,
                in_0_tensor_uid: 5,
                out_0_tensor_uid: 6,
                axis_tensor_uid: Some(axis),
                ..Default::default()
            },
        );
        let x5 = rng.values(vol(&od), -1.0, 1.0);
        let out = run_graph(
            g,
            &[(1, a.clone()), (2, b.clone()), (3, c.clone()), (5, x5)],
            &[4, 6],
        )
        .expect("run");
        let (mut sel, mut idx) = (Vec::new(), Vec::new());
        for i in 0..vol(&od) {
            let oi = unflat(&od, i);
            sel.push(if c[bcast_flat(&cd, &oi)] != 0.0 {
                a[bcast_flat(&ad, &oi)]
            } else {
                b[bcast_flat(&bd, &oi)]
            });
            idx.push(oi[axis as usize] as f32);
        }
        assert_eq!(
            out[0], sel,
            "case {case} select {ad:?} {bd:?} {cd:?} -> {od:?}"
        );
        assert_eq!(out[1], idx, "case {case} gen_index axis {axis} {od:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Conv {
    Fprop,
    Dgrad,
    Wgrad,
}

#[derive(Debug)]
struct ConvCase {
    x: Vec<i64>,
    w: Vec<i64>,
    y: Vec<i64>,
    pre: Vec<i64>,
    post: Vec<i64>,
    stride: Vec<i64>,
    dil: Vec<i64>,
    flip: bool,
}

fn random_conv(rng: &mut Rng) -> ConvCase {
    let sp = rng.pick(&[1usize, 2, 2, 2, 3, 3]);
    let (groups, cg, kg, n) = (rng.int(1, 3), rng.int(1, 3), rng.int(1, 3), rng.int(1, 2));
    let (mut x, mut w, mut y) = (
        vec![n, groups * cg],
        vec![groups * kg, cg],
        vec![n, groups * kg],
    );
    let (mut pre, mut post, mut stride, mut dil) = (vec![], vec![], vec![], vec![]);
    let big = if sp == 3 { 4 } else { 7 };
    for _ in 0..sp {
        let (f, d, s) = (rng.int(1, 3), rng.int(1, 2), rng.int(1, 3));
        let (p0, p1) = (rng.int(0, 2), rng.int(0, 2));
        let span = d * (f - 1) + 1;
        let i = rng.int((span - p0 - p1).max(1), (span - p0 - p1).max(1) + big);
        x.push(i);
        w.push(f);
        y.push((i + p0 + p1 - span) / s + 1);
        pre.push(p0);
        post.push(p1);
        stride.push(s);
        dil.push(d);
    }
    ConvCase {
        x,
        w,
        y,
        pre,
        post,
        stride,
        dil,
        flip: rng.coin(0.3),
    }
}

/// All multi-indices of `dims`, row-major.
fn indices(dims: &[i64]) -> Vec<Vec<i64>> {
    (0..vol(dims)).map(|i| unflat(dims, i)).collect()
}

/// Gather-form nested loops on dense row-major data: y for fprop (`a` = x, `b` = w), dx for
/// dgrad (`a` = dy, `b` = w), dw for wgrad (`a` = x, `b` = dy).
fn conv_loops(c: &ConvCase, kind: Conv, a: &[f32], b: &[f32]) -> Vec<f32> {
    let sp = c.x.len() - 2;
    let (xs, ws, ys) = (&c.x[2..], &c.w[2..], &c.y[2..]);
    let (n, ch, k, cg) = (c.x[0], c.x[1], c.w[0], c.w[1]);
    let kg = k / (ch / cg);
    // Filter tap as stored (flipped for CONVOLUTION).
    let stored = |t: &[i64]| -> Vec<i64> {
        if c.flip {
            t.iter().zip(ws).map(|(&t, &f)| f - 1 - t).collect()
        } else {
            t.to_vec()
        }
    };
    let xi = |nn: i64, cc: i64, p: &[i64]| {
        let mut d = vec![n, ch];
        d.extend_from_slice(xs);
        let mut i = vec![nn, cc];
        i.extend_from_slice(p);
        flat(&d, &i)
    };
    let yi = |nn: i64, kk: i64, p: &[i64]| {
        let mut d = vec![n, k];
        d.extend_from_slice(ys);
        let mut i = vec![nn, kk];
        i.extend_from_slice(p);
        flat(&d, &i)
    };
    let wi = |kk: i64, cc: i64, t: &[i64]| {
        let mut i = vec![kk, cc];
        i.extend(stored(t));
        flat(&c.w, &i)
    };
    // Input position read by output position o through tap t.
    let src = |o: &[i64], t: &[i64]| -> Option<Vec<i64>> {
        let p: Vec<i64> = (0..sp)
            .map(|d| o[d] * c.stride[d] - c.pre[d] + t[d] * c.dil[d])
            .collect();
        p.iter()
            .zip(xs)
            .all(|(&p, &s)| (0..s).contains(&p))
            .then_some(p)
    };
    let taps = indices(ws);
    match kind {
        Conv::Fprop => {
            let mut out = Vec::new();
            for nn in 0..n {
                for kk in 0..k {
                    let g = kk / kg;
                    for o in indices(ys) {
                        let mut s = 0f64;
                        for cc in 0..cg {
                            for t in &taps {
                                if let Some(p) = src(&o, t) {
                                    s += f64::from(a[xi(nn, g * cg + cc, &p)])
                                        * f64::from(b[wi(kk, cc, t)]);
                                }
                            }
                        }
                        out.push(s as f32);
                    }
                }
            }
            out
        }
        Conv::Dgrad => {
            let mut out = Vec::new();
            for nn in 0..n {
                for c_ in 0..ch {
                    let (g, cc) = (c_ / cg, c_ % cg);
                    for i in indices(xs) {
                        let mut s = 0f64;
                        for kk in g * kg..(g + 1) * kg {
                            for t in &taps {
                                // o·stride = i + pre − t·dil, o inside the output.
                                let o: Option<Vec<i64>> = (0..sp)
                                    .map(|d| {
                                        let q = i[d] + c.pre[d] - t[d] * c.dil[d];
                                        (q >= 0 && q % c.stride[d] == 0 && q / c.stride[d] < ys[d])
                                            .then_some(q / c.stride[d])
                                    })
                                    .collect();
                                if let Some(o) = o {
                                    s += f64::from(a[yi(nn, kk, &o)]) * f64::from(b[wi(kk, cc, t)]);
                                }
                            }
                        }
                        out.push(s as f32);
                    }
                }
            }
            out
        }
        Conv::Wgrad => {
            let mut out = vec![0f32; vol(&c.w)];
            for kk in 0..k {
                let g = kk / kg;
                for cc in 0..cg {
                    for t in &taps {
                        let mut s = 0f64;
                        for nn in 0..n {
                            for o in indices(ys) {
                                if let Some(p) = src(&o, t) {
                                    s += f64::from(a[xi(nn, g * cg + cc, &p)])
                                        * f64::from(b[yi(nn, kk, &o)]);
                                }
                            }
                        }
                        out[wi(kk, cc, t)] = s as f32;
                    }
                }
            }
            out
        }
    }
}

fn run_conv(case: u64, kind: Conv) {
    let mut rng = Rng::new(10 + kind as u64, case);
    let c = random_conv(&mut rng);
    let dt = rng.float_type();
    let layouts = [Layout::Packed, Layout::ChannelsLast];
    let (lx, lw, ly) = (rng.pick(&layouts), rng.pick(&layouts), rng.pick(&layouts));
    let (xs, ws, ys) = (
        spec(&mut rng, 1, dt, &c.x, lx),
        spec(&mut rng, 2, dt, &c.w, lw),
        spec(&mut rng, 3, dt, &c.y, ly),
    );
    let xv = rounded(dt, &rng.values(vol(&c.x), -1.0, 1.0));
    let wv = rounded(dt, &rng.values(vol(&c.w), -1.0, 1.0));
    let yv = rounded(dt, &rng.values(vol(&c.y), -1.0, 1.0));
    let what = format!("case {case} {kind:?} {dt:?} x {lx:?} w {lw:?} y {ly:?} {c:?}");
    let mut g = GraphBuilder::new("conv");
    g.tensor(xs).tensor(ws).tensor(ys);
    let (pre, post, stride, dil) = (
        c.pre.clone(),
        c.post.clone(),
        c.stride.clone(),
        c.dil.clone(),
    );
    let mode = if c.flip {
        ConvMode::CONVOLUTION
    } else {
        ConvMode::CROSS_CORRELATION
    };
    g.node(
        "conv",
        Box::new(move |fbb| {
            let (pre, post) = (
                Some(fbb.create_vector(&pre)),
                Some(fbb.create_vector(&post)),
            );
            let (stride, dil) = (
                Some(fbb.create_vector(&stride)),
                Some(fbb.create_vector(&dil)),
            );
            match kind {
                Conv::Fprop => (
                    NodeAttributes::ConvolutionFwdAttributes,
                    ConvolutionFwdAttributes::create(
                        fbb,
                        &ConvolutionFwdAttributesArgs {
                            x_tensor_uid: 1,
                            w_tensor_uid: 2,
                            y_tensor_uid: 3,
                            pre_padding: pre,
                            post_padding: post,
                            stride,
                            dilation: dil,
                            conv_mode: mode,
                        },
                    )
                    .as_union_value(),
                ),
                Conv::Dgrad => (
                    NodeAttributes::ConvolutionBwdAttributes,
                    ConvolutionBwdAttributes::create(
                        fbb,
                        &ConvolutionBwdAttributesArgs {
                            dx_tensor_uid: 1,
                            w_tensor_uid: 2,
                            dy_tensor_uid: 3,
                            pre_padding: pre,
                            post_padding: post,
                            stride,
                            dilation: dil,
                            conv_mode: mode,
                        },
                    )
                    .as_union_value(),
                ),
                Conv::Wgrad => (
                    NodeAttributes::ConvolutionWrwAttributes,
                    ConvolutionWrwAttributes::create(
                        fbb,
                        &ConvolutionWrwAttributesArgs {
                            x_tensor_uid: 1,
                            dw_tensor_uid: 2,
                            dy_tensor_uid: 3,
                            pre_padding: pre,
                            post_padding: post,
                            stride,
                            dilation: dil,
                            conv_mode: mode,
                        },
                    )
                    .as_union_value(),
                ),
            }
        }),
    );
    let (inputs, out, want) = match kind {
        Conv::Fprop => (
            vec![(1, xv.clone()), (2, wv.clone())],
            3,
            conv_loops(&c, kind, &xv, &wv),
        ),
        Conv::Dgrad => (
            vec![(3, yv.clone()), (2, wv.clone())],
            1,
            conv_loops(&c, kind, &yv, &wv),
        ),
        Conv::Wgrad => (
            vec![(1, xv.clone()), (3, yv.clone())],
            2,
            conv_loops(&c, kind, &xv, &yv),
        ),
    };
    let got = run_graph(g, &inputs, &[out]).expect("run").remove(0);
    assert_close(&what, &got, &rounded(dt, &want), tolerance(dt, true));
}

const CONV_CASES: u64 = 30;

#[test]
fn random_conv_fprop_matches_loops() {
    for case in 0..CONV_CASES {
        run_conv(case, Conv::Fprop);
    }
}

#[test]
fn random_conv_dgrad_matches_loops() {
    for case in 0..CONV_CASES {
        run_conv(case, Conv::Dgrad);
    }
}

#[test]
fn random_conv_wgrad_matches_loops() {
    for case in 0..CONV_CASES {
        run_conv(case, Conv::Wgrad);
    }
}

// ---------------------------------------------------------------------------------------------
// Matmul
// ---------------------------------------------------------------------------------------------

/// Batched matmul: batch rank 0–2 with both operands broadcasting, M/N/K 1–13, every operand
/// with a random memory order (transposed, batch-inner, padded).
#[test]
fn random_matmul_matches_loops() {
    for case in 0..40u64 {
        let mut rng = Rng::new(20, case);
        let batch = random_dims(&mut rng, 0, 2, 3);
        let (m, n, k) = (rng.int(1, 13), rng.int(1, 13), rng.int(1, 13));
        let ab = if batch.is_empty() {
            vec![]
        } else {
            bcast_dims(&mut rng, &batch)
        };
        let bb = if batch.is_empty() {
            vec![]
        } else {
            bcast_dims(&mut rng, &batch)
        };
        let (mut ad, mut bd, mut cd) = (ab.clone(), bb.clone(), batch.clone());
        ad.extend([m, k]);
        bd.extend([k, n]);
        cd.extend([m, n]);
        let dt = rng.float_type();
        let (sa, sb, sc) = (
            spec_any(&mut rng, 1, dt, &ad),
            spec_any(&mut rng, 2, dt, &bd),
            spec_any(&mut rng, 3, dt, &cd),
        );
        let what = format!(
            "case {case} {dt:?} a{ad:?}/{:?} b{bd:?}/{:?} c{cd:?}/{:?}",
            sa.strides, sb.strides, sc.strides
        );
        let a = rounded(dt, &rng.values(vol(&ad), -1.0, 1.0));
        let b = rounded(dt, &rng.values(vol(&bd), -1.0, 1.0));
        let mut g = GraphBuilder::new("mm");
        g.tensor(sa).tensor(sb).tensor(sc);
        g.matmul("mm", 1, 2, 3);
        let got = run_graph(g, &[(1, a.clone()), (2, b.clone())], &[3])
            .expect("run")
            .remove(0);
        let mut want = Vec::new();
        for bi in 0..vol(&batch) {
            let bidx = unflat(&batch, bi);
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0f64;
                    for kk in 0..k {
                        let mut ia = bidx.clone();
                        ia.extend([i, kk]);
                        let mut ib = bidx.clone();
                        ib.extend([kk, j]);
                        s +=
                            f64::from(a[bcast_flat(&ad, &ia)]) * f64::from(b[bcast_flat(&bd, &ib)]);
                    }
                    want.push(round_to(dt, s as f32));
                }
            }
        }
        assert_close(&what, &got, &want, tolerance(dt, true));
    }
}

// ---------------------------------------------------------------------------------------------
// Norms
// ---------------------------------------------------------------------------------------------

fn eps_spec(uid: i64, v: f32) -> TensorSpec {
    TensorSpec::scalar(uid, "eps", TensorValue::Float32(v))
}

/// `(N, C, spatial…)` with 0–3 spatial dims, and the `(1, C, 1…)` statistics dims.
fn nc_dims(rng: &mut Rng) -> (Vec<i64>, Vec<i64>) {
    let mut x = vec![rng.int(1, 3), rng.int(1, 5)];
    for _ in 0..rng.int(1, 3) {
        x.push(rng.int(1, 4));
    }
    let mut s = vec![1, x[1]];
    s.resize(x.len(), 1);
    (x, s)
}

/// Batchnorm inference, both forms (mean + inv_variance; mean + variance + epsilon).
#[test]
fn random_batchnorm_inference_matches_loops() {
    for case in 0..30u64 {
        let mut rng = Rng::new(30, case);
        let (xd, sd) = nc_dims(&mut rng);
        let c = xd[1] as usize;
        let dt = rng.float_type();
        let variance_form = rng.coin(0.5);
        let eps = rng.uniform(1e-5, 1e-2);
        let x = rounded(dt, &rng.values(vol(&xd), -2.0, 2.0));
        let mean = rng.values(c, -0.5, 0.5);
        let stat = rng.values(c, 0.3, 2.0);
        let scale = rng.values(c, 0.5, 1.5);
        let bias = rng.values(c, -0.5, 0.5);
        let mut g = GraphBuilder::new("bn");
        g.tensor(spec_any(&mut rng, 1, dt, &xd));
        for u in 2..=5 {
            g.tensor(TensorSpec::new(u, "stat", DT::FLOAT, &sd));
        }
        g.tensor(spec_any(&mut rng, 6, dt, &xd))
            .tensor(eps_spec(7, eps));
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
        let ins = [
            (1, x.clone()),
            (2, mean.clone()),
            (3, stat.clone()),
            (4, scale.clone()),
            (5, bias.clone()),
        ];
        let got = run_graph(g, &ins, &[6]).expect("run").remove(0);
        let want: Vec<f32> = (0..x.len())
            .map(|i| {
                let ch = unflat(&xd, i)[1] as usize;
                let inv = if variance_form {
                    1.0 / (f64::from(stat[ch]) + f64::from(eps)).sqrt()
                } else {
                    f64::from(stat[ch])
                };
                let v = (f64::from(x[i]) - f64::from(mean[ch])) * inv * f64::from(scale[ch])
                    + f64::from(bias[ch]);
                round_to(dt, v as f32)
            })
            .collect();
        let what = format!("case {case} {dt:?} {xd:?} variance form {variance_form}");
        assert_close(&what, &got, &want, tolerance(dt, true));
    }
}

/// Batchnorm training: y, optional saved mean / inv_variance, optional running statistics.
#[test]
fn random_batchnorm_training_matches_loops() {
    for case in 0..30u64 {
        let mut rng = Rng::new(31, case);
        let (mut xd, sd) = nc_dims(&mut rng);
        xd[0] = rng.int(2, 3); // at least two values per channel (unbiased running variance)
        let c = xd[1] as usize;
        let dt = rng.float_type();
        let (saved, running) = (rng.coin(0.6), rng.coin(0.6));
        let eps = rng.uniform(1e-5, 1e-2);
        let momentum = rng.uniform(0.05, 0.5);
        let x = rounded(dt, &rng.values(vol(&xd), -2.0, 2.0));
        let scale = rng.values(c, 0.5, 1.5);
        let bias = rng.values(c, -0.5, 0.5);
        let (pm, pv) = (rng.values(c, -0.5, 0.5), rng.values(c, 0.5, 2.0));
        let mut g = GraphBuilder::new("bnt");
        g.tensor(spec_any(&mut rng, 1, dt, &xd))
            .tensor(TensorSpec::new(2, "scale", DT::FLOAT, &sd))
            .tensor(TensorSpec::new(3, "bias", DT::FLOAT, &sd))
            .tensor(eps_spec(4, eps))
            .tensor(TensorSpec::new(5, "pm", DT::FLOAT, &sd))
            .tensor(TensorSpec::new(6, "pv", DT::FLOAT, &sd))
            .tensor(TensorSpec::scalar(
                7,
                "momentum",
                TensorValue::Float32(momentum),
            ))
            .tensor(spec_any(&mut rng, 8, dt, &xd))
            .tensor(TensorSpec::new(9, "mean", DT::FLOAT, &sd))
            .tensor(TensorSpec::new(10, "inv", DT::FLOAT, &sd))
            .tensor(TensorSpec::new(11, "nm", DT::FLOAT, &sd))
            .tensor(TensorSpec::new(12, "nv", DT::FLOAT, &sd));
        let opt = |on: bool, u: i64| on.then_some(u);
        g.node(
            "bn",
            Box::new(move |fbb| {
                (
                    NodeAttributes::BatchnormAttributes,
                    BatchnormAttributes::create(
                        fbb,
                        &BatchnormAttributesArgs {
                            x_tensor_uid: 1,
                            scale_tensor_uid: 2,
                            bias_tensor_uid: 3,
                            epsilon_tensor_uid: 4,
                            prev_running_mean_tensor_uid: opt(running, 5),
                            prev_running_variance_tensor_uid: opt(running, 6),
                            momentum_tensor_uid: opt(running, 7),
                            y_tensor_uid: 8,
                            mean_tensor_uid: opt(saved, 9),
                            inv_variance_tensor_uid: opt(saved, 10),
                            next_running_mean_tensor_uid: opt(running, 11),
                            next_running_variance_tensor_uid: opt(running, 12),
                            ..Default::default()
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        let mut ins = vec![(1, x.clone()), (2, scale.clone()), (3, bias.clone())];
        let mut outs = vec![8];
        if saved {
            outs.extend([9, 10]);
        }
        if running {
            ins.extend([(5, pm.clone()), (6, pv.clone())]);
            outs.extend([11, 12]);
        }
        let out = run_graph(g, &ins, &outs).expect("run");
        // Per-channel statistics by plain loops.
        let mut vals = vec![Vec::new(); c];
        for (i, &v) in x.iter().enumerate() {
            vals[unflat(&xd, i)[1] as usize].push(f64::from(v));
        }
        let mean: Vec<f64> = vals
            .iter()
            .map(|v| v.iter().sum::<f64>() / v.len() as f64)
            .collect();
        let var: Vec<f64> = vals
            .iter()
            .zip(&mean)
            .map(|(v, m)| v.iter().map(|a| (a - m).powi(2)).sum::<f64>() / v.len() as f64)
            .collect();
        let inv: Vec<f64> = var
            .iter()
            .map(|v| 1.0 / (v + f64::from(eps)).sqrt())
            .collect();
        let y: Vec<f32> = (0..x.len())
            .map(|i| {
                let ch = unflat(&xd, i)[1] as usize;
                let v = (f64::from(x[i]) - mean[ch]) * inv[ch] * f64::from(scale[ch])
                    + f64::from(bias[ch]);
                round_to(dt, v as f32)
            })
            .collect();
        let what = format!("case {case} {dt:?} {xd:?} saved {saved} running {running}");
        let t = tolerance(DT::FLOAT, true);
        assert_close(&format!("{what} y"), &out[0], &y, tolerance(dt, true));
        let mut o = 1;
        let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<_>>();
        if saved {
            assert_close(&format!("{what} mean"), &out[1], &f(&mean), t);
            assert_close(&format!("{what} inv_variance"), &out[2], &f(&inv), t);
            o = 3;
        }
        if running {
            let m = f64::from(momentum);
            let cnt = x.len() as f64 / c as f64;
            let nm: Vec<f64> = (0..c)
                .map(|ch| (1.0 - m) * f64::from(pm[ch]) + m * mean[ch])
                .collect();
            let nv: Vec<f64> = (0..c)
                .map(|ch| (1.0 - m) * f64::from(pv[ch]) + m * var[ch] * cnt / (cnt - 1.0))
                .collect();
            assert_close(&format!("{what} running mean"), &out[o], &f(&nm), t);
            assert_close(&format!("{what} running variance"), &out[o + 1], &f(&nv), t);
        }
    }
}

/// Layernorm (explicit `normalized_dim_count` or 0 = from the scale dims) and rmsnorm
/// (optional bias), with their optional statistics outputs.
#[test]
fn random_layernorm_and_rmsnorm_match_loops() {
    for case in 0..40u64 {
        let mut rng = Rng::new(40, case);
        let rms = case % 2 == 1;
        let mut xd = random_dims(&mut rng, 2, 4, 5);
        let r = xd.len();
        xd[r - 1] = rng.int(2, 6);
        let nd = rng.int(1, r as i64 - 1) as usize; // normalized: the last nd dims
        let ndc = if !rms && rng.coin(0.5) { nd as i64 } else { 0 };
        let sd: Vec<i64> = (0..r)
            .map(|i| if i >= r - nd { xd[i] } else { 1 })
            .collect();
        let std_: Vec<i64> = (0..r)
            .map(|i| if i >= r - nd { 1 } else { xd[i] })
            .collect();
        // With count 0 the axes start at the first non-1 scale dim: a leading normalized dim
        // of size 1 changes nothing.
        let dt = rng.float_type();
        let with_bias = !rms || rng.coin(0.5);
        let stats = rng.coin(0.7);
        let eps = rng.uniform(1e-5, 1e-2);
        let x = rounded(dt, &rng.values(vol(&xd), -2.0, 2.0));
        let scale = rng.values(vol(&sd), 0.5, 1.5);
        let bias = rng.values(vol(&sd), -0.5, 0.5);
        let mut g = GraphBuilder::new("ln");
        g.tensor(spec_any(&mut rng, 1, dt, &xd))
            .tensor(spec_any(&mut rng, 2, DT::FLOAT, &sd))
            .tensor(spec_any(&mut rng, 3, DT::FLOAT, &sd))
            .tensor(eps_spec(4, eps))
            .tensor(spec_any(&mut rng, 5, dt, &xd))
            .tensor(TensorSpec::new(6, "mean", DT::FLOAT, &std_))
            .tensor(TensorSpec::new(7, "inv", DT::FLOAT, &std_));
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
                                bias_tensor_uid: with_bias.then_some(3),
                                inv_rms_tensor_uid: stats.then_some(7),
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
                                mean_tensor_uid: stats.then_some(6),
                                inv_variance_tensor_uid: stats.then_some(7),
                                ..Default::default()
                            },
                        )
                        .as_union_value(),
                    )
                }
            }),
        );
        let mut ins = vec![(1, x.clone()), (2, scale.clone())];
        if with_bias {
            ins.push((3, bias.clone()));
        }
        let outs: Vec<i64> = match (stats, rms) {
            (false, _) => vec![5],
            (true, true) => vec![5, 7],
            (true, false) => vec![5, 6, 7],
        };
        let out = run_graph(g, &ins, &outs).expect("run");
        let inner: usize = xd[r - nd..].iter().product::<i64>() as usize;
        let rows = x.len() / inner;
        let (mut y, mut means, mut invs) = (Vec::new(), Vec::new(), Vec::new());
        for row in 0..rows {
            let v: Vec<f64> = x[row * inner..(row + 1) * inner]
                .iter()
                .map(|&a| f64::from(a))
                .collect();
            let mean = if rms {
                0.0
            } else {
                v.iter().sum::<f64>() / inner as f64
            };
            let ms = v.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / inner as f64;
            let inv = 1.0 / (ms + f64::from(eps)).sqrt();
            for (i, a) in v.iter().enumerate() {
                let b = if with_bias { f64::from(bias[i]) } else { 0.0 };
                y.push(round_to(
                    dt,
                    ((a - mean) * inv * f64::from(scale[i]) + b) as f32,
                ));
            }
            means.push(mean as f32);
            invs.push(inv as f32);
        }
        let what =
            format!("case {case} rms {rms} {dt:?} x{xd:?} scale{sd:?} ndc {ndc} bias {with_bias}");
        assert_close(&format!("{what} y"), &out[0], &y, tolerance(dt, true));
        if stats {
            let t = tolerance(DT::FLOAT, true);
            assert_close(&format!("{what} inv"), out.last().unwrap(), &invs, t);
            if !rms {
                assert_close(&format!("{what} mean"), &out[1], &means, t);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reduction
// ---------------------------------------------------------------------------------------------

/// Every reduction mode on random rank 1–4 shapes with a random set of reduced axes.
#[test]
fn random_reduction_matches_loops() {
    let modes = [
        R::ADD,
        R::MUL,
        R::MIN_OP,
        R::MAX_OP,
        R::AMAX,
        R::AVG,
        R::NORM1,
        R::NORM2,
        R::MUL_NO_ZEROS,
    ];
    for case in 0..45u64 {
        let mut rng = Rng::new(50, case);
        let m = modes[case as usize % modes.len()];
        let xd = random_dims(&mut rng, 1, 4, 5);
        let reduced: Vec<bool> = xd.iter().map(|_| rng.coin(0.5)).collect();
        let yd: Vec<i64> = xd
            .iter()
            .zip(&reduced)
            .map(|(&d, &r)| if r { 1 } else { d })
            .collect();
        let dt = rng.float_type();
        let mut x: Vec<f32> = rng
            .values(vol(&xd), 0.7, 1.4)
            .into_iter()
            .map(|v| if rng.coin(0.5) { -v } else { v })
            .collect();
        if m == R::MUL_NO_ZEROS {
            for v in x.iter_mut().step_by(3) {
                *v = 0.0;
            }
        }
        let x = rounded(dt, &x);
        let mut g = GraphBuilder::new("red");
        g.tensor(spec_any(&mut rng, 1, dt, &xd))
            .tensor(spec_any(&mut rng, 2, dt, &yd));
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
        let mut groups = vec![Vec::new(); vol(&yd)];
        for (i, &v) in x.iter().enumerate() {
            let idx: Vec<i64> = unflat(&xd, i)
                .iter()
                .zip(&reduced)
                .map(|(&j, &r)| if r { 0 } else { j })
                .collect();
            groups[flat(&yd, &idx)].push(f64::from(v));
        }
        let want: Vec<f32> = groups
            .iter()
            .map(|v| {
                let r = match m {
                    R::ADD => v.iter().sum(),
                    R::MUL => v.iter().product(),
                    R::MIN_OP => v.iter().copied().fold(f64::INFINITY, f64::min),
                    R::MAX_OP => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    R::AMAX => v.iter().map(|a| a.abs()).fold(0.0, f64::max),
                    R::AVG => v.iter().sum::<f64>() / v.len() as f64,
                    R::NORM1 => v.iter().map(|a| a.abs()).sum(),
                    R::NORM2 => v.iter().map(|a| a * a).sum::<f64>().sqrt(),
                    _ => v.iter().filter(|a| **a != 0.0).product(),
                };
                round_to(dt, r as f32)
            })
            .collect();
        let what = format!("case {case} {m:?} {dt:?} {xd:?} -> {yd:?}");
        assert_close(&what, &got, &want, tolerance(dt, true));
    }
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

/// Max (padding skipped or zero, optional index) and average pooling (padding included or
/// excluded), 1–3 spatial dims, padding below the window, NCHW or NHWC.
#[test]
fn random_pooling_matches_loops() {
    for case in 0..40u64 {
        let mut rng = Rng::new(60, case);
        let sp = rng.int(1, 3) as usize;
        let (n, c) = (rng.int(1, 2), rng.int(1, 4));
        let (mut xd, mut yd) = (vec![n, c], vec![n, c]);
        let (mut win, mut st, mut pre, mut post) = (vec![], vec![], vec![], vec![]);
        for _ in 0..sp {
            let wn = rng.int(1, 3);
            let (p0, p1, s) = (rng.int(0, wn - 1), rng.int(0, wn - 1), rng.int(1, 3));
            let i = rng.int((wn - p0 - p1).max(1), 6);
            xd.push(i);
            yd.push((i + p0 + p1 - wn) / s + 1);
            win.push(wn);
            st.push(s);
            pre.push(p0);
            post.push(p1);
        }
        let mode = rng.pick(&[
            ResampleMode::MAXPOOL,
            ResampleMode::MAXPOOL,
            ResampleMode::AVGPOOL_INCLUDE_PADDING,
            ResampleMode::AVGPOOL_EXCLUDE_PADDING,
        ]);
        let max = mode == ResampleMode::MAXPOOL;
        let zero_pad = max && rng.coin(0.5);
        let with_index = max && rng.coin(0.6);
        let dt = rng.float_type();
        let layouts = [Layout::Packed, Layout::ChannelsLast];
        let (lx, ly) = (rng.pick(&layouts), rng.pick(&layouts));
        // Small discrete values in f16/bf16 give ties: the first maximum must win.
        let x = rounded(dt, &rng.values(vol(&xd), -2.0, 2.0));
        let mut g = GraphBuilder::new("pool");
        g.tensor(spec(&mut rng, 1, dt, &xd, lx))
            .tensor(spec(&mut rng, 2, dt, &yd, ly))
            .tensor(spec(&mut rng, 3, DT::INT32, &yd, ly));
        let (w2, s2, p2, q2) = (win.clone(), st.clone(), pre.clone(), post.clone());
        g.node(
            "pool",
            Box::new(move |fbb| {
                let (window, stride) = (fbb.create_vector(&w2), fbb.create_vector(&s2));
                let (pre_padding, post_padding) = (fbb.create_vector(&p2), fbb.create_vector(&q2));
                (
                    NodeAttributes::ResampleFwdAttributes,
                    ResampleFwdAttributes::create(
                        fbb,
                        &ResampleFwdAttributesArgs {
                            x_tensor_uid: 1,
                            y_tensor_uid: 2,
                            index_tensor_uid: with_index.then_some(3),
                            pre_padding: Some(pre_padding),
                            post_padding: Some(post_padding),
                            stride: Some(stride),
                            window: Some(window),
                            resample_mode: mode,
                            padding_mode: if zero_pad {
                                PaddingMode::ZERO_PAD
                            } else {
                                PaddingMode::NEG_INF_PAD
                            },
                            generate_index: Some(with_index),
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        let outs: Vec<i64> = if with_index { vec![2, 3] } else { vec![2] };
        let out = run_graph(g, &[(1, x.clone())], &outs).expect("run");
        let (mut y, mut idx) = (Vec::new(), Vec::new());
        let wvol: i64 = win.iter().product();
        for yi in indices(&yd) {
            let (mut best, mut bi, mut sum, mut cnt) = (f64::NEG_INFINITY, -1i64, 0f64, 0);
            for (wf, wpos) in indices(&win).into_iter().enumerate() {
                let p: Vec<i64> = (0..sp)
                    .map(|d| yi[d + 2] * st[d] - pre[d] + wpos[d])
                    .collect();
                let inside = p.iter().zip(&xd[2..]).all(|(&p, &s)| (0..s).contains(&p));
                let v = if inside {
                    let mut xi = vec![yi[0], yi[1]];
                    xi.extend(&p);
                    f64::from(x[flat(&xd, &xi)])
                } else if zero_pad {
                    0.0
                } else {
                    continue;
                };
                if bi < 0 || v > best {
                    best = v;
                    bi = wf as i64;
                }
                if inside {
                    sum += v;
                    cnt += 1;
                }
            }
            y.push(round_to(
                dt,
                match mode {
                    ResampleMode::MAXPOOL => best,
                    ResampleMode::AVGPOOL_INCLUDE_PADDING => sum / wvol as f64,
                    _ => sum / f64::from(cnt),
                } as f32,
            ));
            idx.push(bi as f32);
        }
        let what = format!(
            "case {case} {mode:?} zero_pad {zero_pad} {dt:?} x{xd:?} {lx:?} y {ly:?} win {win:?} stride {st:?} pre {pre:?} post {post:?}"
        );
        let t = if max { 0.0 } else { tolerance(dt, true) };
        assert_close(&what, &out[0], &y, t);
        if with_index {
            assert_eq!(out[1], idx, "{what}: index");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SDPA
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Causal {
    Off,
    TopLeft,
    BottomRight,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    Unset,
    Value(f32),
    Tensor(f32),
}

/// Random B, H (with grouped K/V heads), S_q, S_kv, D, D_v; causal off / top-left /
/// bottom-right; scale unset / attribute / tensor; float, boolean or no mask; BHSD or BSHD
/// memory order per tensor; logsumexp stats.
#[test]
fn random_sdpa_matches_loops() {
    for case in 0..40u64 {
        let mut rng = Rng::new(70, case);
        let (b, hk) = (rng.int(1, 2), rng.int(1, 2));
        let h = hk * rng.int(1, 3);
        // Every 8th case has more query rows than one 64-row block of the kernel.
        let sq = if case % 8 == 7 {
            rng.int(60, 140)
        } else {
            rng.int(1, 7)
        };
        let (skv, d, dv) = (rng.int(1, 9), rng.int(1, 8), rng.int(1, 8));
        let causal = rng.pick(&[Causal::Off, Causal::TopLeft, Causal::BottomRight]);
        let sv = rng.uniform(0.1, 1.0);
        let scale = rng.pick(&[Scale::Unset, Scale::Value(sv), Scale::Tensor(sv)]);
        let mask_kind = rng.int(0, 2); // 0 none, 1 float, 2 boolean
        let md = vec![
            if rng.coin(0.5) { b } else { 1 },
            if rng.coin(0.5) { h } else { 1 },
            sq,
            skv,
        ];
        let dt = rng.float_type();
        let (qd, kd, vd, od) = (
            vec![b, h, sq, d],
            vec![b, hk, skv, d],
            vec![b, hk, skv, dv],
            vec![b, h, sq, dv],
        );
        let bshd = |rng: &mut Rng, u: i64, dims: &[i64]| {
            let s = if rng.coin(0.5) {
                strides_in_order(dims, &[0, 2, 1, 3], &[false; 4])
            } else {
                strides_in_order(dims, &[0, 1, 2, 3], &[false; 4])
            };
            TensorSpec::new(u, &format!("t{u}"), dt, dims).strides(&s)
        };
        let q = rounded(dt, &rng.values(vol(&qd), -1.5, 1.5));
        let k = rounded(dt, &rng.values(vol(&kd), -1.5, 1.5));
        let v = rounded(dt, &rng.values(vol(&vd), -1.0, 1.0));
        let mask = if mask_kind == 2 {
            rng.discrete(vol(&md), &[0.0, 1.0, 1.0])
        } else {
            rng.values(vol(&md), -1.0, 1.0)
        };
        let mut g = GraphBuilder::new("sdpa");
        g.tensor(bshd(&mut rng, 1, &qd))
            .tensor(bshd(&mut rng, 2, &kd))
            .tensor(bshd(&mut rng, 3, &vd))
            .tensor(bshd(&mut rng, 4, &od))
            .tensor(TensorSpec::new(5, "stats", DT::FLOAT, &[b, h, sq, 1]))
            .tensor(TensorSpec::scalar(6, "scale", TensorValue::Float32(sv)))
            .tensor(TensorSpec::new(
                7,
                "mask",
                if mask_kind == 2 {
                    DT::BOOLEAN
                } else {
                    DT::FLOAT
                },
                &md,
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
                            scale_tensor_uid: matches!(scale, Scale::Tensor(_)).then_some(6),
                            attn_scale_value: match scale {
                                Scale::Value(s) => Some(s),
                                _ => None,
                            },
                            causal_mask: causal == Causal::TopLeft,
                            causal_mask_bottom_right: causal == Causal::BottomRight,
                            attn_mask_tensor_uid: (mask_kind > 0).then_some(7),
                            ..Default::default()
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        let mut ins = vec![(1, q.clone()), (2, k.clone()), (3, v.clone())];
        if mask_kind > 0 {
            ins.push((7, mask.clone()));
        }
        let out = run_graph(g, &ins, &[4, 5]).expect("run");
        let s = f64::from(if scale == Scale::Unset { 1.0 } else { sv });
        let (mut o, mut stats) = (Vec::new(), Vec::new());
        for bi in 0..b {
            for hi in 0..h {
                let kh = hi / (h / hk);
                for i in 0..sq {
                    let mut sc = vec![f64::NEG_INFINITY; skv as usize];
                    for j in 0..skv {
                        let keep = match causal {
                            Causal::Off => true,
                            Causal::TopLeft => j <= i,
                            Causal::BottomRight => j <= i + skv - sq,
                        };
                        let mv = f64::from(mask[bcast_flat(&md, &[bi, hi, i, j])]);
                        if !keep || (mask_kind == 2 && mv == 0.0) {
                            continue;
                        }
                        let mut dot = 0f64;
                        for dd in 0..d {
                            dot += f64::from(q[flat(&qd, &[bi, hi, i, dd])])
                                * f64::from(k[flat(&kd, &[bi, kh, j, dd])]);
                        }
                        sc[j as usize] = dot * s + if mask_kind == 1 { mv } else { 0.0 };
                    }
                    let mx = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    if mx == f64::NEG_INFINITY {
                        o.extend(std::iter::repeat_n(0.0, dv as usize));
                        stats.push(f32::NEG_INFINITY);
                        continue;
                    }
                    let p: Vec<f64> = sc.iter().map(|x| (x - mx).exp()).collect();
                    let sum: f64 = p.iter().sum();
                    for e in 0..dv {
                        let acc: f64 = (0..skv)
                            .map(|j| p[j as usize] * f64::from(v[flat(&vd, &[bi, kh, j, e])]))
                            .sum();
                        o.push(round_to(dt, (acc / sum) as f32));
                    }
                    stats.push((mx + sum.ln()) as f32);
                }
            }
        }
        let what = format!(
            "case {case} {dt:?} q{qd:?} k{kd:?} v{vd:?} {causal:?} {scale:?} mask {mask_kind} {md:?}"
        );
        assert_close(&format!("{what} o"), &out[0], &o, tolerance(dt, true));
        assert_close(
            &format!("{what} stats"),
            &out[1],
            &stats,
            tolerance(DT::FLOAT, true),
        );
    }
}
