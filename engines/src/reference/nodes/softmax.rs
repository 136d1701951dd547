//! The fused softmax step of the CPU reference engine: not a graph node of its own but what
//! [`crate::reference::fuse`] makes of a softmax (log-softmax) pattern of reduction and
//! pointwise nodes; run by [`crate::reference::ops::softmax`].

use crate::reference::env::Env;
use crate::reference::ops::softmax::{softmax, softmax_into};
use hipdnn_backend::{PluginError, PluginResult};

/// A fused softmax step: x → y over rows of `row` elements (x's trailing axes).
#[derive(Debug, Clone)]
pub struct SoftmaxStep {
    /// Input UID (the MAX reduction's input).
    pub x: i64,
    /// Output UID (the DIV's, or for log-softmax the last SUB's, output).
    pub y: i64,
    /// Elements per row: the volume of the reduced trailing axes.
    pub row: usize,
    /// Log-softmax (`d − ln s`) instead of softmax (`e / s`).
    pub log: bool,
}

impl SoftmaxStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.y]
    }
}

/// Runs one fused softmax step on host arrays (an f32 input bound in host memory is read in
/// place).
pub fn run(
    s: &SoftmaxStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let xv = env.view(s.x)?;
    if let Some(out) = env.dense_f32_output(s.y) {
        // Written straight into the bound output buffer.
        softmax_into(&xv.view(), s.row, s.log, out);
        return Ok(());
    }
    let y = softmax(&xv.view(), s.row, s.log);
    drop(xv);
    env.put(s.y, y)
}
