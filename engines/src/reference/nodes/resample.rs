//! Resample (pooling) nodes of the CPU reference engine, forward and backward: parse (spatial
//! attributes and output extents from the op table [`hipdnn_backend::ops::resample`]) and run
//! ([`crate::reference::ops::resample`]).

use crate::reference::check::Cx;
use crate::reference::dtype::Elem;
use crate::reference::env::Env;
use crate::reference::ops::resample::{self as kernel, PoolGeometry, PoolGrad, PoolKind};
use hipdnn_backend::ops::conv::{ExtentError, SpatialAttr};
use hipdnn_backend::ops::resample as table;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::Node;
use hipdnn_schema::graph::{PaddingMode, ResampleMode};

/// A pooling step: x → y (and the max-pool index).
#[derive(Debug, Clone)]
pub struct ResampleStep {
    /// Input UID.
    pub x: i64,
    /// Output UID.
    pub y: i64,
    /// Max-pool index output UID.
    pub index: Option<i64>,
    /// Pooling kind.
    pub kind: PoolKind,
    /// Window geometry.
    pub geo: PoolGeometry,
}

impl ResampleStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![self.y];
        v.extend(self.index);
        v
    }
}

/// Reads and checks one resample node into a [`ResampleStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<ResampleStep> {
    let a = node
        .attributes_as_resample_fwd_attributes()
        .expect("type checked");
    let x = cx.float("x_tensor_uid", a.x_tensor_uid())?;
    let y = cx.float("y_tensor_uid", a.y_tensor_uid())?;
    let r = x.dims.len();
    if !(3..=5).contains(&r) || y.dims.len() != r {
        return Err(cx.refuse("tensor rank", r));
    }
    let sp = r - 2;
    let geo = PoolGeometry {
        window: cx.spatial(SpatialAttr::Window, a.window(), sp)?,
        stride: cx.spatial(SpatialAttr::Stride, a.stride(), sp)?,
        pre: cx.spatial(SpatialAttr::PrePadding, a.pre_padding(), sp)?,
        post: cx.spatial(SpatialAttr::PostPadding, a.post_padding(), sp)?,
    };
    let kind = match a.resample_mode() {
        ResampleMode::MAXPOOL => PoolKind::Max {
            zero_pad: a.padding_mode() == PaddingMode::ZERO_PAD,
        },
        ResampleMode::AVGPOOL_EXCLUDE_PADDING => PoolKind::AvgExcludePadding,
        ResampleMode::AVGPOOL_INCLUDE_PADDING => PoolKind::AvgIncludePadding,
        m => return Err(cx.refuse("resample_mode", format!("{m:?}"))),
    };
    let mut want = vec![x.dims[0], x.dims[1]];
    for d in 0..sp {
        want.push(
            table::output_extent(
                x.dims[d + 2] as i64,
                geo.window[d] as i64,
                geo.pre[d] as i64,
                geo.post[d] as i64,
                geo.stride[d] as i64,
            )
            .map(|o| o as usize)
            .map_err(|e| match e {
                ExtentError::NonPositive(_) => cx.bad("window does not fit the padded input"),
                e => cx.bad(format!("window does not fit the padded input: {e}")),
            })?,
        );
    }
    cx.dims_eq("y_tensor_uid", y, &want)?;
    let index = cx.opt("index_tensor_uid", a.index_tensor_uid())?;
    if a.generate_index() == Some(true) && index.is_none() {
        return Err(cx.bad("generate_index is set but index_tensor_uid is absent"));
    }
    if let Some(u) = index {
        if !matches!(kind, PoolKind::Max { .. }) {
            return Err(cx.refuse(
                "index_tensor_uid with resample_mode",
                format!("{:?}", a.resample_mode()),
            ));
        }
        cx.dims_eq("index_tensor_uid", &cx.tensors[&u], &want)?;
    }
    Ok(ResampleStep {
        x: x.uid,
        y: y.uid,
        index,
        kind,
        geo,
    })
}

/// Runs one resample step on host arrays.
pub fn run(
    s: &ResampleStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let ResampleStep {
        x,
        y,
        index,
        kind,
        geo,
    } = s;
    let xv = env.get(*x)?;
    let dims = env.desc(*y).dims.clone();
    let (yv, iv) = kernel::pool_with(&xv, &dims, *kind, geo, index.is_some());
    env.put(*y, yv)?;
    if let (Some(u), Some(iv)) = (index, iv) {
        env.put(*u, iv)?;
    }
    Ok(())
}

/// What a pooling backward step routes dy through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwdKind {
    /// MAXPOOL: through the forward's index tensor (UID; dims of dy).
    Max {
        /// Max-pool index UID.
        index: i64,
    },
    /// AVGPOOL_INCLUDE_PADDING (÷ window volume).
    AvgIncludePadding,
    /// AVGPOOL_EXCLUDE_PADDING (÷ in-bounds count).
    AvgExcludePadding,
}

/// A pooling backward step: dy (and the forward's max-pool index) → dx.
#[derive(Debug, Clone)]
pub struct ResampleBwdStep {
    /// Output-gradient UID, `(N, C, out…)`.
    pub dy: i64,
    /// Input-gradient UID, `(N, C, in…)`.
    pub dx: i64,
    /// Pooling kind of the forward, with the max-pool index.
    pub kind: BwdKind,
    /// Window geometry.
    pub geo: PoolGeometry,
}

