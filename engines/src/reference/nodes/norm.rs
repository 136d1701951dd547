//! Normalization nodes of the CPU reference engine — batchnorm inference, batchnorm training
//! forward, layernorm, rmsnorm, and the backward of batchnorm, layernorm and rmsnorm (one
//! step type, [`NormBackwardStep`]): parse (operand broadcast, statistics shapes) and run
//! ([`crate::reference::ops::norm`]).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::env::reshape;
use crate::reference::ops::norm;
use hipdnn_backend::ops::norm::channel_stats_dims;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::{Node, NodeAttributes as NA};
use ndarray::ArrayD;
use std::sync::Arc;

/// Batchnorm-inference statistics form.
#[derive(Debug, Clone, Copy)]
pub enum BnStats {
    /// `inv_variance` tensor.
    InvVariance(i64),
    /// `variance` tensor and epsilon.
    Variance(i64, i64),
}

/// A batchnorm inference step.
#[derive(Debug, Clone)]
pub struct BnInferenceStep {
    /// Input UID.
    pub x: i64,
    /// Mean UID.
    pub mean: i64,
    /// Inverse-variance or variance form.
    pub stats: BnStats,
    /// Scale UID.
    pub scale: i64,
    /// Bias UID.
    pub bias: i64,
    /// Output UID.
    pub y: i64,
}

impl BnInferenceStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![self.x, self.mean, self.scale, self.bias];
        match self.stats {
            BnStats::InvVariance(i) => v.push(i),
            BnStats::Variance(a, e) => v.extend([a, e]),
        }
        v
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.y]
    }
}

/// A batchnorm training-forward step.
#[derive(Debug, Clone)]
pub struct BnTrainingStep {
    /// Input UID.
    pub x: i64,
    /// Scale UID.
    pub scale: i64,
    /// Bias UID.
    pub bias: i64,
    /// Epsilon UID.
    pub eps: i64,
    /// Output UID.
    pub y: i64,
    /// Saved mean UID.
    pub mean: Option<i64>,
    /// Saved inverse variance UID.
    pub inv_var: Option<i64>,
    /// prev running mean, prev running variance, momentum, next running mean, next running
    /// variance UIDs.
    pub running: Option<(i64, i64, i64, i64, i64)>,
}

impl BnTrainingStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![self.x, self.scale, self.bias, self.eps];
        if let Some((pm, pv, m, _, _)) = self.running {
            v.extend([pm, pv, m]);
        }
        v
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![self.y];
        v.extend(self.mean.iter().chain(&self.inv_var));
        if let Some((_, _, _, nm, nv)) = self.running {
            v.extend([nm, nv]);
        }
        v
    }
}

/// A layernorm forward step.
#[derive(Debug, Clone)]
pub struct LayernormStep {
    /// Input UID.
    pub x: i64,
    /// Scale UID.
    pub scale: i64,
    /// Bias UID.
    pub bias: i64,
    /// Epsilon UID.
    pub eps: i64,
    /// Output UID.
    pub y: i64,
    /// Statistics dims (x dims with normalized axes set to 1).
    pub stat_dims: Vec<usize>,
    /// Saved mean UID.
    pub mean: Option<i64>,
    /// Saved inverse variance UID.
    pub inv_var: Option<i64>,
}

impl LayernormStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x, self.scale, self.bias, self.eps]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![self.y];
        v.extend(self.mean.iter().chain(&self.inv_var));
        v
    }
}

/// An RMSNorm forward step.
#[derive(Debug, Clone)]
pub struct RmsnormStep {
    /// Input UID.
    pub x: i64,
    /// Scale UID.
    pub scale: i64,
    /// Bias UID.
    pub bias: Option<i64>,
    /// Epsilon UID.
    pub eps: i64,
    /// Output UID.
    pub y: i64,
    /// Statistics dims.
    pub stat_dims: Vec<usize>,
    /// Saved inverse RMS UID.
    pub inv_rms: Option<i64>,
}

impl RmsnormStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![self.x, self.scale, self.eps];
        v.extend(self.bias);
        v
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![self.y];
        v.extend(self.inv_rms);
        v
    }
}

