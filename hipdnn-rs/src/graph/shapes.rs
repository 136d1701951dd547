//! Shape rules of every op, checked by [`Graph::validate`] (issue 32: a shape error is an
//! invalid graph, found before `build()`).
//!
//! This module owns the per-op shape checks over the tensors a node names: pointwise
//! broadcasting, matmul inner and batch dims, convolution channels, groups and extents,
//! normalization parameter shapes, SDPA head dims, reduction output dims, resample extents,
//! and the backward nodes' gradients (each has the dims of what it is the gradient of).
//! Block-scale (de)quantize, MoE grouped matmul and custom ops carry their own layout rules
//! and are checked by the engines that serve them.
//! The rules themselves come from the op table ([`hipdnn_backend::ops`]), the one definition
//! the engines check against too. It never changes the graph.
//!
//! Every failure is `INVALID_VALUE` (upstream's frontend code for a bad shape; its `ErrorCode`
//! has no separate invalid-graph code) with the message
//! `"<op> '<node>': shape mismatch: <tensors, each as role 'name' [dims]> …; rule: <rule>"`.
//! A check whose tensors are absent or of the wrong rank is skipped here: required tensors
//! and ranks are checked before.

use super::error::{Error, Result};
use super::tensor::TensorId;
use super::{Graph, Operation};
use hipdnn_backend::ops::broadcast::broadcasts_to;
use hipdnn_backend::ops::conv::{self, Window};
use hipdnn_backend::ops::{matmul, reduction, resample, sdpa};

/// The prefix after the node label of every shape error.
pub(crate) const SHAPE_MISMATCH: &str = "shape mismatch";

/// Pointwise rule text.
const POINTWISE_RULE: &str = "a pointwise input broadcasts to the output: aligned from the last \
                              dim, each input dim equals the output dim or is 1";

impl Graph {
    /// `role 'name' [dims]` of a tensor.
    fn td(&self, role: &str, t: TensorId) -> String {
        let t = &self.tensors[t.index()];
        format!("{role} '{}' {:?}", t.name, t.dims)
    }

    fn d(&self, t: TensorId) -> &[i64] {
        &self.tensors[t.index()].dims
    }

