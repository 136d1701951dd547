//! Pointwise graphs for the pointwise_fused tests (`triton_pointwise.rs` without a device,
//! `gpu_pointwise.rs` on one): graph inputs take UIDs 1..=4, intermediates 20.., the output
//! 10. [`gpu_cases`] is the GPU test's shape matrix.

#![allow(dead_code)]

use hipdnn_backend::ops::pointwise::{POINTWISE_OPS, arity};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, packed_strides};
use hipdnn_schema::graph::{DataType as DT, PointwiseAttributesArgs, PointwiseMode as M};

/// The output UID of every case.
pub const Y: i64 = 10;

/// One tensor of a case.
#[derive(Debug, Clone)]
pub struct PwTensor {
    /// UID.
    pub uid: i64,
    /// Dims.
    pub dims: Vec<i64>,
    /// Data type.
    pub dt: DT,
    /// Strides (`None` = packed).
    pub strides: Option<Vec<i64>>,
    /// Virtual (an intermediate).
    pub is_virtual: bool,
}

/// One node of a case.
#[derive(Debug, Clone)]
pub struct PwNode {
    /// Mode.
    pub mode: M,
    /// Input UIDs (the mode's arity).
    pub ins: Vec<i64>,
    /// Output UID.
    pub out: i64,
    /// RELU (lower clip, upper clip, slope) attributes.
    pub relu: Option<(f32, f32, f32)>,
    /// SWISH/SOFTPLUS beta or ELU alpha.
    pub alpha: Option<f32>,
    /// GEN_INDEX axis.
    pub axis: Option<i64>,
}

impl PwNode {
    /// A node without attributes.
    pub fn new(mode: M, ins: &[i64], out: i64) -> PwNode {
        PwNode {
            mode,
            ins: ins.to_vec(),
            out,
            relu: None,
            alpha: None,
            axis: None,
        }
    }
}

/// A pointwise graph.
#[derive(Debug, Clone)]
pub struct PwCase {
    /// What the case is.
    pub name: String,
    /// Graph inputs, then intermediates, then the output.
    pub tensors: Vec<PwTensor>,
    /// Nodes in graph order.
    pub nodes: Vec<PwNode>,
}

/// A packed tensor.
pub fn t(uid: i64, dims: &[i64], dt: DT) -> PwTensor {
    PwTensor {
        uid,
        dims: dims.to_vec(),
        dt,
        strides: None,
        is_virtual: false,
    }
}

impl PwCase {
    /// One node of `mode` over inputs of `in_dims` (UIDs 1, 2, 3; type `dt`, the selector of
    /// BINARY_SELECT f32) into a packed `out_dims` output of type `dt`, with attributes for
    /// the modes that take them (RELU clips and slope, beta/alpha 1.3, GEN_INDEX axis 0).
    pub fn single(mode: M, dt: DT, out_dims: &[i64], in_dims: &[&[i64]]) -> PwCase {
        let n = arity(mode).unwrap().inputs();
        let mut tensors: Vec<PwTensor> = (0..n)
            .map(|i| t(i as i64 + 1, in_dims[i.min(in_dims.len() - 1)], dt))
            .collect();
        tensors.push(t(Y, out_dims, dt));
        let mut node = PwNode::new(mode, &(1..=n as i64).collect::<Vec<_>>(), Y);
        match mode {
            M::RELU_FWD | M::RELU_BWD => node.relu = Some((-0.5, 1.5, 0.1)),
            M::SWISH_FWD
            | M::SWISH_BWD
            | M::SOFTPLUS_FWD
            | M::SOFTPLUS_BWD
            | M::ELU_FWD
            | M::ELU_BWD => node.alpha = Some(1.3),
            M::GEN_INDEX => node.axis = Some(0),
            _ => {}
        }
        PwCase {
            name: format!("{mode:?} {dt:?} {out_dims:?} <- {in_dims:?}"),
            tensors,
            nodes: vec![node],
        }
    }

