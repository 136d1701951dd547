//! Pointwise op facts: the arity of every `PointwiseMode` and which modes are backward forms
//! (schema `graph.fbs` `PointwiseMode`; operand order as cuDNN/hipDNN: a backward mode reads
//! `in_0` = dy and `in_1` = the forward input x; `BINARY_SELECT` reads `in_2` as the selector).
//!
//! Users: SDK validation (`mode X takes N input(s)`), the CPU reference engine (which inputs a
//! node must name), the GPU pointwise packs (unary/binary launch forms). Output shape rule:
//! the output has the broadcast shape of the inputs ([`super::broadcast`]); `GEN_INDEX` writes
//! each element's index along its `axis`, which must name a dim of the output
//! ([`gen_index_axis_ok`]).

use hipdnn_schema::graph::PointwiseMode as M;

/// How many inputs a pointwise mode reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arity {
    /// One input (`in_0`).
    Unary,
    /// Two inputs (`in_0`, `in_1`); for backward modes `in_0` is dy, `in_1` the forward x.
    Binary,
    /// Three inputs (`in_0`, `in_1`, `in_2`): only `BINARY_SELECT` (`in_2 != 0 ? in_0 : in_1`).
    Ternary,
}

impl Arity {
    /// The number of inputs: 1, 2 or 3.
    pub const fn inputs(self) -> usize {
        match self {
            Arity::Unary => 1,
            Arity::Binary => 2,
            Arity::Ternary => 3,
        }
    }
}

/// One row of the pointwise table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointwiseOp {
    /// The schema mode.
    pub mode: M,
    /// Inputs the mode reads.
    pub arity: Arity,
    /// True for the `*_BWD` modes (binary: dy and the forward input).
    pub backward: bool,
}

const fn row(mode: M, arity: Arity, backward: bool) -> PointwiseOp {
    PointwiseOp {
        mode,
        arity,
        backward,
    }
}

use Arity::{Binary as B, Ternary as T, Unary as U};

/// Every mode with a meaning, in schema order (`UNSET` has none and is absent).
pub const POINTWISE_OPS: [PointwiseOp; 47] = [
    row(M::ABS, U, false),
    row(M::ADD, B, false),
    row(M::ADD_SQUARE, B, false),
    row(M::BINARY_SELECT, T, false),
    row(M::CEIL, U, false),
    row(M::CMP_EQ, B, false),
    row(M::CMP_GE, B, false),
    row(M::CMP_GT, B, false),
    row(M::CMP_LE, B, false),
    row(M::CMP_LT, B, false),
    row(M::CMP_NEQ, B, false),
    row(M::DIV, B, false),
    row(M::ELU_BWD, B, true),
    row(M::ELU_FWD, U, false),
    row(M::ERF, U, false),
    row(M::EXP, U, false),
    row(M::FLOOR, U, false),
    row(M::GELU_APPROX_TANH_BWD, B, true),
    row(M::GELU_APPROX_TANH_FWD, U, false),
    row(M::GELU_BWD, B, true),
    row(M::GELU_FWD, U, false),
    row(M::GEN_INDEX, U, false),
    row(M::IDENTITY, U, false),
    row(M::LOG, U, false),
    row(M::LOGICAL_AND, B, false),
    row(M::LOGICAL_NOT, U, false),
    row(M::LOGICAL_OR, B, false),
    row(M::MAX_OP, B, false),
    row(M::MIN_OP, B, false),
    row(M::MUL, B, false),
    row(M::NEG, U, false),
    row(M::RECIPROCAL, U, false),
    row(M::RELU_BWD, B, true),
    row(M::RELU_FWD, U, false),
    row(M::RSQRT, U, false),
    row(M::SIGMOID_BWD, B, true),
    row(M::SIGMOID_FWD, U, false),
    row(M::SIN, U, false),
    row(M::SOFTPLUS_BWD, B, true),
    row(M::SOFTPLUS_FWD, U, false),
    row(M::SQRT, U, false),
    row(M::SUB, B, false),
    row(M::SWISH_BWD, B, true),
    row(M::SWISH_FWD, U, false),
    row(M::TAN, U, false),
    row(M::TANH_BWD, B, true),
    row(M::TANH_FWD, U, false),
];

/// The table row of `mode`; `None` for `UNSET` and numbers the schema does not name.
pub fn op(mode: M) -> Option<&'static PointwiseOp> {
    POINTWISE_OPS.iter().find(|r| r.mode == mode)
}

/// The arity of `mode`; `None` for `UNSET` and numbers the schema does not name.
pub fn arity(mode: M) -> Option<Arity> {
    op(mode).map(|r| r.arity)
}

/// Whether `mode` is a backward form (`*_BWD`: binary, `in_0` = dy, `in_1` = forward x).
pub fn is_backward(mode: M) -> bool {
    op(mode).is_some_and(|r| r.backward)
}

/// Whether a `GEN_INDEX` `axis` names a dim of an output of `rank` dims (`0 <= axis < rank`).
pub fn gen_index_axis_ok(axis: i64, rank: usize) -> bool {
    usize::try_from(axis).is_ok_and(|a| a < rank)
}
