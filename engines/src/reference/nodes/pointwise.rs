//! Pointwise nodes of the CPU reference engine: parse (arity and `GEN_INDEX` axis from the op
//! table [`hipdnn_backend::ops::pointwise`], numpy broadcast of every input to the output) and
//! run ([`crate::reference::ops::pointwise`]).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::pointwise::{self as kernel, PointwiseParams};
use hipdnn_backend::ops::pointwise::{self as table, Arity};
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::Node;
use ndarray::ArrayD;

/// A pointwise step: mode parameters, 1–3 input UIDs, the output UID.
#[derive(Debug, Clone)]
pub struct PointwiseStep {
    /// Mode and its attributes.
    pub p: PointwiseParams,
    /// Input UIDs (as many as the mode's arity).
    pub ins: Vec<i64>,
    /// Output UID.
    pub out: i64,
}

impl PointwiseStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        self.ins.clone()
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.out]
    }
}

/// Reads and checks one pointwise node into a [`PointwiseStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<PointwiseStep> {
    let a = node
        .attributes_as_pointwise_attributes()
        .expect("type checked");
    let mode = a.operation();
    let n = table::arity(mode)
        .map(Arity::inputs)
        .ok_or_else(|| cx.refuse("operation", format!("{mode:?}")))?;
    let mut ins = vec![a.in_0_tensor_uid()];
    for (i, u) in [a.in_1_tensor_uid(), a.in_2_tensor_uid()]
        .into_iter()
        .enumerate()
        .take(n - 1)
    {
        ins.push(
            u.ok_or_else(|| cx.bad(format!("operation {mode:?} needs in_{}_tensor_uid", i + 1)))?,
        );
    }
    let out = cx.t("out_0_tensor_uid", a.out_0_tensor_uid())?;
    for (i, u) in ins.iter().enumerate() {
        cx.bcast(
            &format!("in_{i}_tensor_uid"),
            cx.t(&format!("in_{i}_tensor_uid"), *u)?,
            &out.dims,
        )?;
    }
    let axis = a.axis_tensor_uid().unwrap_or(0);
    if mode == hipdnn_schema::graph::PointwiseMode::GEN_INDEX
        && !table::gen_index_axis_ok(axis, out.dims.len())
    {
        return Err(cx.refuse("axis", axis));
    }
    let p = PointwiseParams {
        mode,
        lower_clip: a.relu_lower_clip().unwrap_or(0.0),
        upper_clip: a.relu_upper_clip().unwrap_or(f32::MAX),
        lower_slope: a.relu_lower_clip_slope().unwrap_or(0.0),
        swish_beta: a.swish_beta().unwrap_or(1.0),
        elu_alpha: a.elu_alpha().unwrap_or(1.0),
        softplus_beta: a.softplus_beta().unwrap_or(1.0),
        axis: axis.max(0) as usize,
    };
    Ok(PointwiseStep {
        p,
        ins,
        out: a.out_0_tensor_uid(),
    })
}

/// Runs one pointwise step on host arrays.
pub fn run(
    s: &PointwiseStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let PointwiseStep { p, ins, out } = s;
    let vals = ins
        .iter()
        .map(|&u| env.get(u))
        .collect::<PluginResult<Vec<_>>>()?;
    let refs: Vec<&ArrayD<f32>> = vals.iter().map(|v| &**v).collect();
    let dims = env.desc(*out).dims.clone();
    let r = kernel::pointwise(p, &refs, &dims).map_err(e)?;
    env.put(*out, r)
}