    /// Checks the shape rule of `op` (labelled `l`); see the module docs.
    pub(crate) fn check_shapes(&self, l: &str, op: &Operation) -> Result<()> {
        let bad = |what: String, rule: &str| {
            Err(Error::invalid(format!(
                "{l}: {SHAPE_MISMATCH}: {what}; rule: {rule}"
            )))
        };
        match op {
            Operation::Pointwise(a) => {
                let Some(out) = a.out_0 else { return Ok(()) };
                for (role, t) in [("in_0", a.in_0), ("in_1", a.in_1), ("in_2", a.in_2)] {
                    let Some(t) = t else { continue };
                    if !broadcasts_to(self.d(t), self.d(out)) {
                        return bad(
                            format!(
                                "{} does not broadcast to {}",
                                self.td(role, t),
                                self.td("out_0", out)
                            ),
                            POINTWISE_RULE,
                        );
                    }
                }
            }
            Operation::Matmul(a) => {
                let (Some(ta), Some(tb), Some(tc)) = (a.a, a.b, a.c) else {
                    return Ok(());
                };
                let (da, db, dc) = (self.d(ta), self.d(tb), self.d(tc));
                if da.len() < 2 || db.len() < 2 {
                    return Ok(());
                }
                let all = || {
                    format!(
                        "{}, {}, {}",
                        self.td("a", ta),
                        self.td("b", tb),
                        self.td("c", tc)
                    )
                };
                if !matmul::inner_dims_agree(da, db) {
                    return bad(
                        format!(
                            "inner dims differ: {} and {}",
                            self.td("a", ta),
                            self.td("b", tb)
                        ),
                        "matmul a (..batch, M, K) x b (..batch, K, N): a[-1] equals b[-2]",
                    );
                }
                let (ab, bb) = (&da[..da.len() - 2], &db[..db.len() - 2]);
                let batch_ok = ab
                    .iter()
                    .rev()
                    .zip(bb.iter().rev())
                    .all(|(&x, &y)| x == y || x == 1 || y == 1);
                if !batch_ok {
                    return bad(
                        format!("batch dims do not broadcast: {}", all()),
                        "matmul batch dims (all but the last two) broadcast: aligned from the \
                         right, each pair equal or one of them 1",
                    );
                }
                if dc != matmul::output_dims(da, db).as_slice() {
                    return bad(
                        format!("c is not {:?}: {}", matmul::output_dims(da, db), all()),
                        "matmul c is (..broadcast batch, M, N)",
                    );
                }
            }
            Operation::ConvFprop(a) => {
                let (Some(x), Some(w), Some(y)) = (a.x, a.w, a.y) else {
                    return Ok(());
                };
                self.check_conv_shapes(
                    l,
                    [("x", x), ("w", w), ("y", y)],
                    ConvDims {
                        x: self.d(x),
                        w: self.d(w),
                        y: self.d(y),
                    },
                    a.windows(),
                )?;
            }
            Operation::ConvDgrad(a) => {
                let (Some(dy), Some(w), Some(dx)) = (a.dy, a.w, a.dx) else {
                    return Ok(());
                };
                self.check_conv_shapes(
                    l,
                    [("dx", dx), ("w", w), ("dy", dy)],
                    ConvDims {
                        x: self.d(dx),
                        w: self.d(w),
                        y: self.d(dy),
                    },
                    a.windows(),
                )?;
            }
            Operation::ConvWgrad(a) => {
                let (Some(x), Some(dy), Some(dw)) = (a.x, a.dy, a.dw) else {
                    return Ok(());
                };
                self.check_conv_shapes(
                    l,
                    [("x", x), ("dw", dw), ("dy", dy)],
                    ConvDims {
                        x: self.d(x),
                        w: self.d(dw),
                        y: self.d(dy),
                    },
                    a.windows(),
                )?;
            }
            Operation::Batchnorm(a) => self.check_norm_params(
                l,
                a.x,
                a.y,
                &[
                    ("scale", a.scale),
                    ("bias", a.bias),
                    ("prev_running_mean", a.prev_running_mean),
                    ("prev_running_variance", a.prev_running_variance),
                ],
                "batchnorm",
            )?,
            Operation::BatchnormInference(a) => self.check_norm_params(
                l,
                a.x,
                a.y,
                &[
                    ("mean", a.mean),
                    ("inv_variance", a.inv_variance),
                    ("scale", a.scale),
                    ("bias", a.bias),
                ],
                "batchnorm",
            )?,
            Operation::BatchnormInferenceVarianceExt(a) => self.check_norm_params(
                l,
                a.x,
                a.y,
                &[
                    ("mean", a.mean),
                    ("variance", a.variance),
                    ("scale", a.scale),
                    ("bias", a.bias),
                ],
                "batchnorm",
            )?,
            Operation::Layernorm(a) => self.check_norm_params(
                l,
                a.x,
                a.y,
                &[("scale", a.scale), ("bias", a.bias)],
                "layernorm",
            )?,
            Operation::RmsNorm(a) => self.check_norm_params(
                l,
                a.x,
                a.y,
                &[("scale", a.scale), ("bias", a.bias)],
                "rmsnorm",
            )?,
            Operation::Sdpa(a) => {
                let (Some(q), Some(k), Some(v)) = (a.q, a.k, a.v) else {
                    return Ok(());
                };
                self.check_sdpa_qkv(l, q, k, v, a.o)?;
            }
            Operation::Reduction(a) => {
                let (Some(x), Some(y)) = (a.x, a.y) else {
                    return Ok(());
                };
                if !reduction::output_dims_ok(self.d(x), self.d(y)) {
                    return bad(
                        format!("{} and {}", self.td("x", x), self.td("y", y)),
                        "a reduction's y has x's rank; each y dim equals x's (kept) or is 1 \
                         (reduced)",
                    );
                }
            }
            Operation::ResampleFwd(a) => {
                let (Some(x), Some(y)) = (a.x, a.y) else {
                    return Ok(());
                };
                let w = [&a.window, &a.pre_padding, &a.post_padding, &a.stride];
                self.check_resample_shapes(l, ("x", x), ("y", y), w)?;
            }
            Operation::ResampleBwd(a) => {
                let (Some(dx), Some(dy)) = (a.dx, a.dy) else {
                    return Ok(());
                };
                let w = [&a.window, &a.pre_padding, &a.post_padding, &a.stride];
                self.check_resample_shapes(l, ("dx", dx), ("dy", dy), w)?;
                self.check_same_dims(
                    l,
                    ("dy", dy),
                    &[("index", a.index)],
                    "resample backward's index has dy's dims",
                )?;
            }
            Operation::BatchnormBackward(a) => self.check_norm_backward(
                l,
                [a.x, a.dy, a.dx],
                &[
                    ("mean", a.mean),
                    ("inv_variance", a.inv_variance),
                    ("scale", a.scale),
                ],
                (a.scale, a.dscale, a.dbias),
                "batchnorm",
            )?,
            Operation::LayernormBackward(a) => self.check_norm_backward(
                l,
                [a.x, a.dy, a.dx],
                &[
                    ("mean", a.mean),
                    ("inv_variance", a.inv_variance),
                    ("scale", a.scale),
                ],
                (a.scale, a.dscale, a.dbias),
                "layernorm",
            )?,
            Operation::RmsNormBackward(a) => self.check_norm_backward(
                l,
                [a.x, a.dy, a.dx],
                &[("inv_rms", a.inv_rms), ("scale", a.scale)],
                (a.scale, a.dscale, a.dbias),
                "rmsnorm",
            )?,
            Operation::SdpaBackward(a) => {
                let (Some(q), Some(k), Some(v)) = (a.q, a.k, a.v) else {
                    return Ok(());
                };
                self.check_sdpa_qkv(l, q, k, v, a.o)?;
                if let Some(o) = a.o {
                    self.check_same_dims(
                        l,
                        ("o", o),
                        &[("do", a.d_o)],
                        "sdpa backward's do has o's dims",
                    )?;
                }
                for (role, base, grad, g) in [
                    ("q", q, "dq", a.dq),
                    ("k", k, "dk", a.dk),
                    ("v", v, "dv", a.dv),
                ] {
                    self.check_same_dims(
                        l,
                        (role, base),
                        &[(grad, g)],
                        "sdpa backward's dq, dk and dv have the dims of q, k and v",
                    )?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// SDPA's q, k, v and (when given) o: see the rule texts.
    fn check_sdpa_qkv(
        &self,
        l: &str,
        q: TensorId,
        k: TensorId,
        v: TensorId,
        o: Option<TensorId>,
    ) -> Result<()> {
        let (dq, dk, dv) = (self.d(q), self.d(k), self.d(v));
        if [dq, dk, dv].iter().any(|d| d.len() != sdpa::RANK) {
            return Ok(());
        }
        let all = format!(
            "{}, {}, {}",
            self.td("q", q),
            self.td("k", k),
            self.td("v", v)
        );
        let agree = dk[0] == dq[0]
            && dv[0] == dq[0]
            && dk[3] == dq[3]
            && dv[1] == dk[1]
            && dv[2] == dk[2]
            && sdpa::heads_compatible(dq[1], dk[1]);
        if !agree {
            return Err(Error::invalid(format!(
                "{l}: {SHAPE_MISMATCH}: {all}; rule: sdpa q (B, H, S_q, D), k (B, H_kv, S_kv, \
                 D), v (B, H_kv, S_kv, D_v): same B, q and k share D, k and v share H_kv and \
                 S_kv, H_kv divides H"
            )));
        }
        if let Some(o) = o {
            let want = sdpa::output_dims(dq, dv);
            if self.d(o) != want.as_slice() {
                return Err(Error::invalid(format!(
                    "{l}: {SHAPE_MISMATCH}: {} is not {want:?}: {all}; rule: sdpa o is (B, H, \
                     S_q, D_v)",
                    self.td("o", o)
                )));
            }
        }
        Ok(())
    }

    /// Each of `others` (when given) has the dims of `base`.
    fn check_same_dims(
        &self,
        l: &str,
        base: (&str, TensorId),
        others: &[(&str, Option<TensorId>)],
        rule: &str,
    ) -> Result<()> {
        for (role, t) in others {
            let Some(t) = *t else { continue };
            if self.d(t) != self.d(base.1) {
                return Err(Error::invalid(format!(
                    "{l}: {SHAPE_MISMATCH}: {} differs from {}; rule: {rule}",
                    self.td(role, t),
                    self.td(base.0, base.1)
                )));
            }
        }
        Ok(())
    }

    /// A normalization backward: dy and dx have x's dims, the saved statistics and scale
    /// broadcast to x, dscale and dbias have scale's dims.
    fn check_norm_backward(
        &self,
        l: &str,
        [x, dy, dx]: [Option<TensorId>; 3],
        params: &[(&str, Option<TensorId>)],
        (scale, dscale, dbias): (Option<TensorId>, Option<TensorId>, Option<TensorId>),
        op: &str,
    ) -> Result<()> {
        let Some(x) = x else { return Ok(()) };
        let rule = format!("{op} backward's dy and dx have x's dims");
        self.check_same_dims(l, ("x", x), &[("dy", dy), ("dx", dx)], &rule)?;
        self.check_norm_params(l, Some(x), None, params, op)?;
        if let Some(scale) = scale {
            let rule = format!("{op} backward's dscale and dbias have scale's dims");
            self.check_same_dims(
                l,
                ("scale", scale),
                &[("dscale", dscale), ("dbias", dbias)],
                &rule,
            )?;
        }
        Ok(())
    }

    /// A resample in either direction, as the forward problem: `x` (N, C, in..) gives `y`
    /// (N, C, out..) through the window, paddings and strides `w` (in that order).
    fn check_resample_shapes(
        &self,
        l: &str,
        (xr, x): (&str, TensorId),
        (yr, y): (&str, TensorId),
        [window, pre, post, stride]: [&Vec<i64>; 4],
    ) -> Result<()> {
        let (dx, dy) = (self.d(x), self.d(y));
        let n = dx.len().saturating_sub(2);
        let want: Option<Vec<i64>> = (0..n)
            .map(|i| {
                resample::output_extent(
                    dx[i + 2],
                    *window.get(i)?,
                    *pre.get(i)?,
                    *post.get(i)?,
                    *stride.get(i)?,
                )
                .ok()
            })
            .collect();
        let ok = dx.len() >= 2
            && dy.len() == dx.len()
            && dy[..2] == dx[..2]
            && want.as_deref().is_some_and(|w| w == &dy[2..]);
        if !ok {
            return Err(Error::invalid(format!(
                "{l}: {SHAPE_MISMATCH}: {} and {}; rule: resample {xr} (N, C, spatial..) gives \
                 {yr} (N, C, out..) with out = floor((in + pre + post - window) / stride) + 1",
                self.td(xr, x),
                self.td(yr, y)
            )));
        }
        Ok(())
    }

    /// A normalization: y has x's dims; each parameter broadcasts to x.
    fn check_norm_params(
        &self,
        l: &str,
        x: Option<TensorId>,
        y: Option<TensorId>,
        params: &[(&str, Option<TensorId>)],
        op: &str,
    ) -> Result<()> {
        let Some(x) = x else { return Ok(()) };
        for (role, t) in params {
            let Some(t) = *t else { continue };
            if !broadcasts_to(self.d(t), self.d(x)) {
                return Err(Error::invalid(format!(
                    "{l}: {SHAPE_MISMATCH}: {} does not broadcast to {}; rule: {op} parameters \
                     broadcast to x (aligned from the last dim, each dim equal or 1; per \
                     channel (1, C, 1, ..) for batchnorm)",
                    self.td(role, t),
                    self.td("x", x)
                )));
            }
        }
        if let Some(y) = y
            && self.d(y) != self.d(x)
        {
            return Err(Error::invalid(format!(
                "{l}: {SHAPE_MISMATCH}: {} differs from {}; rule: {op} y has x's dims",
                self.td("y", y),
                self.td("x", x)
            )));
        }
        Ok(())
    }

    /// A convolution in any direction, as the forward problem: `x` (N, C, in..), `w` (K,
    /// C/groups, kernel..), `y` (N, K, out..) with out = [`conv::output_extent`]. `roles`
    /// names the node's tensors in the order x, w, y.
    fn check_conv_shapes(
        &self,
        l: &str,
        roles: [(&str, TensorId); 3],
        d: ConvDims<'_>,
        windows: Option<Vec<Window>>,
    ) -> Result<()> {
        let all = format!(
            "{}, {}, {}",
            self.td(roles[0].0, roles[0].1),
            self.td(roles[1].0, roles[1].1),
            self.td(roles[2].0, roles[2].1)
        );
        let bad = |what: &str, rule: &str| {
            Err(Error::invalid(format!(
                "{l}: {SHAPE_MISMATCH}: {what}{all}; rule: {rule}"
            )))
        };
        let (x, w, y) = (d.x, d.w, d.y);
        if x.len() < 3 || w.len() != x.len() || y.len() != x.len() {
            return bad(
                "ranks differ: ",
                "a convolution's x, w and y have the same rank, at least 3 (N or K, C, spatial..)",
            );
        }
        if conv::groups(x[1], w[1], w[0]).is_none() {
            return bad(
                "channels do not group: ",
                "w's C/groups (w[1]) divides x's channels C (x[1]) and the groups C / w[1] \
                 divide w's filter count K (w[0])",
            );
        }
        if y[0] != x[0] || y[1] != w[0] {
            return bad(
                "batch or filter count differs: ",
                "y[0] equals x[0] (N) and y[1] equals w[0] (K)",
            );
        }
        let Some(windows) = windows else {
            return Ok(()); // geometry lists are checked before
        };
        let out: Option<Vec<i64>> = windows
            .iter()
            .enumerate()
            .map(|(i, &win)| conv::output_extent(x[i + 2], w[i + 2], win).ok())
            .collect();
        if out.as_deref() != Some(&y[2..]) {
            return bad(
                "spatial extents do not agree: ",
                "out = floor((in + pre + post - dilation*(kernel-1) - 1) / stride) + 1 per \
                 spatial dim, with in, kernel, out from x, w, y",
            );
        }
        Ok(())
    }
}

/// The dims of a convolution as the forward problem (x, w, y).
struct ConvDims<'a> {
    x: &'a [i64],
    w: &'a [i64],
    y: &'a [i64],
}

macro_rules! conv_windows {
    ($($t:ty),*) => {$(
        impl $t {
            /// One [`Window`] per spatial dim, `None` unless the four lists have one length.
            fn windows(&self) -> Option<Vec<Window>> {
                let n = self.stride.len();
                if [self.pre_padding.len(), self.post_padding.len(), self.dilation.len()]
                    .iter()
                    .any(|&m| m != n)
                {
                    return None;
                }
                Some(
                    (0..n)
                        .map(|i| Window {
                            pre: self.pre_padding[i],
                            post: self.post_padding[i],
                            stride: self.stride[i],
                            dilation: self.dilation[i],
                        })
                        .collect(),
                )
            }
        }
    )*};
}

conv_windows!(
    super::ops::ConvFpropAttributes,
    super::ops::ConvDgradAttributes,
    super::ops::ConvWgradAttributes
);
