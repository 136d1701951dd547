//! Convolution nodes (fprop, dgrad, wgrad) of the CPU reference engine: parse (spatial
//! attributes, channel groups and output extents from the op table
//! [`hipdnn_backend::ops::conv`]) and run ([`crate::reference::ops::conv`]), the fprop step
//! with its fused epilogue (set by the plan's epilogue fusion, `reference::fuse`).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::conv::{self as kernel, ConvGeometry};
use crate::reference::ops::gemm::{Bias, Epilogue};
use crate::reference::ops::pointwise::PointwiseParams;
use crate::reference::tensor::TensorDesc;
use hipdnn_backend::ops::conv::{self as table, ExtentError, Window};
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::ConvMode;
use hipdnn_schema::graph::Node;

/// A convolution forward step: x, w → y.
#[derive(Debug, Clone)]
pub struct ConvFpropStep {
    /// Input x UID.
    pub x: i64,
    /// Filter w UID.
    pub w: i64,
    /// Output y UID.
    pub y: i64,
    /// Geometry.
    pub geo: ConvGeometry,
    /// Pointwise nodes folded into the GEMM output pass (set by the plan's epilogue fusion).
    pub epilogue: Option<ConvEpilogue>,
}

/// A per-channel bias, a residual and/or a unary activation folded into a conv fprop step:
/// the step writes `out = act((conv + bias) + residual)` instead of y (each part optional, in
/// that order), and the fused nodes are not run.
#[derive(Debug, Clone)]
pub struct ConvEpilogue {
    /// Bias UID (dims `(1, K, 1…)`), added first.
    pub bias: Option<i64>,
    /// Residual UID (y's dims), added second.
    pub residual: Option<i64>,
    /// Unary pointwise activation, applied last.
    pub act: Option<PointwiseParams>,
    /// The UID written instead of y (the last fused node's output).
    pub out: i64,
}

/// A convolution data-gradient step: dy, w → dx.
#[derive(Debug, Clone)]
pub struct ConvDgradStep {
    /// Output gradient dy UID.
    pub dy: i64,
    /// Filter w UID.
    pub w: i64,
    /// Input gradient dx UID.
    pub dx: i64,
    /// Geometry.
    pub geo: ConvGeometry,
}

/// A convolution filter-gradient step: x, dy → dw.
#[derive(Debug, Clone)]
pub struct ConvWgradStep {
    /// Input x UID.
    pub x: i64,
    /// Output gradient dy UID.
    pub dy: i64,
    /// Filter gradient dw UID.
    pub dw: i64,
    /// Geometry.
    pub geo: ConvGeometry,
}

impl ConvFpropStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![self.x, self.w];
        if let Some(e) = &self.epilogue {
            v.extend(e.bias);
            v.extend(e.residual);
        }
        v
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.epilogue.as_ref().map_or(self.y, |e| e.out)]
    }
}

impl ConvDgradStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.dy, self.w]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.dx]
    }
}

impl ConvWgradStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x, self.dy]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.dw]
    }
}

fn conv_geo(
    cx: &Cx<'_>,
    spatial: usize,
    pre: Option<flatbuffers::Vector<'_, i64>>,
    post: Option<flatbuffers::Vector<'_, i64>>,
    stride: Option<flatbuffers::Vector<'_, i64>>,
    dil: Option<flatbuffers::Vector<'_, i64>>,
    mode: ConvMode,
) -> PluginResult<ConvGeometry> {
    let flip = match mode {
        ConvMode::CONVOLUTION => true,
        ConvMode::CROSS_CORRELATION | ConvMode::UNSET => false,
        m => return Err(cx.refuse("conv_mode", format!("{m:?}"))),
    };
    Ok(ConvGeometry {
        pre: cx.spatial(table::SpatialAttr::PrePadding, pre, spatial)?,
        post: cx.spatial(table::SpatialAttr::PostPadding, post, spatial)?,
        stride: cx.spatial(table::SpatialAttr::Stride, stride, spatial)?,
        dilation: cx.spatial(table::SpatialAttr::Dilation, dil, spatial)?,
        flip,
    })
}

/// Checks x `(N, C, in…)`, w `(K, C/g, f…)`, y `(N, K, out…)` of a convolution: rank 3 to 5,
/// channel groups and output extents by the op table.
fn conv_shapes(
    cx: &Cx<'_>,
    x: &TensorDesc,
    w: &TensorDesc,
    y: &TensorDesc,
    geo: &ConvGeometry,
) -> PluginResult<()> {
    let r = x.dims.len();
    if !(3..=5).contains(&r) || w.dims.len() != r || y.dims.len() != r {
        return Err(cx.refuse(
            "tensor rank",
            format!(
                "{r} (x {:?}, w {:?}, y {:?}); 3 to 5 dims are supported",
                x.dims, w.dims, y.dims
            ),
        ));
    }
    let (c, cg, k) = (x.dims[1], w.dims[1], w.dims[0]);
    if table::groups(c as i64, cg as i64, k as i64).is_none() {
        return Err(cx.bad(format!(
            "channels do not form groups: x C {c}, w C/groups {cg}, K {k}"
        )));
    }
    let mut want = vec![x.dims[0], k];
    for d in 0..r - 2 {
        let o = table::output_extent(
            x.dims[d + 2] as i64,
            w.dims[d + 2] as i64,
            Window {
                pre: geo.pre[d] as i64,
                post: geo.post[d] as i64,
                stride: geo.stride[d] as i64,
                dilation: geo.dilation[d] as i64,
            },
        )
        .map_err(|e| match e {
            ExtentError::NonPositive(_) => cx.bad(format!(
                "filter {:?} does not fit input {:?} with this padding",
                w.dims, x.dims
            )),
            e => cx.bad(format!(
                "filter {:?} and input {:?}: output extent: {e}",
                w.dims, x.dims
            )),
        })?;
        want.push(o as usize);
    }
    if y.dims != want {
        return Err(cx.bad(format!(
            "output dims {:?} differ from the expected {want:?}",
            y.dims
        )));
    }
    Ok(())
}

