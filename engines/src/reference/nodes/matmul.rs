//! Matmul nodes of the CPU reference engine: parse (inner dims, batch broadcast from the op
//! table [`hipdnn_backend::ops::broadcast`]) and run ([`crate::reference::ops::matmul`]).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::gemm::Epilogue;
use crate::reference::ops::matmul as kernel;
use hipdnn_backend::ops::broadcast::broadcasts_to;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::Node;

/// A matmul step: a · b → c.
#[derive(Debug, Clone)]
pub struct MatmulStep {
    /// a UID.
    pub a: i64,
    /// b UID.
    pub b: i64,
    /// c UID.
    pub c: i64,
}

impl MatmulStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.a, self.b]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.c]
    }
}

/// Reads and checks one matmul node into a [`MatmulStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<MatmulStep> {
    let a = node
        .attributes_as_matmul_attributes()
        .expect("type checked");
    let (ta, tb, tc) = (
        cx.float("a_tensor_uid", a.a_tensor_uid())?,
        cx.float("b_tensor_uid", a.b_tensor_uid())?,
        cx.float("c_tensor_uid", a.c_tensor_uid())?,
    );
    let (ra, rb, rc) = (ta.dims.len(), tb.dims.len(), tc.dims.len());
    if ra < 2 || rb < 2 || rc < 2 {
        return Err(cx.bad("a, b and c need at least 2 dims"));
    }
    let (m, k, n) = (ta.dims[ra - 2], ta.dims[ra - 1], tb.dims[rb - 1]);
    if tb.dims[rb - 2] != k || tc.dims[rc - 2] != m || tc.dims[rc - 1] != n {
        return Err(cx.bad(format!(
            "dims do not agree: a {:?}, b {:?}, c {:?}",
            ta.dims, tb.dims, tc.dims
        )));
    }
    let cb = &tc.dims[..rc - 2];
    if !broadcasts_to(&ta.dims[..ra - 2], cb) || !broadcasts_to(&tb.dims[..rb - 2], cb) {
        return Err(cx.bad(format!(
            "batch dims of a {:?} and b {:?} do not broadcast to c {:?}",
            ta.dims, tb.dims, tc.dims
        )));
    }
    Ok(MatmulStep {
        a: ta.uid,
        b: tb.uid,
        c: tc.uid,
    })
}

/// Runs one matmul step on host arrays.
pub fn run(
    s: &MatmulStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let MatmulStep { a, b, c } = s;
    // In place when bound as f32 host inputs: weights are neither converted nor copied.
    let (av, bv) = (env.view(*a)?, env.view(*b)?);
    let dims = &env.desc(*c).dims;
    let r = kernel::matmul_views(av.view(), bv.view(), dims, &Epilogue::NONE).map_err(e)?;
    env.put(*c, r)
}