    /// The tensor with `uid`.
    pub fn tensor(&self, uid: i64) -> &PwTensor {
        self.tensors.iter().find(|t| t.uid == uid).unwrap()
    }

    /// The tensor with `uid`, mutable.
    pub fn tensor_mut(&mut self, uid: i64) -> &mut PwTensor {
        self.tensors.iter_mut().find(|t| t.uid == uid).unwrap()
    }

    /// The graph.
    pub fn graph(&self) -> GraphBuilder {
        let mut b = GraphBuilder::new(&self.name);
        for x in &self.tensors {
            let mut s = TensorSpec::new(x.uid, &format!("t{}", x.uid), x.dt, &x.dims);
            if let Some(st) = &x.strides {
                s = s.strides(st);
            }
            if x.is_virtual {
                s = s.virtual_();
            }
            b.tensor(s);
        }
        for (i, n) in self.nodes.iter().enumerate() {
            b.pointwise(
                &format!("pw{i}"),
                PointwiseAttributesArgs {
                    operation: n.mode,
                    in_0_tensor_uid: n.ins[0],
                    in_1_tensor_uid: n.ins.get(1).copied(),
                    in_2_tensor_uid: n.ins.get(2).copied(),
                    out_0_tensor_uid: n.out,
                    relu_lower_clip: n.relu.map(|r| r.0),
                    relu_upper_clip: n.relu.map(|r| r.1),
                    relu_lower_clip_slope: n.relu.map(|r| r.2),
                    swish_beta: n.alpha,
                    elu_alpha: n.alpha,
                    softplus_beta: n.alpha,
                    axis_tensor_uid: n.axis,
                },
            );
        }
        b
    }

    /// The graph-input UIDs (tensors no node writes), in UID order.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self
            .tensors
            .iter()
            .map(|x| x.uid)
            .filter(|u| !self.nodes.iter().any(|n| n.out == *u))
            .collect();
        v.sort_unstable();
        v
    }

    /// The output UIDs: [`Y`].
    pub fn outputs(&self) -> Vec<i64> {
        vec![Y]
    }

    /// Elements of tensor `uid`.
    pub fn count(&self, uid: i64) -> usize {
        self.tensor(uid).dims.iter().product::<i64>() as usize
    }

    /// The value range of input `uid` for this case's modes: positive where a mode needs it
    /// (LOG, SQRT, RSQRT and the divisor of DIV/RECIPROCAL), |x| < 1.2 for TAN, 0/1 selectors
    /// (marked by the returned flag), else [-3, 3).
    pub fn range(&self, uid: i64) -> (f32, f32, bool) {
        let mut r = (-3.0, 3.0, false);
        for n in &self.nodes {
            for (i, u) in n.ins.iter().enumerate() {
                if *u != uid {
                    continue;
                }
                r = match (n.mode, i) {
                    (M::LOG | M::SQRT | M::RSQRT | M::RECIPROCAL, 0) | (M::DIV, 1) => {
                        (0.25, 4.0, false)
                    }
                    (M::TAN, 0) => (-1.2, 1.2, false),
                    (M::BINARY_SELECT, 2) => (0.0, 1.0, true),
                    _ => r,
                };
            }
        }
        r
    }

    /// Whether every node's mode is computed bit-exactly (no device-library function).
    pub fn exact(&self) -> bool {
        self.nodes.iter().all(|n| EXACT.contains(&n.mode))
    }
}