/// Reads and checks one conv_fprop node into a [`ConvFpropStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_fprop(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<ConvFpropStep> {
    let a = node
        .attributes_as_convolution_fwd_attributes()
        .expect("type checked");
    let (x, w, y) = (
        cx.float("x_tensor_uid", a.x_tensor_uid())?,
        cx.float("w_tensor_uid", a.w_tensor_uid())?,
        cx.float("y_tensor_uid", a.y_tensor_uid())?,
    );
    let geo = conv_geo(
        cx,
        x.dims.len().saturating_sub(2),
        a.pre_padding(),
        a.post_padding(),
        a.stride(),
        a.dilation(),
        a.conv_mode(),
    )?;
    conv_shapes(cx, x, w, y, &geo)?;
    Ok(ConvFpropStep {
        x: x.uid,
        w: w.uid,
        y: y.uid,
        geo,
        epilogue: None,
    })
}

/// Reads and checks one conv_dgrad node into a [`ConvDgradStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_dgrad(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<ConvDgradStep> {
    let a = node
        .attributes_as_convolution_bwd_attributes()
        .expect("type checked");
    let (dy, w, dx) = (
        cx.float("dy_tensor_uid", a.dy_tensor_uid())?,
        cx.float("w_tensor_uid", a.w_tensor_uid())?,
        cx.float("dx_tensor_uid", a.dx_tensor_uid())?,
    );
    let geo = conv_geo(
        cx,
        dx.dims.len().saturating_sub(2),
        a.pre_padding(),
        a.post_padding(),
        a.stride(),
        a.dilation(),
        a.conv_mode(),
    )?;
    conv_shapes(cx, dx, w, dy, &geo)?;
    Ok(ConvDgradStep {
        dy: dy.uid,
        w: w.uid,
        dx: dx.uid,
        geo,
    })
}

/// Reads and checks one conv_wgrad node into a [`ConvWgradStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_wgrad(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<ConvWgradStep> {
    let a = node
        .attributes_as_convolution_wrw_attributes()
        .expect("type checked");
    let (x, dy, dw) = (
        cx.float("x_tensor_uid", a.x_tensor_uid())?,
        cx.float("dy_tensor_uid", a.dy_tensor_uid())?,
        cx.float("dw_tensor_uid", a.dw_tensor_uid())?,
    );
    let geo = conv_geo(
        cx,
        x.dims.len().saturating_sub(2),
        a.pre_padding(),
        a.post_padding(),
        a.stride(),
        a.dilation(),
        a.conv_mode(),
    )?;
    conv_shapes(cx, x, dw, dy, &geo)?;
    Ok(ConvWgradStep {
        x: x.uid,
        dy: dy.uid,
        dw: dw.uid,
        geo,
    })
}

/// Runs one conv_fprop step on host arrays.
pub fn run_fprop(
    s: &ConvFpropStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let ConvFpropStep {
        x,
        w,
        y,
        geo,
        epilogue,
    } = s;
    // In place when bound as aligned f32 host inputs: weights are neither converted nor copied.
    let (xv, wv) = (env.view(*x)?, env.view(*w)?);
    let dims = env.desc(*y).dims.clone();
    let Some(ep) = epilogue else {
        let r = kernel::conv_fprop_views(xv.view(), wv.view(), None, &dims, geo, &Epilogue::NONE);
        return env.put(*y, r);
    };
    let bias: Option<Vec<f32>> = match ep.bias {
        Some(b) => Some(env.get(b)?.iter().copied().collect()),
        None => None,
    };
    let res = match ep.residual {
        Some(u) => Some(env.view(u)?),
        None => None,
    };
    let epi = Epilogue {
        bias: bias.as_deref().map_or(Bias::None, Bias::PerRow),
        act: ep.act,
    };
    let res = res.as_ref().map(|v| v.view());
    let r = kernel::conv_fprop_views(xv.view(), wv.view(), res, &dims, geo, &epi);
    env.put(ep.out, r)
}

/// Runs one conv_dgrad step on host arrays.
pub fn run_dgrad(
    s: &ConvDgradStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let ConvDgradStep { dy, w, dx, geo } = s;
    let (dyv, wv) = (env.get(*dy)?, env.get(*w)?);
    let dims = env.desc(*dx).dims.clone();
    env.put(*dx, kernel::conv_dgrad(&dyv, &wv, &dims, geo))
}

/// Runs one conv_wgrad step on host arrays.
pub fn run_wgrad(
    s: &ConvWgradStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let ConvWgradStep { x, dy, dw, geo } = s;
    let (xv, dyv) = (env.get(*x)?, env.get(*dy)?);
    let dims = env.desc(*dw).dims.clone();
    env.put(*dw, kernel::conv_wgrad(&xv, &dyv, &dims, geo))
}