/// Normalized-axes rule shared by layernorm (when `normalized_dim_count` is 0) and rmsnorm:
/// axes from the first axis ≥ 1 where the scale dim is not 1 to the last; all of 1.. when the
/// scale is all ones. Returns the statistics dims (x dims with normalized axes set to 1).
pub fn stat_dims_from_scale(x: &[usize], scale: &[usize]) -> Vec<usize> {
    let off = x.len().saturating_sub(scale.len());
    let first = (1..x.len())
        .find(|&i| i >= off && scale[i - off] != 1)
        .unwrap_or(1);
    x.iter()
        .enumerate()
        .map(|(i, &d)| if i >= first { 1 } else { d })
        .collect()
}

/// Reads and checks one bn_inference node into a [`BnInferenceStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_batchnorm_inference(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<BnInferenceStep> {
    let (xu, mu, su, bu, yu, stats) = if node.attributes_type() == NA::BatchnormInferenceAttributes
    {
        let a = node
            .attributes_as_batchnorm_inference_attributes()
            .expect("type checked");
        (
            a.x_tensor_uid(),
            a.mean_tensor_uid(),
            a.scale_tensor_uid(),
            a.bias_tensor_uid(),
            a.y_tensor_uid(),
            BnStats::InvVariance(a.inv_variance_tensor_uid()),
        )
    } else {
        let a = node
            .attributes_as_batchnorm_inference_attributes_variance_ext()
            .expect("type checked");
        cx.t("epsilon_tensor_uid", a.epsilon_tensor_uid())?;
        (
            a.x_tensor_uid(),
            a.mean_tensor_uid(),
            a.scale_tensor_uid(),
            a.bias_tensor_uid(),
            a.y_tensor_uid(),
            BnStats::Variance(a.variance_tensor_uid(), a.epsilon_tensor_uid()),
        )
    };
    let x = cx.float("x_tensor_uid", xu)?;
    cx.dims_eq("y_tensor_uid", cx.float("y_tensor_uid", yu)?, &x.dims)?;
    let sv = match stats {
        BnStats::InvVariance(u) => ("inv_variance_tensor_uid", u),
        BnStats::Variance(u, _) => ("variance_tensor_uid", u),
    };
    for (attr, u) in [
        ("mean_tensor_uid", mu),
        sv,
        ("scale_tensor_uid", su),
        ("bias_tensor_uid", bu),
    ] {
        cx.bcast(attr, cx.float(attr, u)?, &x.dims)?;
    }
    Ok(BnInferenceStep {
        x: xu,
        mean: mu,
        stats,
        scale: su,
        bias: bu,
        y: yu,
    })
}

/// Reads and checks one batchnorm node into a [`BnTrainingStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_batchnorm(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<BnTrainingStep> {
    let a = node
        .attributes_as_batchnorm_attributes()
        .expect("type checked");
    if let Some(p) = a.peer_stats_tensor_uid().filter(|p| !p.is_empty()) {
        return Err(cx.refuse(
            "peer_stats_tensor_uid",
            format!("{:?}", p.iter().collect::<Vec<_>>()),
        ));
    }
    let x = cx.float("x_tensor_uid", a.x_tensor_uid())?;
    if x.dims.len() < 2 {
        return Err(cx.bad("x needs at least 2 dims (N, C, …)"));
    }
    cx.dims_eq(
        "y_tensor_uid",
        cx.float("y_tensor_uid", a.y_tensor_uid())?,
        &x.dims,
    )?;
    for (attr, u) in [
        ("scale_tensor_uid", a.scale_tensor_uid()),
        ("bias_tensor_uid", a.bias_tensor_uid()),
    ] {
        cx.bcast(attr, cx.float(attr, u)?, &x.dims)?;
    }
    cx.t("epsilon_tensor_uid", a.epsilon_tensor_uid())?;
    let mean = cx.opt("mean_tensor_uid", a.mean_tensor_uid())?;
    let inv_var = cx.opt("inv_variance_tensor_uid", a.inv_variance_tensor_uid())?;
    for u in mean.iter().chain(&inv_var) {
        if cx.tensors[u].volume() != x.dims[1] {
            return Err(cx.bad(format!(
                "statistics tensor uid {u} dims {:?} must hold C = {} values",
                cx.tensors[u].dims, x.dims[1]
            )));
        }
    }
    let r = [
        a.prev_running_mean_tensor_uid(),
        a.prev_running_variance_tensor_uid(),
        a.momentum_tensor_uid(),
        a.next_running_mean_tensor_uid(),
        a.next_running_variance_tensor_uid(),
    ];
    let running = match r {
        [None, None, None, None, None] => None,
        [Some(pm), Some(pv), Some(m), Some(nm), Some(nv)] => {
            for u in [pm, pv, m, nm, nv] {
                cx.t("running statistics", u)?;
            }
            // The running statistics are read and written as C values each (the execute
            // step reshapes them to the channel dims, which needs this volume).
            for u in [pm, pv, nm, nv] {
                if cx.tensors[&u].volume() != x.dims[1] {
                    return Err(cx.bad(format!(
                        "running statistics tensor uid {u} dims {:?} must hold C = {} values",
                        cx.tensors[&u].dims, x.dims[1]
                    )));
                }
            }
            Some((pm, pv, m, nm, nv))
        }
        _ => return Err(cx.bad("running statistics need all of prev_running_mean, prev_running_variance, momentum, next_running_mean and next_running_variance")),
    };
    Ok(BnTrainingStep {
        x: x.uid,
        scale: a.scale_tensor_uid(),
        bias: a.bias_tensor_uid(),
        eps: a.epsilon_tensor_uid(),
        y: a.y_tensor_uid(),
        mean,
        inv_var,
        running,
    })
}

