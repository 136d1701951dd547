//! Reduction and softmax graphs for the reduce_fwd tests (`triton_reduce.rs` without a
//! device, `gpu_reduce.rs` on one): UIDs x 1, y 2; the softmax intermediates (virtual) m 10,
//! d 11, e 12, s 13, l 14. Also the per-element tolerance both compare with.

#![allow(dead_code)]

use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values, tolerance};
use hipdnn_schema::graph::{
    DataType as DT, NodeAttributes, PointwiseAttributesArgs, PointwiseMode as PM,
    ReductionAttributes, ReductionAttributesArgs, ReductionMode as RM,
};

pub const X: i64 = 1;
pub const Y: i64 = 2;
pub const M: i64 = 10;
pub const D: i64 = 11;
pub const E: i64 = 12;
pub const S: i64 = 13;
pub const L: i64 = 14;

/// What the graph computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// One reduction node.
    Reduce(RM),
    /// MAX → SUB → EXP → ADD → DIV.
    Softmax,
    /// MAX → SUB → EXP → ADD → LOG → SUB.
    LogSoftmax,
}

/// Every reduction mode of the reference engine.
pub const MODES: [RM; 9] = [
    RM::ADD,
    RM::MUL,
    RM::MIN_OP,
    RM::MAX_OP,
    RM::AMAX,
    RM::AVG,
    RM::NORM1,
    RM::NORM2,
    RM::MUL_NO_ZEROS,
];

/// One reduce_fwd graph.
#[derive(Debug, Clone)]
pub struct ReduceCase {
    pub kind: Kind,
    /// x's type.
    pub dt: DT,
    /// y f32 (else x's type).
    pub y_f32: bool,
    /// x dims.
    pub dims: Vec<i64>,
    /// x strides (softmax: y's too); `None` = packed.
    pub strides: Option<Vec<i64>>,
    /// Reduced axes.
    pub axes: Vec<usize>,
    /// Softmax intermediates' type.
    pub mid: DT,
    /// A change that takes the graph outside the pack (refusal tests).
    pub tweak: Tweak,
}

/// Graph changes for the refusal tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tweak {
    /// The graph as described.
    None,
    /// The softmax sum s is not virtual.
    SumInMemory,
    /// MUL in place of the softmax DIV.
    MulForDiv,
    /// The ADD reduction sums x instead of exp(x − max).
    SumOfX,
}

fn packed(dims: &[i64]) -> Vec<i64> {
    hipdnn_engines::reference::testing::packed_strides(dims)
}

impl ReduceCase {
    pub fn reduce(mode: RM, dt: DT, dims: &[i64], axes: &[usize]) -> ReduceCase {
        ReduceCase {
            kind: Kind::Reduce(mode),
            dt,
            y_f32: false,
            dims: dims.to_vec(),
            strides: None,
            axes: axes.to_vec(),
            mid: DT::FLOAT,
            tweak: Tweak::None,
        }
    }

    pub fn softmax(log: bool, dt: DT, dims: &[i64], axes: &[usize]) -> ReduceCase {
        ReduceCase {
            kind: if log { Kind::LogSoftmax } else { Kind::Softmax },
            ..ReduceCase::reduce(RM::ADD, dt, dims, axes)
        }
    }

    pub fn is_softmax(&self) -> bool {
        !matches!(self.kind, Kind::Reduce(_))
    }