impl ResampleBwdStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        match self.kind {
            BwdKind::Max { index } => vec![self.dy, index],
            _ => vec![self.dy],
        }
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.dx]
    }
}

/// Reads and checks one resample backward node into a [`ResampleBwdStep`]: dy `(N, C, out…)`
/// and dx `(N, C, in…)` float tensors of rank 3 to 5 with `out` the forward's output extents
/// of `in` ([`table::output_extent`]); MAXPOOL with an integer (INT32 or INT64)
/// index of dy's dims, AVGPOOL_INCLUDE_PADDING / AVGPOOL_EXCLUDE_PADDING without one.
/// `padding_mode` is not read (it does not change a gradient: the index says where the
/// maximum was, padding takes no gradient).
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value: a non-float dy / dx, a rank outside 3..=5,
/// dims that do not match the geometry, a spatial attribute out of the op table's range, any
/// other `resample_mode`, MAXPOOL without `index_tensor_uid` (the node carries no x to find
/// the maxima in), an index with average pooling, an index that is not an integer tensor.
pub fn parse_bwd(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<ResampleBwdStep> {
    let a = node
        .attributes_as_resample_bwd_attributes()
        .expect("type checked");
    let dy = cx.float("dy_tensor_uid", a.dy_tensor_uid())?;
    let dx = cx.float("dx_tensor_uid", a.dx_tensor_uid())?;
    let r = dx.dims.len();
    if !(3..=5).contains(&r) || dy.dims.len() != r {
        return Err(cx.refuse("tensor rank", r));
    }
    let sp = r - 2;
    let geo = PoolGeometry {
        window: cx.spatial(SpatialAttr::Window, a.window(), sp)?,
        stride: cx.spatial(SpatialAttr::Stride, a.stride(), sp)?,
        pre: cx.spatial(SpatialAttr::PrePadding, a.pre_padding(), sp)?,
        post: cx.spatial(SpatialAttr::PostPadding, a.post_padding(), sp)?,
    };
    let mode = a.resample_mode();
    if !matches!(
        mode,
        ResampleMode::MAXPOOL
            | ResampleMode::AVGPOOL_INCLUDE_PADDING
            | ResampleMode::AVGPOOL_EXCLUDE_PADDING
    ) {
        return Err(cx.refuse("resample_mode", format!("{mode:?}")));
    }
    let mut want = vec![dx.dims[0], dx.dims[1]];
    for d in 0..sp {
        want.push(
            table::output_extent(
                dx.dims[d + 2] as i64,
                geo.window[d] as i64,
                geo.pre[d] as i64,
                geo.post[d] as i64,
                geo.stride[d] as i64,
            )
            .map(|o| o as usize)
            .map_err(|e| match e {
                ExtentError::NonPositive(_) => cx.bad("window does not fit the padded dx"),
                e => cx.bad(format!("window does not fit the padded dx: {e}")),
            })?,
        );
    }
    cx.dims_eq("dy_tensor_uid", dy, &want)?;
    let index = cx.opt("index_tensor_uid", a.index_tensor_uid())?;
    let kind = match (mode, index) {
        (ResampleMode::MAXPOOL, None) => {
            return Err(cx.bad(
                "resample_mode MAXPOOL without index_tensor_uid is not supported by the CPU \
                 reference engine (the node carries no x to find the maxima in)",
            ));
        }
        (ResampleMode::MAXPOOL, Some(u)) => {
            let t = &cx.tensors[&u];
            if !matches!(t.elem, Elem::I32 | Elem::I64) {
                return Err(cx.refuse(
                    &format!("index_tensor_uid (uid {u}) data_type"),
                    format!("{:?}", t.elem),
                ));
            }
            cx.dims_eq("index_tensor_uid", t, &want)?;
            BwdKind::Max { index: u }
        }
        (m, Some(_)) => {
            return Err(cx.refuse("index_tensor_uid with resample_mode", format!("{m:?}")));
        }
        (ResampleMode::AVGPOOL_INCLUDE_PADDING, None) => BwdKind::AvgIncludePadding,
        (_, None) => BwdKind::AvgExcludePadding,
    };
    Ok(ResampleBwdStep {
        dy: dy.uid,
        dx: dx.uid,
        kind,
        geo,
    })
}

/// Runs one resample backward step on host arrays.
///
/// # Errors
/// As [`Env::get`]; `BAD_PARAM` (through `e`, naming the node) when an index element is not a
/// position inside the window (negative or at least the window volume).
pub fn run_bwd(
    s: &ResampleBwdStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let dyv = env.get(s.dy)?;
    let dims = env.desc(s.dx).dims.clone();
    let dx = match s.kind {
        BwdKind::Max { index: u } => {
            let ints = env.get_ints(u)?;
            let wvol = kernel::window_volume(&s.geo);
            let idx = kernel::window_positions(&ints, wvol).map_err(|i| {
                e(format!(
                    "index_tensor_uid {u}: element {i} is {}, not a position inside the window \
                     of {wvol} positions",
                    ints[i]
                ))
            })?;
            kernel::pool_backward(&dyv, &dims, PoolGrad::Max(&idx), &s.geo)
        }
        BwdKind::AvgIncludePadding => {
            kernel::pool_backward(&dyv, &dims, PoolGrad::AvgIncludePadding, &s.geo)
        }
        BwdKind::AvgExcludePadding => {
            kernel::pool_backward(&dyv, &dims, PoolGrad::AvgExcludePadding, &s.geo)
        }
    };
    env.put(s.dx, dx)
}