/// Reads and checks one layernorm node into a [`LayernormStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_layernorm(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<LayernormStep> {
    let a = node
        .attributes_as_layernorm_attributes()
        .expect("type checked");
    let x = cx.float("x_tensor_uid", a.x_tensor_uid())?;
    cx.dims_eq(
        "y_tensor_uid",
        cx.float("y_tensor_uid", a.y_tensor_uid())?,
        &x.dims,
    )?;
    let scale = cx.float("scale_tensor_uid", a.scale_tensor_uid())?;
    let ndc = a.normalized_dim_count();
    let stat_dims = if ndc == 0 {
        stat_dims_from_scale(&x.dims, &scale.dims)
    } else if ndc < 0 || ndc as usize > x.dims.len() {
        return Err(cx.refuse("normalized_dim_count", ndc));
    } else {
        let r = x.dims.len();
        x.dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if i >= r - ndc as usize { 1 } else { d })
            .collect()
    };
    for (attr, u) in [
        ("scale_tensor_uid", a.scale_tensor_uid()),
        ("bias_tensor_uid", a.bias_tensor_uid()),
    ] {
        cx.bcast(attr, cx.float(attr, u)?, &x.dims)?;
    }
    cx.t("epsilon_tensor_uid", a.epsilon_tensor_uid())?;
    let mean = cx.opt("mean_tensor_uid", a.mean_tensor_uid())?;
    let inv_var = cx.opt("inv_variance_tensor_uid", a.inv_variance_tensor_uid())?;
    let sv: usize = stat_dims.iter().product();
    for u in mean.iter().chain(&inv_var) {
        if cx.tensors[u].volume() != sv {
            return Err(cx.bad(format!(
                "statistics tensor uid {u} dims {:?} must hold {sv} values (dims {stat_dims:?})",
                cx.tensors[u].dims
            )));
        }
    }
    Ok(LayernormStep {
        x: x.uid,
        scale: scale.uid,
        bias: a.bias_tensor_uid(),
        eps: a.epsilon_tensor_uid(),
        y: a.y_tensor_uid(),
        stat_dims,
        mean,
        inv_var,
    })
}

/// Reads and checks one rmsnorm node into a [`RmsnormStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse_rmsnorm(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<RmsnormStep> {
    let a = node
        .attributes_as_rmsnorm_attributes()
        .expect("type checked");
    let x = cx.float("x_tensor_uid", a.x_tensor_uid())?;
    cx.dims_eq(
        "y_tensor_uid",
        cx.float("y_tensor_uid", a.y_tensor_uid())?,
        &x.dims,
    )?;
    let scale = cx.float("scale_tensor_uid", a.scale_tensor_uid())?;
    cx.bcast("scale_tensor_uid", scale, &x.dims)?;
    if let Some(b) = a.bias_tensor_uid() {
        cx.bcast("bias_tensor_uid", cx.float("bias_tensor_uid", b)?, &x.dims)?;
    }
    cx.t("epsilon_tensor_uid", a.epsilon_tensor_uid())?;
    let stat_dims = stat_dims_from_scale(&x.dims, &scale.dims);
    let inv_rms = cx.opt("inv_rms_tensor_uid", a.inv_rms_tensor_uid())?;
    let sv: usize = stat_dims.iter().product();
    if let Some(u) = inv_rms {
        if cx.tensors[&u].volume() != sv {
            return Err(cx.bad(format!(
                "inv_rms tensor uid {u} dims {:?} must hold {sv} values",
                cx.tensors[&u].dims
            )));
        }
    }
    Ok(RmsnormStep {
        x: x.uid,
        scale: scale.uid,
        bias: a.bias_tensor_uid(),
        eps: a.epsilon_tensor_uid(),
        y: a.y_tensor_uid(),
        stat_dims,
        inv_rms,
    })
}