    /// Dims with the reduced axes set to 1.
    pub fn reduced_dims(&self) -> Vec<i64> {
        self.dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if self.axes.contains(&i) { 1 } else { d })
            .collect()
    }

    pub fn y_dims(&self) -> Vec<i64> {
        if self.is_softmax() {
            self.dims.clone()
        } else {
            self.reduced_dims()
        }
    }

    pub fn y_dt(&self) -> DT {
        if self.y_f32 { DT::FLOAT } else { self.dt }
    }

    /// Elements of x and of y.
    pub fn counts(&self) -> (usize, usize) {
        let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
        (vol(&self.dims), vol(&self.y_dims()))
    }

    /// Elements reduced per output value.
    pub fn group(&self) -> usize {
        self.axes.iter().map(|&a| self.dims[a] as usize).product()
    }

    /// The output index (row-major over the reduced dims) of each x element (row-major).
    pub fn group_of(&self) -> Vec<usize> {
        let rd = self.reduced_dims();
        let rs = packed(&rd);
        let (n, _) = self.counts();
        let mut idx = vec![0usize; self.dims.len()];
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(
                idx.iter()
                    .zip(&rd)
                    .zip(&rs)
                    .map(|((&i, &d), &s)| if d == 1 { 0 } else { i * s as usize })
                    .sum(),
            );
            for a in (0..idx.len()).rev() {
                idx[a] += 1;
                if idx[a] < self.dims[a] as usize {
                    break;
                }
                idx[a] = 0;
            }
        }
        out
    }

    /// Deterministic x: in [0.9, 1.1) for products (every fifth value 0 for MUL_NO_ZEROS),
    /// else in [−2, 3).
    pub fn input(&self, seed: u64) -> Vec<f32> {
        let (n, _) = self.counts();
        match self.kind {
            Kind::Reduce(RM::MUL) => random_values(n, seed, 0.9, 1.1),
            Kind::Reduce(RM::MUL_NO_ZEROS) => random_values(n, seed, 0.9, 1.1)
                .into_iter()
                .enumerate()
                .map(|(i, v)| if i % 5 == 2 { 0.0 } else { v })
                .collect(),
            _ => random_values(n, seed, -2.0, 3.0),
        }
    }

    /// Per output element tolerance against the CPU reference value `r` (module docs of
    /// `gpu_reduce.rs`), from the input `x` (dense row-major).
    pub fn tolerances(&self, x: &[f32], want: &[f32]) -> Vec<f32> {
        let eps = f32::EPSILON / 2.0; // 2^-24
        let n = self.group() as f32;
        // Worst-case bound of the two summation orders (reference: 16 sequential lanes;
        // kernel: lanes of a tile then a tree), counted on both sides.
        let sum_bound = 2.0 * (n / 16.0 + 32.0) * eps;
        let out16 = if self.y_dt() == DT::FLOAT {
            0.0
        } else {
            tolerance(self.y_dt(), true)
        };
        let mid16 = if self.is_softmax() && self.mid != DT::FLOAT {
            tolerance(self.mid, true)
        } else {
            0.0
        };
        let abs_sum: Vec<f32> = if self.is_softmax() {
            Vec::new()
        } else {
            let mut a = vec![0f32; want.len()];
            for (v, g) in x.iter().zip(self.group_of()) {
                a[g] += v.abs();
            }
            a
        };
        want.iter()
            .enumerate()
            .map(|(i, &r)| {
                let f32_part = match self.kind {
                    Kind::Reduce(RM::ADD | RM::NORM1) => sum_bound * (1.0 + abs_sum[i]),
                    Kind::Reduce(RM::AVG) => sum_bound * (1.0 + abs_sum[i] / n),
                    Kind::Reduce(RM::NORM2) => (sum_bound + 2.0 * eps) * (1.0 + r.abs()),
                    Kind::Reduce(RM::MUL | RM::MUL_NO_ZEROS) => 2.0 * n * eps * r.abs() + 1e-30,
                    Kind::Reduce(_) => 0.0,
                    Kind::Softmax | Kind::LogSoftmax => (2e-6 + sum_bound) * (1.0 + r.abs()),
                };
                let exact = matches!(self.kind, Kind::Reduce(RM::MIN_OP | RM::MAX_OP | RM::AMAX));
                if exact {
                    0.0
                } else {
                    f32_part + (out16 + mid16) * (1.0 + r.abs())
                }
            })
            .collect()
    }

    pub fn graph(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new(match self.kind {
            Kind::Reduce(_) => "reduction",
            Kind::Softmax => "softmax",
            Kind::LogSoftmax => "log_softmax",
        });
        let xs = self.strides.clone().unwrap_or_else(|| packed(&self.dims));
        g.tensor(TensorSpec::new(X, "x", self.dt, &self.dims).strides(&xs));
        let yd = self.y_dims();
        let ys = if self.is_softmax() {
            xs.clone()
        } else {
            packed(&yd)
        };
        g.tensor(TensorSpec::new(Y, "y", self.y_dt(), &yd).strides(&ys));
        let red = |g: &mut GraphBuilder, name: &str, mode: RM, i: i64, o: i64| {
            g.node(
                name,
                Box::new(move |fbb| {
                    (
                        NodeAttributes::ReductionAttributes,
                        ReductionAttributes::create(
                            fbb,
                            &ReductionAttributesArgs {
                                mode,
                                in_tensor_uid: i,
                                out_tensor_uid: o,
                                is_deterministic: false,
                            },
                        )
                        .as_union_value(),
                    )
                }),
            );
        };
        let pw = |g: &mut GraphBuilder, name: &str, m: PM, a: i64, b: Option<i64>, o: i64| {
            g.pointwise(
                name,
                PointwiseAttributesArgs {
                    operation: m,
                    in_0_tensor_uid: a,
                    in_1_tensor_uid: b,
                    out_0_tensor_uid: o,
                    ..Default::default()
                },
            );
        };
        match self.kind {
            Kind::Reduce(mode) => red(&mut g, "reduce", mode, X, Y),
            Kind::Softmax | Kind::LogSoftmax => {
                let rd = self.reduced_dims();
                let tweak = self.tweak;
                let virt = |u: i64, n: &str, d: &[i64]| {
                    let t = TensorSpec::new(u, n, self.mid, d);
                    if u == S && tweak == Tweak::SumInMemory {
                        t
                    } else {
                        t.virtual_()
                    }
                };
                g.tensor(virt(M, "max", &rd))
                    .tensor(virt(D, "shifted", &self.dims))
                    .tensor(virt(E, "exp", &self.dims))
                    .tensor(virt(S, "sum", &rd));
                red(&mut g, "max", RM::MAX_OP, X, M);
                pw(&mut g, "sub", PM::SUB, X, Some(M), D);
                pw(&mut g, "exp", PM::EXP, D, None, E);
                let summed = if tweak == Tweak::SumOfX { X } else { E };
                red(&mut g, "sum", RM::ADD, summed, S);
                if self.kind == Kind::Softmax {
                    let m = if tweak == Tweak::MulForDiv {
                        PM::MUL
                    } else {
                        PM::DIV
                    };
                    pw(&mut g, "div", m, E, Some(S), Y);
                } else {
                    g.tensor(virt(L, "log_sum", &rd));
                    pw(&mut g, "log", PM::LOG, S, None, L);
                    pw(&mut g, "sub_log", PM::SUB, D, Some(L), Y);
                }
            }
        }
        g
    }
}

