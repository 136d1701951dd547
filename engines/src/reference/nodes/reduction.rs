//! Reduction nodes of the CPU reference engine: parse (mode, reduced axes of 1) and run
//! ([`crate::reference::ops::reduce`]).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::reduce;
use hipdnn_backend::ops::reduction as table;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::Node;
use hipdnn_schema::graph::ReductionMode;

/// A reduction step: x → y with reduced axes of extent 1.
#[derive(Debug, Clone)]
pub struct ReductionStep {
    /// The reduction operator.
    pub mode: ReductionMode,
    /// Input UID.
    pub x: i64,
    /// Output UID.
    pub y: i64,
}

impl ReductionStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.y]
    }
}

/// Reads and checks one reduction node into a [`ReductionStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<ReductionStep> {
    let a = node
        .attributes_as_reduction_attributes()
        .expect("type checked");
    let mode = a.mode();
    if !table::is_operator(mode) {
        return Err(cx.refuse("mode", format!("{mode:?}")));
    }
    let (x, y) = (
        cx.t("in_tensor_uid", a.in_tensor_uid())?,
        cx.t("out_tensor_uid", a.out_tensor_uid())?,
    );
    if !table::output_dims_ok(&x.dims, &y.dims) {
        return Err(cx.bad(format!(
            "output dims {:?} must equal input dims {:?} except reduced axes of 1",
            y.dims, x.dims
        )));
    }
    Ok(ReductionStep {
        mode,
        x: x.uid,
        y: y.uid,
    })
}

/// Runs one reduction step on host arrays.
pub fn run(
    s: &ReductionStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let ReductionStep { mode, x, y } = s;
    let xv = env.get(*x)?;
    let dims = env.desc(*y).dims.clone();
    env.put(*y, reduce::reduce(*mode, &xv, &dims))
}