/// Runs one bn_inference step on host arrays.
pub fn run_batchnorm_inference(
    s: &BnInferenceStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let BnInferenceStep {
        x,
        mean,
        stats,
        scale,
        bias,
        y,
    } = s;
    let (xv, mv, sv, bv) = (
        env.get(*x)?,
        env.get(*mean)?,
        env.get(*scale)?,
        env.get(*bias)?,
    );
    let inv = match stats {
        BnStats::InvVariance(u) => env.get(*u)?,
        BnStats::Variance(u, eps) => {
            let eps = env.scalar(*eps)?;
            let var = env.get(*u)?;
            Arc::new(norm::inv_std(&var, eps))
        }
    };
    env.put(
        *y,
        norm::batchnorm_inference(&xv, &mv, &inv, &sv, &bv).map_err(e)?,
    )
}

/// Runs one batchnorm step on host arrays.
pub fn run_batchnorm(
    s: &BnTrainingStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let BnTrainingStep {
        x,
        scale,
        bias,
        eps,
        y,
        mean,
        inv_var,
        running,
    } = s;
    let (xv, sv, bv) = (env.get(*x)?, env.get(*scale)?, env.get(*bias)?);
    let epsv = env.scalar(*eps)?;
    let sd = channel_stats_dims(xv.shape());
    let (m, var, cnt) = norm::moments(&xv, &sd);
    let inv = norm::inv_std(&var, epsv);
    let yv = norm::normalize(&xv, Some(&m), &inv, &sv, Some(&bv)).map_err(&e)?;
    env.put(*y, yv)?;
    if let Some(u) = mean {
        env.put(*u, m.clone())?;
    }
    if let Some(u) = inv_var {
        env.put(*u, inv.clone())?;
    }
    if let Some((pm, pv, mo, nm, nv)) = running {
        let (pmv, pvv, mom) = (env.get(*pm)?, env.get(*pv)?, env.scalar(*mo)?);
        // Per-channel vectors: the small copies reshape owns.
        let pmv = reshape(ArrayD::clone(&pmv), &sd);
        let pvv = reshape(ArrayD::clone(&pvv), &sd);
        let unbias = if cnt > 1 {
            cnt as f32 / (cnt - 1) as f32
        } else {
            1.0
        };
        let nmv = ndarray::Zip::from(&pmv)
            .and(&m)
            .map_collect(|&p, &c| (1.0 - mom) * p + mom * c);
        let nvv = ndarray::Zip::from(&pvv)
            .and(&var)
            .map_collect(|&p, &c| (1.0 - mom) * p + mom * c * unbias);
        env.put(*nm, nmv)?;
        env.put(*nv, nvv)?;
    }
    Ok(())
}

/// Runs one layernorm step on host arrays.
pub fn run_layernorm(
    s: &LayernormStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let LayernormStep {
        x,
        scale,
        bias,
        eps,
        y,
        stat_dims,
        mean,
        inv_var,
    } = s;
    let (xv, sv, bv) = (env.get(*x)?, env.get(*scale)?, env.get(*bias)?);
    let epsv = env.scalar(*eps)?;
    let (m, inv) = match env.dense_f32_output(*y) {
        // Written straight into the bound output buffer.
        Some(out) => norm::layernorm_into(&xv, stat_dims, &sv, &bv, epsv, out).map_err(e)?,
        None => {
            let (out, m, inv) = norm::layernorm(&xv, stat_dims, &sv, &bv, epsv).map_err(e)?;
            env.put(*y, out)?;
            (m, inv)
        }
    };
    if let Some(u) = mean {
        env.put(*u, m)?;
    }
    if let Some(u) = inv_var {
        env.put(*u, inv)?;
    }
    Ok(())
}