/// Compares a GPU output with the CPU reference's (dense row-major f32 per element): graphs of
/// [`EXACT`] modes must match bit for bit (NaN equals NaN); the others within
/// |d| ≤ tol·(1 + |r|), tol f32 2e-5, f16 1e-2, bf16 2e-2 (y's type). Returns the largest
/// |d|/(1+|r|), or the first element out of tolerance as `<case>: element <i>: gpu <g>, cpu
/// <r> (exact mode|tol <t>)`.
pub fn compare(c: &PwCase, got: &[f32], want: &[f32]) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!(
            "{}: {} outputs, the reference has {}",
            c.name,
            got.len(),
            want.len()
        ));
    }
    if c.exact() {
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            if !(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())) {
                return Err(format!(
                    "{}: element {i}: gpu {a}, cpu {b} (exact mode)",
                    c.name
                ));
            }
        }
        return Ok(0.0);
    }
    let tol = match c.tensor(Y).dt {
        DT::FLOAT => 2e-5,
        DT::HALF => 1e-2,
        _ => 2e-2,
    };
    let mut worst = 0f32;
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        if a.is_nan() && b.is_nan() || a == b {
            continue;
        }
        let d = (a - b).abs() / (1.0 + b.abs());
        // NaN d (one side NaN) fails too.
        if d.is_nan() || d > tol {
            return Err(format!(
                "{}: element {i}: gpu {a}, cpu {b} (tol {tol})",
                c.name
            ));
        }
        worst = worst.max(d);
    }
    Ok(worst)
}

/// Modes whose result is bit-exact on the GPU (IEEE operations only).
pub const EXACT: [M; 28] = [
    M::ABS,
    M::ADD,
    M::ADD_SQUARE,
    M::BINARY_SELECT,
    M::CEIL,
    M::CMP_EQ,
    M::CMP_GE,
    M::CMP_GT,
    M::CMP_LE,
    M::CMP_LT,
    M::CMP_NEQ,
    M::DIV,
    M::FLOOR,
    M::GEN_INDEX,
    M::IDENTITY,
    M::LOGICAL_AND,
    M::LOGICAL_NOT,
    M::LOGICAL_OR,
    M::MAX_OP,
    M::MIN_OP,
    M::MUL,
    M::NEG,
    M::RECIPROCAL,
    M::RELU_BWD,
    M::RELU_FWD,
    M::RSQRT,
    M::SQRT,
    M::SUB,
];

/// bias + ReLU + scale: `y = relu(x + b) * s` with a per-channel bias `[1, C, 1, 1]`, a scalar
/// scale `[1]` and intermediates of type `mid` (3 nodes, 3 inputs).
pub fn bias_relu_scale(dt: DT, mid: DT, dims: &[i64]) -> PwCase {
    let c = dims[1];
    let tensors = vec![
        t(1, dims, dt),
        t(2, &[1, c, 1, 1], dt),
        t(3, &[1], DT::FLOAT),
        PwTensor {
            is_virtual: true,
            ..t(20, dims, mid)
        },
        PwTensor {
            is_virtual: true,
            ..t(21, dims, mid)
        },
        t(Y, dims, dt),
    ];
    PwCase {
        name: format!("bias+relu*scale {dt:?} mid {mid:?} {dims:?}"),
        tensors,
        nodes: vec![
            PwNode::new(M::ADD, &[1, 2], 20),
            PwNode::new(M::RELU_FWD, &[20], 21),
            PwNode::new(M::MUL, &[21, 3], Y),
        ],
    }
}

/// A DAG of 4 nodes over 4 inputs: `s = sigmoid(x0 * x1)`, `sel = x2 != 0 ? s : x3`,
/// `y = gelu_bwd(sel, x0 * x1)` — an intermediate read twice, a BOOLEAN-free selector.
pub fn dag4(dt: DT, dims: &[i64]) -> PwCase {
    let last = *dims.last().unwrap();
    let tensors = vec![
        t(1, dims, dt),
        t(2, &[last], dt),
        t(3, dims, DT::FLOAT),
        t(4, &[1], dt),
        PwTensor {
            is_virtual: true,
            ..t(20, dims, DT::FLOAT)
        },
        PwTensor {
            is_virtual: true,
            ..t(21, dims, dt)
        },
        PwTensor {
            is_virtual: true,
            ..t(22, dims, dt)
        },
        t(Y, dims, dt),
    ];
    PwCase {
        name: format!("dag4 {dt:?} {dims:?}"),
        tensors,
        nodes: vec![
            PwNode::new(M::MUL, &[1, 2], 20),
            PwNode::new(M::SIGMOID_FWD, &[20], 21),
            PwNode::new(M::BINARY_SELECT, &[21, 4, 3], 22),
            PwNode::new(M::GELU_BWD, &[22, 20], Y),
        ],
    }
}

