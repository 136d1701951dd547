//! Resample forward (pooling) nodes of the CPU reference engine: parse (spatial attributes and
//! output extents from the op table [`hipdnn_backend::ops::resample`]) and run
//! ([`crate::reference::ops::resample`]).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::resample::{self as kernel, PoolGeometry, PoolKind};
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