/// Runs one rmsnorm step on host arrays.
pub fn run_rmsnorm(
    s: &RmsnormStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let RmsnormStep {
        x,
        scale,
        bias,
        eps,
        y,
        stat_dims,
        inv_rms,
    } = s;
    let (xv, sv) = (env.get(*x)?, env.get(*scale)?);
    let bv = match bias {
        Some(b) => Some(env.get(*b)?),
        None => None,
    };
    let epsv = env.scalar(*eps)?;
    let inv = norm::inv_rms(&xv, stat_dims, epsv);
    env.put(
        *y,
        norm::normalize(&xv, None, &inv, &sv, bv.as_deref()).map_err(e)?,
    )?;
    if let Some(u) = inv_rms {
        env.put(*u, inv)?;
    }
    Ok(())
}

/// Where a normalization backward step takes its statistics from.
#[derive(Debug, Clone, Copy)]
pub enum BwdStats {
    /// Saved by the forward: mean UID (`None` for rmsnorm, whose statistics are about 0) and
    /// inverse variance / inverse RMS UID.
    Saved {
        /// Mean UID.
        mean: Option<i64>,
        /// Inverse variance (or inverse RMS) UID.
        inv: i64,
    },
    /// Recomputed from x (mean, population variance, `1/√(var + ε)`, as the layernorm
    /// forward does), epsilon UID.
    FromX {
        /// Epsilon UID.
        eps: i64,
    },
}

/// A batchnorm, layernorm or rmsnorm backward step (one step type: the three share
/// [`norm::norm_backward`]; they differ in the statistics groups and whether the statistics
/// are centered).
#[derive(Debug, Clone)]
pub struct NormBackwardStep {
    /// Output-gradient UID (x's dims).
    pub dy: i64,
    /// Input UID.
    pub x: i64,
    /// Scale UID (broadcasts to x).
    pub scale: i64,
    /// The statistics.
    pub stats: BwdStats,
    /// Statistics dims (x dims with the normalized axes set to 1).
    pub stat_dims: Vec<usize>,
    /// Input-gradient UID (x's dims).
    pub dx: i64,
    /// Scale-gradient UID (scale's dims).
    pub dscale: i64,
    /// Bias-gradient UID (scale's dims), when requested.
    pub dbias: Option<i64>,
}

impl NormBackwardStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![self.dy, self.x, self.scale];
        match self.stats {
            BwdStats::Saved { mean, inv } => {
                v.extend(mean);
                v.push(inv);
            }
            BwdStats::FromX { eps } => v.push(eps),
        }
        v
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![self.dx, self.dscale];
        v.extend(self.dbias);
        v
    }
}

/// The checks every normalization backward shares: dy and dx float with x's dims, scale
/// float and broadcasting to x, dscale (and dbias) float with scale's dims. Returns x's dims
/// and scale's dims.
fn bwd_tensors(
    cx: &Cx<'_>,
    (dy, x, scale, dx, dscale): (i64, i64, i64, i64, i64),
    dbias: Option<i64>,
) -> PluginResult<(Vec<usize>, Vec<usize>)> {
    let xd = cx.float("x_tensor_uid", x)?.dims.clone();
    cx.dims_eq("dy_tensor_uid", cx.float("dy_tensor_uid", dy)?, &xd)?;
    cx.dims_eq("dx_tensor_uid", cx.float("dx_tensor_uid", dx)?, &xd)?;
    let s = cx.float("scale_tensor_uid", scale)?;
    cx.bcast("scale_tensor_uid", s, &xd)?;
    let sd = s.dims.clone();
    cx.dims_eq(
        "dscale_tensor_uid",
        cx.float("dscale_tensor_uid", dscale)?,
        &sd,
    )?;
    if let Some(b) = dbias {
        cx.dims_eq("dbias_tensor_uid", cx.float("dbias_tensor_uid", b)?, &sd)?;
    }
    Ok((xd, sd))
}

/// Refuses a saved statistic whose volume is not the statistics groups' count.
fn stat_volume(cx: &Cx<'_>, attr: &str, u: i64, stat_dims: &[usize]) -> PluginResult<()> {
    let t = cx.float(attr, u)?;
    let sv: usize = stat_dims.iter().product();
    if t.volume() != sv {
        return Err(cx.bad(format!(
            "{attr} (uid {u}) dims {:?} must hold {sv} values (dims {stat_dims:?})",
            t.dims
        )));
    }
    Ok(())
}