/// The shape matrix of `gpu_reduce.rs` (also built on a fake device and run on the CPU
/// reference by `triton_reduce.rs`): every reduction mode × f32/f16/bf16 over odd and even
/// shapes and axis sets (last axis, first axis, middle axis, leading + trailing, all axes,
/// two of four axes), an f32 y behind 16-bit x, a transposed x; softmax and log-softmax over
/// rows of 1, 7, 384, 1000, 2500, 4096, 4097 and 20000 elements (every chunk; one chunk and
/// the online two-pass path), over a middle axis and a transposed x, with f32 and 16-bit
/// intermediates.
pub fn gpu_cases() -> Vec<ReduceCase> {
    let mut v = Vec::new();
    let shapes: [(&[i64], &[usize]); 8] = [
        (&[3, 1000], &[1]),
        (&[17, 7], &[1]),
        (&[33, 5], &[0]),
        (&[2, 5, 129], &[1]),
        (&[3, 4, 5, 6], &[0, 3]),
        (&[3, 4, 5, 6], &[1, 2]),
        (&[2, 3, 4097], &[2]),
        (&[4, 6, 11], &[0, 1, 2]),
    ];
    let mut k = 0;
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for mode in MODES {
            for (dims, axes) in shapes {
                k += 1;
                let mut c = ReduceCase::reduce(mode, dt, dims, axes);
                c.y_f32 = dt != DT::FLOAT && k % 3 == 0;
                v.push(c);
            }
        }
    }
    // A transposed x (column-major [7, 64]) reduced over each axis.
    for axes in [[0usize], [1]] {
        for mode in [RM::ADD, RM::MAX_OP] {
            v.push(ReduceCase {
                strides: Some(vec![1, 7]),
                ..ReduceCase::reduce(mode, DT::FLOAT, &[7, 64], &axes)
            });
        }
    }
    for log in [false, true] {
        for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
            for cols in [1i64, 7, 384, 1000, 4097, 20000] {
                let rows = if cols > 4096 { 3 } else { 17 };
                v.push(ReduceCase::softmax(log, dt, &[rows, cols], &[1]));
            }
        }
        // A middle axis, an f32 y, 16-bit intermediates, a transposed x and y.
        v.push(ReduceCase::softmax(log, DT::FLOAT, &[2, 300, 5], &[1]));
        v.push(ReduceCase {
            y_f32: true,
            ..ReduceCase::softmax(log, DT::HALF, &[4, 1024], &[1])
        });
        v.push(ReduceCase {
            mid: DT::HALF,
            ..ReduceCase::softmax(log, DT::HALF, &[5, 640], &[1])
        });
        v.push(ReduceCase {
            strides: Some(vec![1, 9]),
            ..ReduceCase::softmax(log, DT::FLOAT, &[9, 100], &[1])
        });
    }
    // Rows that take the 4096 chunk: spec (4096) and generic (2500).
    v.push(ReduceCase::softmax(false, DT::HALF, &[5, 4096], &[1]));
    v.push(ReduceCase::softmax(true, DT::BFLOAT16, &[3, 2500], &[1]));
    v
}
