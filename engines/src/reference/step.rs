//! The step vocabulary of the CPU reference engine's execution DAG: [`Op`], one node's checked
//! step (the step types live in [`super::nodes`], one file per op kind), and [`Step`], a named
//! op of the plan.
//!
//! Above the nodes and below the plan: [`super::plan`] builds steps, [`super::fuse`] rewrites
//! the step list, [`super::exec`] dispatches them; nothing here parses or runs.

use super::nodes::block_scale::{DequantizeStep, QuantizeStep};
use super::nodes::conv::{ConvDgradStep, ConvFpropStep, ConvWgradStep};
use super::nodes::gather::GatherStep;
use super::nodes::matmul::MatmulStep;
use super::nodes::norm::{
    BnInferenceStep, BnTrainingStep, LayernormStep, NormBackwardStep, RmsnormStep,
};
use super::nodes::pointwise::PointwiseStep;
use super::nodes::reduction::ReductionStep;
use super::nodes::resample::{ResampleBwdStep, ResampleStep};
use super::nodes::sdpa::{SdpaBackwardStep, SdpaStep};
use super::nodes::softmax::SoftmaxStep;

/// One op of the execution DAG, with tensor UIDs.
#[derive(Debug, Clone)]
pub enum Op {
    /// Pointwise.
    Pointwise(PointwiseStep),
    /// Convolution forward.
    ConvFprop(ConvFpropStep),
    /// Convolution data gradient.
    ConvDgrad(ConvDgradStep),
    /// Convolution filter gradient.
    ConvWgrad(ConvWgradStep),
    /// Matmul.
    Matmul(MatmulStep),
    /// Batchnorm inference.
    BnInference(BnInferenceStep),
    /// Batchnorm training forward.
    BnTraining(BnTrainingStep),
    /// Layernorm forward.
    Layernorm(LayernormStep),
    /// RMSNorm forward.
    Rmsnorm(RmsnormStep),
    /// Batchnorm, layernorm or rmsnorm backward.
    NormBackward(NormBackwardStep),
    /// Reduction.
    Reduction(ReductionStep),
    /// Resample (pooling) forward.
    Resample(ResampleStep),
    /// Resample (pooling) backward.
    ResampleBwd(ResampleBwdStep),
    /// SDPA forward.
    Sdpa(SdpaStep),
    /// SDPA backward.
    SdpaBackward(SdpaBackwardStep),
    /// Row gather (the `hipdnn_rs.gather` custom op).
    Gather(GatherStep),
    /// Block-scale quantize.
    BlockQuantize(QuantizeStep),
    /// Block-scale dequantize.
    BlockDequantize(DequantizeStep),
    /// Softmax or log-softmax over trailing axes (made by [`super::fuse`] from the nodes of
    /// the pattern, never parsed).
    Softmax(SoftmaxStep),
}

macro_rules! each_step {
    ($op:expr, $s:ident => $e:expr) => {
        match $op {
            Op::Pointwise($s) => $e,
            Op::ConvFprop($s) => $e,
            Op::ConvDgrad($s) => $e,
            Op::ConvWgrad($s) => $e,
            Op::Matmul($s) => $e,
            Op::BnInference($s) => $e,
            Op::BnTraining($s) => $e,
            Op::Layernorm($s) => $e,
            Op::Rmsnorm($s) => $e,
            Op::NormBackward($s) => $e,
            Op::Reduction($s) => $e,
            Op::Resample($s) => $e,
            Op::ResampleBwd($s) => $e,
            Op::Sdpa($s) => $e,
            Op::SdpaBackward($s) => $e,
            Op::Gather($s) => $e,
            Op::BlockQuantize($s) => $e,
            Op::BlockDequantize($s) => $e,
            Op::Softmax($s) => $e,
        }
    };
}

impl Op {
    /// UIDs this op reads.
    pub fn inputs(&self) -> Vec<i64> {
        each_step!(self, s => s.inputs())
    }

    /// UIDs this op writes.
    pub fn outputs(&self) -> Vec<i64> {
        each_step!(self, s => s.outputs())
    }
}

/// One step: the node's name and its op.
#[derive(Debug, Clone)]
pub struct Step {
    /// Node name (for messages).
    pub name: String,
    /// The op.
    pub op: Op,
}