/// Reads and checks one batchnorm backward node into a [`NormBackwardStep`]: channel dim 1,
/// statistics over every other dim (as the training forward), x at least 2 dims, the saved
/// mean and inverse variance (C values each) required.
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run: peer
/// statistics (`peer_stats_tensor_uid`); an absent `mean_tensor_uid` or
/// `inv_variance_tensor_uid` (the node carries no epsilon to recompute them from x); a
/// non-float tensor; dims that do not fit (dy/dx ≠ x, dscale/dbias ≠ scale, scale not
/// broadcasting to x, statistics not C values).
pub fn parse_batchnorm_backward(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<NormBackwardStep> {
    let a = node
        .attributes_as_batchnorm_backward_attributes()
        .expect("type checked");
    if let Some(p) = a.peer_stats_tensor_uid().filter(|p| !p.is_empty()) {
        return Err(cx.refuse(
            "peer_stats_tensor_uid",
            format!("{:?}", p.iter().collect::<Vec<_>>()),
        ));
    }
    let (xd, _) = bwd_tensors(
        cx,
        (
            a.dy_tensor_uid(),
            a.x_tensor_uid(),
            a.scale_tensor_uid(),
            a.dx_tensor_uid(),
            a.dscale_tensor_uid(),
        ),
        Some(a.dbias_tensor_uid()),
    )?;
    if xd.len() < 2 {
        return Err(cx.bad("x needs at least 2 dims (N, C, …)"));
    }
    let stat_dims = channel_stats_dims(&xd);
    let mut saved = Vec::new();
    for (attr, u) in [
        ("mean_tensor_uid", a.mean_tensor_uid()),
        ("inv_variance_tensor_uid", a.inv_variance_tensor_uid()),
    ] {
        let Some(u) = u else {
            return Err(cx.bad(format!(
                "{attr} is absent: the CPU reference engine needs the saved mean and \
                 inv_variance (batchnorm backward carries no epsilon to recompute them from x)"
            )));
        };
        stat_volume(cx, attr, u, &stat_dims)?;
        saved.push(u);
    }
    Ok(NormBackwardStep {
        dy: a.dy_tensor_uid(),
        x: a.x_tensor_uid(),
        scale: a.scale_tensor_uid(),
        stats: BwdStats::Saved {
            mean: Some(saved[0]),
            inv: saved[1],
        },
        stat_dims,
        dx: a.dx_tensor_uid(),
        dscale: a.dscale_tensor_uid(),
        dbias: Some(a.dbias_tensor_uid()),
    })
}

/// Reads and checks one layernorm backward node into a [`NormBackwardStep`]: the normalized
/// axes as the forward ([`parse_layernorm`]: the last `normalized_dim_count` dims, or with
/// count 0 from the first non-1 scale dim on); the saved mean and inverse variance when both
/// are given, else (neither given) recomputed from x with `epsilon_tensor_uid`.
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value: `normalized_dim_count` negative or past
/// x's rank; only one of `mean_tensor_uid` / `inv_variance_tensor_uid`; neither and no
/// `epsilon_tensor_uid`; a non-float tensor; dims that do not fit (dy/dx ≠ x, dscale/dbias ≠
/// scale, scale not broadcasting to x, statistics not one value per normalized group).
pub fn parse_layernorm_backward(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<NormBackwardStep> {
    let a = node
        .attributes_as_layernorm_backward_attributes()
        .expect("type checked");
    let (xd, sd) = bwd_tensors(
        cx,
        (
            a.dy_tensor_uid(),
            a.x_tensor_uid(),
            a.scale_tensor_uid(),
            a.dx_tensor_uid(),
            a.dscale_tensor_uid(),
        ),
        Some(a.dbias_tensor_uid()),
    )?;
    let ndc = a.normalized_dim_count();
    let stat_dims = if ndc == 0 {
        stat_dims_from_scale(&xd, &sd)
    } else if ndc < 0 || ndc as usize > xd.len() {
        return Err(cx.refuse("normalized_dim_count", ndc));
    } else {
        let r = xd.len();
        xd.iter()
            .enumerate()
            .map(|(i, &d)| if i >= r - ndc as usize { 1 } else { d })
            .collect()
    };
    let stats = match (a.mean_tensor_uid(), a.inv_variance_tensor_uid()) {
        (Some(m), Some(iv)) => {
            stat_volume(cx, "mean_tensor_uid", m, &stat_dims)?;
            stat_volume(cx, "inv_variance_tensor_uid", iv, &stat_dims)?;
            if let Some(e) = a.epsilon_tensor_uid() {
                cx.t("epsilon_tensor_uid", e)?;
            }
            BwdStats::Saved {
                mean: Some(m),
                inv: iv,
            }
        }
        (None, None) => match a.epsilon_tensor_uid() {
            Some(e) => {
                cx.t("epsilon_tensor_uid", e)?;
                BwdStats::FromX { eps: e }
            }
            None => {
                return Err(cx.bad(
                    "mean_tensor_uid and inv_variance_tensor_uid are absent and so is \
                     epsilon_tensor_uid: the statistics can be neither read nor recomputed",
                ));
            }
        },
        (m, _) => {
            let (given, absent) = if m.is_some() {
                ("mean_tensor_uid", "inv_variance_tensor_uid")
            } else {
                ("inv_variance_tensor_uid", "mean_tensor_uid")
            };
            return Err(cx.bad(format!(
                "{given} is given but {absent} is absent: the CPU reference engine takes \
                 both saved statistics or neither (recomputed from x with epsilon)"
            )));
        }
    };
    Ok(NormBackwardStep {
        dy: a.dy_tensor_uid(),
        x: a.x_tensor_uid(),
        scale: a.scale_tensor_uid(),
        stats,
        stat_dims,
        dx: a.dx_tensor_uid(),
        dscale: a.dscale_tensor_uid(),
        dbias: Some(a.dbias_tensor_uid()),
    })
}

/// Reads and checks one rmsnorm backward node into a [`NormBackwardStep`]: the normalized
/// axes from the scale dims as the forward ([`parse_rmsnorm`]), the saved `inv_rms` (required
/// by the schema, which carries no epsilon), dbias only when `dbias_tensor_uid` is set.
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value: a non-float tensor; dims that do not fit
/// (dy/dx ≠ x, dscale/dbias ≠ scale, scale not broadcasting to x, inv_rms not one value per
/// normalized group).
pub fn parse_rmsnorm_backward(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<NormBackwardStep> {
    let a = node
        .attributes_as_rmsnorm_backward_attributes()
        .expect("type checked");
    let (xd, sd) = bwd_tensors(
        cx,
        (
            a.dy_tensor_uid(),
            a.x_tensor_uid(),
            a.scale_tensor_uid(),
            a.dx_tensor_uid(),
            a.dscale_tensor_uid(),
        ),
        a.dbias_tensor_uid(),
    )?;
    let stat_dims = stat_dims_from_scale(&xd, &sd);
    stat_volume(cx, "inv_rms_tensor_uid", a.inv_rms_tensor_uid(), &stat_dims)?;
    Ok(NormBackwardStep {
        dy: a.dy_tensor_uid(),
        x: a.x_tensor_uid(),
        scale: a.scale_tensor_uid(),
        stats: BwdStats::Saved {
            mean: None,
            inv: a.inv_rms_tensor_uid(),
        },
        stat_dims,
        dx: a.dx_tensor_uid(),
        dscale: a.dscale_tensor_uid(),
        dbias: a.dbias_tensor_uid(),
    })
}

/// Runs one normalization backward step on host arrays ([`norm::norm_backward`]).
pub fn run_norm_backward(
    s: &NormBackwardStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let (dyv, xv, sv) = (env.get(s.dy)?, env.get(s.x)?, env.get(s.scale)?);
    // Saved statistics arrive with their declared dims (C values, or the groups' count):
    // the small copies reshape owns.
    let stat = |a: Arc<ArrayD<f32>>| reshape(ArrayD::clone(&a), &s.stat_dims);
    let (mean, inv) = match s.stats {
        BwdStats::Saved { mean, inv } => {
            let m = match mean {
                Some(u) => Some(stat(env.get(u)?)),
                None => None,
            };
            (m, stat(env.get(inv)?))
        }
        BwdStats::FromX { eps } => {
            let epsv = env.scalar(eps)?;
            let (m, var, _) = norm::moments(&xv, &s.stat_dims);
            (Some(m), norm::inv_std(&var, epsv))
        }
    };
    let g = norm::norm_backward(
        &dyv,
        &xv,
        mean.as_ref(),
        &inv,
        &sv,
        &s.stat_dims,
        s.dbias.is_some(),
    )
    .map_err(e)?;
    env.put(s.dx, g.dx)?;
    env.put(s.dscale, g.dscale)?;
    if let (Some(u), Some(v)) = (s.dbias, g.dbias) {
        env.put(u, v)?;
    }
    Ok(())
}
