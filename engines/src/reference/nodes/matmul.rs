//! Matmul nodes of the CPU reference engine: parse (inner dims, batch broadcast from the op
//! table [`hipdnn_backend::ops::broadcast`]) and run ([`crate::reference::ops::matmul`]), with
//! the epilogue the plan's fusion (`reference::fuse`) folds into the step.

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::gemm::{Bias, Epilogue};
use crate::reference::ops::matmul as kernel;
use crate::reference::ops::pointwise::PointwiseParams;
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
    /// Pointwise nodes folded into the GEMM output pass (set by the plan's epilogue fusion).
    pub epilogue: Option<MatmulEpilogue>,
}

/// Pointwise nodes folded into a matmul step: the step writes `out = act((c + bias) +
/// residual)` instead of c (each part optional, in that order), and the fused nodes are not
/// run.
#[derive(Debug, Clone)]
pub struct MatmulEpilogue {
    /// Bias UID (dims 1 except the last, which is N), added first.
    pub bias: Option<i64>,
    /// Residual UID (broadcasts to c's dims), added second.
    pub residual: Option<i64>,
    /// Unary pointwise activation, applied last.
    pub act: Option<PointwiseParams>,
    /// The UID written instead of c (the last fused node's output).
    pub out: i64,
}

impl MatmulStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![self.a, self.b];
        if let Some(e) = &self.epilogue {
            v.extend(e.bias);
            v.extend(e.residual);
        }
        v
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.epilogue.as_ref().map_or(self.c, |e| e.out)]
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
        epilogue: None,
    })
}

/// Runs one matmul step on host arrays.
pub fn run(
    s: &MatmulStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let MatmulStep { a, b, c, epilogue } = s;
    // In place when bound as f32 host inputs: weights are neither converted nor copied.
    let (av, bv) = (env.view(*a)?, env.view(*b)?);
    let dims = env.desc(*c).dims.clone();
    // Without an epilogue the step writes c itself, with nothing fused.
    let (out_uid, bias, residual, act) = match epilogue {
        Some(ep) => (ep.out, ep.bias, ep.residual, ep.act),
        None => (*c, None, None, None),
    };
    // The fusion admits only biases whose dims are 1 but the last (N): their N values in order.
    let bias: Option<Vec<f32>> = match bias {
        Some(u) => Some(env.view(u)?.view().iter().copied().collect()),
        None => None,
    };
    let res = match residual {
        Some(u) => Some(env.view(u)?),
        None => None,
    };
    let epi = Epilogue {
        bias: bias.as_deref().map_or(Bias::None, Bias::PerCol),
        act,
    };
    let rv = res.as_ref().map(|v| v.view());
    if let Some(out) = env.dense_f32_output(out_uid) {
        // Written straight into the bound output buffer.
        return kernel::matmul_into(av.view(), bv.view(), rv, &dims, &epi, out).map_err(e);
    }
    let r = kernel::matmul_views_res(av.view(), bv.view(), rv, &dims, &epi).map_err(e)?;
    env.put(out_uid, r)
}