/// Every mode of the op table.
pub fn all_modes() -> Vec<M> {
    POINTWISE_OPS.iter().map(|r| r.mode).collect()
}

/// The GPU test's matrix: every mode × f32/f16/bf16 over a spec shape ([8, 48]), an odd
/// broadcast 4-D shape ((3, 5, 7, 9) from (5, 1, 9) / (7, 1) / (1,)) and, for f32, a transposed
/// input; ADD/MUL over 1 and 1 003 001 elements, a 5-D broadcast, a strided output and
/// 6-D dims that merge; chains (bias + ReLU + scale with f32/f16/bf16 intermediates over
/// spec and odd shapes, the 4-node DAG).
pub fn gpu_cases() -> Vec<PwCase> {
    let mut v = Vec::new();
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for mode in all_modes() {
            v.push(PwCase::single(mode, dt, &[8, 48], &[&[8, 48]]));
            let n = arity(mode).unwrap().inputs();
            let ins: Vec<&[i64]> = [&[5, 1, 9][..], &[7, 1][..], &[1][..]][..n].to_vec();
            let mut c = PwCase::single(mode, dt, &[3, 5, 7, 9], &ins);
            if mode == M::GEN_INDEX {
                c = PwCase::single(mode, dt, &[3, 5, 7, 9], &[&[3, 5, 7, 9]]);
                c.nodes[0].axis = Some(2);
            }
            v.push(c);
        }
        let mut c = PwCase::single(M::ADD, dt, &[1], &[&[1], &[1]]);
        c.name += " one element";
        v.push(c);
        v.push(PwCase::single(
            M::MUL,
            dt,
            &[1003, 1001],
            &[&[1003, 1001], &[1001]],
        ));
        v.push(PwCase::single(
            M::ADD,
            dt,
            &[2, 3, 4, 5, 6],
            &[&[2, 1, 4, 1, 6], &[3, 1, 5, 1]],
        ));
        let mut c = PwCase::single(M::SUB, dt, &[2, 3, 5, 2, 3, 16], &[&[2, 3, 5, 2, 3, 16]]);
        c.name += " 6-D that merges";
        v.push(c);
        for mid in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
            if mid != DT::FLOAT && mid != dt && dt != DT::FLOAT {
                continue;
            }
            v.push(bias_relu_scale(dt, mid, &[2, 16, 8, 8]));
            v.push(bias_relu_scale(dt, mid, &[3, 5, 7, 3]));
        }
        v.push(dag4(dt, &[7, 33]));
    }
    // f32 only: a transposed input and a strided (padded-row) output.
    let mut c = PwCase::single(M::ADD, DT::FLOAT, &[17, 33], &[&[17, 33], &[17, 33]]);
    c.tensor_mut(1).strides = Some(vec![1, 17]);
    c.name += " transposed x0";
    v.push(c);
    let mut c = PwCase::single(M::SWISH_FWD, DT::FLOAT, &[9, 31], &[&[9, 31]]);
    c.tensor_mut(Y).strides = Some(vec![40, 1]);
    c.name += " padded output rows";
    v.push(c);
    let mut c = PwCase::single(M::CMP_LT, DT::FLOAT, &[6, 7], &[&[6, 7], &[7]]);
    c.tensor_mut(Y).dt = DT::BOOLEAN;
    c.name += " BOOLEAN output";
    v.push(c);
    v
}

/// Dense row-major strides of `dims` (re-exported for the tests).
pub fn packed(dims: &[i64]) -> Vec<i64> {
    packed_strides(dims)
}
