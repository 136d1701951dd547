//! Graph → execution DAG of the CPU reference engine: reads the `Graph` FlatBuffer once into
//! owned steps in topological order, checking every op, attribute, shape and data type.
//!
//! Owns applicability: anything the engine cannot run is refused here with
//! `NOT_APPLICABLE` and a message naming the op, the attribute and its value. It never
//! touches buffers (see [`super::exec`]).

use super::dtype::Elem;
use super::ops::conv::{ConvGeometry, out_size};
use super::ops::pointwise::{PointwiseParams, arity};
use super::ops::resample::{PoolGeometry, PoolKind};
use super::ops::sdpa::Band;
use super::tensor::{TensorDesc, tensor_value_f32};
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::{
    ConvMode, DiagonalAlignment, Graph, Node, NodeAttributes as NA, PaddingMode, ReductionMode,
    ResampleMode,
};
use hipdnn_schema::tensor_value::read_tensor_value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;

/// Source of a scalar operand: a constant or a tensor read at execute time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A constant.
    Value(f32),
    /// The first element of a tensor.
    Tensor(i64),
}

/// Batchnorm-inference statistics form.
#[derive(Debug, Clone, Copy)]
pub enum BnStats {
    /// `inv_variance` tensor.
    InvVariance(i64),
    /// `variance` tensor and epsilon.
    Variance(i64, i64),
}

/// One op of the execution DAG, with tensor UIDs.
#[derive(Debug, Clone)]
pub enum Op {
    /// Pointwise.
    Pointwise {
        p: PointwiseParams,
        ins: Vec<i64>,
        out: i64,
    },
    /// Convolution forward.
    ConvFprop {
        x: i64,
        w: i64,
        y: i64,
        geo: ConvGeometry,
    },
    /// Convolution data gradient.
    ConvDgrad {
        dy: i64,
        w: i64,
        dx: i64,
        geo: ConvGeometry,
    },
    /// Convolution filter gradient.
    ConvWgrad {
        x: i64,
        dy: i64,
        dw: i64,
        geo: ConvGeometry,
    },
    /// Matmul.
    Matmul { a: i64, b: i64, c: i64 },
    /// Batchnorm inference.
    BnInference {
        x: i64,
        mean: i64,
        stats: BnStats,
        scale: i64,
        bias: i64,
        y: i64,
    },
    /// Batchnorm training forward.
    BnTraining {
        x: i64,
        scale: i64,
        bias: i64,
        eps: i64,
        y: i64,
        mean: Option<i64>,
        inv_var: Option<i64>,
        running: Option<(i64, i64, i64, i64, i64)>,
    },
    /// Layernorm forward.
    Layernorm {
        x: i64,
        scale: i64,
        bias: i64,
        eps: i64,
        y: i64,
        stat_dims: Vec<usize>,
        mean: Option<i64>,
        inv_var: Option<i64>,
    },
    /// RMSNorm forward.
    Rmsnorm {
        x: i64,
        scale: i64,
        bias: Option<i64>,
        eps: i64,
        y: i64,
        stat_dims: Vec<usize>,
        inv_rms: Option<i64>,
    },
    /// Reduction.
    Reduction { mode: ReductionMode, x: i64, y: i64 },
    /// Resample (pooling) forward.
    Resample {
        x: i64,
        y: i64,
        index: Option<i64>,
        kind: PoolKind,
        geo: PoolGeometry,
    },
    /// SDPA forward.
    Sdpa {
        q: i64,
        k: i64,
        v: i64,
        o: i64,
        mask: Option<i64>,
        scale: Scalar,
        band: Band,
        stats: Option<i64>,
        max: Option<i64>,
        sum_exp: Option<i64>,
    },
}

impl Op {
    /// UIDs this op reads.
    pub fn inputs(&self) -> Vec<i64> {
        match self {
            Op::Pointwise { ins, .. } => ins.clone(),
            Op::ConvFprop { x, w, .. } => vec![*x, *w],
            Op::ConvDgrad { dy, w, .. } => vec![*dy, *w],
            Op::ConvWgrad { x, dy, .. } => vec![*x, *dy],
            Op::Matmul { a, b, .. } => vec![*a, *b],
            Op::BnInference {
                x,
                mean,
                stats,
                scale,
                bias,
                ..
            } => {
                let mut v = vec![*x, *mean, *scale, *bias];
                match stats {
                    BnStats::InvVariance(i) => v.push(*i),
                    BnStats::Variance(a, e) => v.extend([*a, *e]),
                }
                v
            }
            Op::BnTraining {
                x,
                scale,
                bias,
                eps,
                running,
                ..
            } => {
                let mut v = vec![*x, *scale, *bias, *eps];
                if let Some((pm, pv, m, _, _)) = running {
                    v.extend([*pm, *pv, *m]);
                }
                v
            }
            Op::Layernorm {
                x,
                scale,
                bias,
                eps,
                ..
            } => vec![*x, *scale, *bias, *eps],
            Op::Rmsnorm {
                x,
                scale,
                bias,
                eps,
                ..
            } => {
                let mut v = vec![*x, *scale, *eps];
                v.extend(bias);
                v
            }
            Op::Reduction { x, .. } | Op::Resample { x, .. } => vec![*x],
            Op::Sdpa {
                q,
                k,
                v,
                mask,
                scale,
                ..
            } => {
                let mut r = vec![*q, *k, *v];
                r.extend(mask);
                if let Scalar::Tensor(u) = scale {
                    r.push(*u);
                }
                r
            }
        }
    }

    /// UIDs this op writes.
    pub fn outputs(&self) -> Vec<i64> {
        match self {
            Op::Pointwise { out, .. } => vec![*out],
            Op::ConvFprop { y, .. } => vec![*y],
            Op::ConvDgrad { dx, .. } => vec![*dx],
            Op::ConvWgrad { dw, .. } => vec![*dw],
            Op::Matmul { c, .. } => vec![*c],
            Op::BnInference { y, .. } | Op::Reduction { y, .. } => vec![*y],
            Op::BnTraining {
                y,
                mean,
                inv_var,
                running,
                ..
            } => {
                let mut v = vec![*y];
                v.extend(mean.iter().chain(inv_var));
                if let Some((_, _, _, nm, nv)) = running {
                    v.extend([*nm, *nv]);
                }
                v
            }
            Op::Layernorm {
                y, mean, inv_var, ..
            } => {
                let mut v = vec![*y];
                v.extend(mean.iter().chain(inv_var));
                v
            }
            Op::Rmsnorm { y, inv_rms, .. } => {
                let mut v = vec![*y];
                v.extend(inv_rms);
                v
            }
            Op::Resample { y, index, .. } => {
                let mut v = vec![*y];
                v.extend(index);
                v
            }
            Op::Sdpa {
                o,
                stats,
                max,
                sum_exp,
                ..
            } => {
                let mut v = vec![*o];
                v.extend(stats.iter().chain(max).chain(sum_exp));
                v
            }
        }
    }
}

/// One step: the node's name and its op.
#[derive(Debug, Clone)]
pub struct Step {
    /// Node name (for messages).
    pub name: String,
    /// The op.
    pub op: Op,
}

/// The parsed graph: tensors by UID and steps in topological order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Every graph tensor by UID.
    pub tensors: HashMap<i64, TensorDesc>,
    /// Steps in execution order.
    pub steps: Vec<Step>,
}

fn na(msg: String) -> PluginError {
    PluginError::not_applicable(msg)
}

struct Cx<'a> {
    tensors: &'a HashMap<i64, TensorDesc>,
    op: &'static str,
    name: String,
}

impl Cx<'_> {
    fn refuse(&self, attr: &str, value: impl Display) -> PluginError {
        na(format!(
            "{} '{}': {attr} {value} is not supported by the CPU reference engine",
            self.op, self.name
        ))
    }
    fn bad(&self, what: impl Display) -> PluginError {
        na(format!("{} '{}': {what}", self.op, self.name))
    }
    fn t(&self, attr: &str, uid: i64) -> PluginResult<&TensorDesc> {
        self.tensors
            .get(&uid)
            .ok_or_else(|| self.bad(format!("{attr} {uid} names no tensor of the graph")))
    }
    fn float(&self, attr: &str, uid: i64) -> PluginResult<&TensorDesc> {
        let t = self.t(attr, uid)?;
        if !t.elem.is_float() {
            return Err(self.refuse(
                &format!("{attr} (uid {uid}) data_type"),
                format!("{:?}", t.elem),
            ));
        }
        Ok(t)
    }
    fn opt(&self, attr: &str, uid: Option<i64>) -> PluginResult<Option<i64>> {
        match uid {
            Some(u) => self.t(attr, u).map(|_| Some(u)),
            None => Ok(None),
        }
    }
    fn refuse_set(&self, attr: &str, uid: Option<i64>) -> PluginResult<()> {
        match uid {
            Some(u) => Err(self.refuse(attr, format!("(uid {u})"))),
            None => Ok(()),
        }
    }
    fn dims_eq(&self, attr: &str, t: &TensorDesc, want: &[usize]) -> PluginResult<()> {
        if t.dims != want {
            return Err(self.bad(format!(
                "{attr} (uid {}) dims {:?} differ from the expected {want:?}",
                t.uid, t.dims
            )));
        }
        Ok(())
    }
    fn bcast(&self, attr: &str, t: &TensorDesc, to: &[usize]) -> PluginResult<()> {
        if !broadcasts(&t.dims, to) {
            return Err(self.bad(format!(
                "{attr} (uid {}) dims {:?} do not broadcast to {to:?}",
                t.uid, t.dims
            )));
        }
        Ok(())
    }
    fn spatial(
        &self,
        attr: &str,
        v: Option<flatbuffers::Vector<'_, i64>>,
        n: usize,
        default: usize,
    ) -> PluginResult<Vec<usize>> {
        let Some(v) = v else {
            return Ok(vec![default; n]);
        };
        let vals: Vec<i64> = v.iter().collect();
        if vals.len() != n {
            return Err(self.bad(format!(
                "{attr} {vals:?} has {} entries, expected {n} (one per spatial dim)",
                vals.len()
            )));
        }
        if vals.iter().any(|&x| x < 0 || (default == 1 && x == 0)) {
            return Err(self.refuse(attr, format!("{vals:?}")));
        }
        Ok(vals.into_iter().map(|x| x as usize).collect())
    }
}

/// numpy broadcasting: `from` (right-aligned) broadcasts to `to`.
pub fn broadcasts(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&f, &t)| f == t || f == 1)
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

fn read_tensors(graph: &Graph<'_>) -> PluginResult<HashMap<i64, TensorDesc>> {
    let mut out = HashMap::new();
    for t in graph.tensors().iter().flatten() {
        let uid = t.uid();
        let name = t.name().unwrap_or("").to_string();
        let dt = t.data_type();
        let elem = Elem::from_data_type(dt).ok_or_else(|| {
            na(format!(
                "tensor uid {uid} ('{name}'): data_type {dt:?} is not supported by the CPU reference engine"
            ))
        })?;
        let dims: Vec<i64> = t.dims().map(|v| v.iter().collect()).unwrap_or_default();
        let strides: Vec<i64> = t.strides().map(|v| v.iter().collect()).unwrap_or_default();
        if dims.is_empty()
            || dims.len() != strides.len()
            || dims.iter().any(|&d| d <= 0)
            || strides.iter().any(|&s| s < 0)
        {
            return Err(na(format!(
                "tensor uid {uid} ('{name}'): dims {dims:?} / strides {strides:?} are not a valid layout"
            )));
        }
        let value = read_tensor_value(&t)
            .map_err(|e| PluginError::invalid_value(format!("tensor uid {uid}: {e}")))?
            .map(tensor_value_f32);
        if out.contains_key(&uid) {
            return Err(na(format!("tensor uid {uid} appears twice in the graph")));
        }
        out.insert(
            uid,
            TensorDesc {
                uid,
                name,
                elem,
                dims: dims.iter().map(|&d| d as usize).collect(),
                strides: strides.iter().map(|&s| s as usize).collect(),
                is_virtual: t.virtual_(),
                runtime_pass_by_value: t.is_runtime_pass_by_value(),
                value,
            },
        );
    }
    Ok(out)
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
        pre: cx.spatial("pre_padding", pre, spatial, 0)?,
        post: cx.spatial("post_padding", post, spatial, 0)?,
        stride: cx.spatial("stride", stride, spatial, 1)?,
        dilation: cx.spatial("dilation", dil, spatial, 1)?,
        flip,
    })
}

/// Checks x `(N, C, in…)`, w `(K, C/g, f…)`, y `(N, K, out…)` of a convolution.
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
    if c % cg != 0 || k % (c / cg) != 0 {
        return Err(cx.bad(format!(
            "channels do not form groups: x C {c}, w C/groups {cg}, K {k}"
        )));
    }
    let mut want = vec![x.dims[0], k];
    for d in 0..r - 2 {
        let o = out_size(
            x.dims[d + 2],
            w.dims[d + 2],
            geo.pre[d],
            geo.post[d],
            geo.stride[d],
            geo.dilation[d],
        )
        .ok_or_else(|| {
            cx.bad(format!(
                "filter {:?} does not fit input {:?} with this padding",
                w.dims, x.dims
            ))
        })?;
        want.push(o);
    }
    if y.dims != want {
        return Err(cx.bad(format!(
            "output dims {:?} differ from the expected {want:?}",
            y.dims
        )));
    }
    Ok(())
}

fn parse_node(node: &Node<'_>, tensors: &HashMap<i64, TensorDesc>) -> PluginResult<Op> {
    let name = node.name().unwrap_or("").to_string();
    let ty = node.attributes_type();
    let cx = |op: &'static str| Cx {
        tensors,
        op,
        name: name.clone(),
    };
    match ty {
        NA::PointwiseAttributes => {
            let a = node
                .attributes_as_pointwise_attributes()
                .expect("type checked");
            let cx = cx("pointwise");
            let mode = a.operation();
            let n = arity(mode).ok_or_else(|| cx.refuse("operation", format!("{mode:?}")))?;
            let mut ins = vec![a.in_0_tensor_uid()];
            for (i, u) in [a.in_1_tensor_uid(), a.in_2_tensor_uid()]
                .into_iter()
                .enumerate()
                .take(n - 1)
            {
                ins.push(u.ok_or_else(|| {
                    cx.bad(format!("operation {mode:?} needs in_{}_tensor_uid", i + 1))
                })?);
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
                && (axis < 0 || axis as usize >= out.dims.len())
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
            Ok(Op::Pointwise {
                p,
                ins,
                out: a.out_0_tensor_uid(),
            })
        }
        NA::ConvolutionFwdAttributes => {
            let a = node
                .attributes_as_convolution_fwd_attributes()
                .expect("type checked");
            let cx = cx("conv_fprop");
            let (x, w, y) = (
                cx.float("x_tensor_uid", a.x_tensor_uid())?,
                cx.float("w_tensor_uid", a.w_tensor_uid())?,
                cx.float("y_tensor_uid", a.y_tensor_uid())?,
            );
            let geo = conv_geo(
                &cx,
                x.dims.len().saturating_sub(2),
                a.pre_padding(),
                a.post_padding(),
                a.stride(),
                a.dilation(),
                a.conv_mode(),
            )?;
            conv_shapes(&cx, x, w, y, &geo)?;
            Ok(Op::ConvFprop {
                x: x.uid,
                w: w.uid,
                y: y.uid,
                geo,
            })
        }
        NA::ConvolutionBwdAttributes => {
            let a = node
                .attributes_as_convolution_bwd_attributes()
                .expect("type checked");
            let cx = cx("conv_dgrad");
            let (dy, w, dx) = (
                cx.float("dy_tensor_uid", a.dy_tensor_uid())?,
                cx.float("w_tensor_uid", a.w_tensor_uid())?,
                cx.float("dx_tensor_uid", a.dx_tensor_uid())?,
            );
            let geo = conv_geo(
                &cx,
                dx.dims.len().saturating_sub(2),
                a.pre_padding(),
                a.post_padding(),
                a.stride(),
                a.dilation(),
                a.conv_mode(),
            )?;
            conv_shapes(&cx, dx, w, dy, &geo)?;
            Ok(Op::ConvDgrad {
                dy: dy.uid,
                w: w.uid,
                dx: dx.uid,
                geo,
            })
        }
        NA::ConvolutionWrwAttributes => {
            let a = node
                .attributes_as_convolution_wrw_attributes()
                .expect("type checked");
            let cx = cx("conv_wgrad");
            let (x, dy, dw) = (
                cx.float("x_tensor_uid", a.x_tensor_uid())?,
                cx.float("dy_tensor_uid", a.dy_tensor_uid())?,
                cx.float("dw_tensor_uid", a.dw_tensor_uid())?,
            );
            let geo = conv_geo(
                &cx,
                x.dims.len().saturating_sub(2),
                a.pre_padding(),
                a.post_padding(),
                a.stride(),
                a.dilation(),
                a.conv_mode(),
            )?;
            conv_shapes(&cx, x, dw, dy, &geo)?;
            Ok(Op::ConvWgrad {
                x: x.uid,
                dy: dy.uid,
                dw: dw.uid,
                geo,
            })
        }
        NA::MatmulAttributes => {
            let a = node
                .attributes_as_matmul_attributes()
                .expect("type checked");
            let cx = cx("matmul");
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
            if !broadcasts(&ta.dims[..ra - 2], cb) || !broadcasts(&tb.dims[..rb - 2], cb) {
                return Err(cx.bad(format!(
                    "batch dims of a {:?} and b {:?} do not broadcast to c {:?}",
                    ta.dims, tb.dims, tc.dims
                )));
            }
            Ok(Op::Matmul {
                a: ta.uid,
                b: tb.uid,
                c: tc.uid,
            })
        }
        NA::BatchnormInferenceAttributes | NA::BatchnormInferenceAttributesVarianceExt => {
            let cx = cx("batchnorm_inference");
            let (xu, mu, su, bu, yu, stats) = if ty == NA::BatchnormInferenceAttributes {
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
            Ok(Op::BnInference {
                x: xu,
                mean: mu,
                stats,
                scale: su,
                bias: bu,
                y: yu,
            })
        }
        NA::BatchnormAttributes => {
            let a = node
                .attributes_as_batchnorm_attributes()
                .expect("type checked");
            let cx = cx("batchnorm");
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
            let mut stat = vec![1; x.dims.len()];
            stat[1] = x.dims[1];
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
                if tensors[u].volume() != x.dims[1] {
                    return Err(cx.bad(format!(
                        "statistics tensor uid {u} dims {:?} must hold C = {} values",
                        tensors[u].dims, x.dims[1]
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
                    Some((pm, pv, m, nm, nv))
                }
                _ => return Err(cx.bad("running statistics need all of prev_running_mean, prev_running_variance, momentum, next_running_mean and next_running_variance")),
            };
            Ok(Op::BnTraining {
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
        NA::LayernormAttributes => {
            let a = node
                .attributes_as_layernorm_attributes()
                .expect("type checked");
            let cx = cx("layernorm");
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
                if tensors[u].volume() != sv {
                    return Err(cx.bad(format!("statistics tensor uid {u} dims {:?} must hold {sv} values (dims {stat_dims:?})", tensors[u].dims)));
                }
            }
            Ok(Op::Layernorm {
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
        NA::RMSNormAttributes => {
            let a = node
                .attributes_as_rmsnorm_attributes()
                .expect("type checked");
            let cx = cx("rmsnorm");
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
                if tensors[&u].volume() != sv {
                    return Err(cx.bad(format!(
                        "inv_rms tensor uid {u} dims {:?} must hold {sv} values",
                        tensors[&u].dims
                    )));
                }
            }
            Ok(Op::Rmsnorm {
                x: x.uid,
                scale: scale.uid,
                bias: a.bias_tensor_uid(),
                eps: a.epsilon_tensor_uid(),
                y: a.y_tensor_uid(),
                stat_dims,
                inv_rms,
            })
        }
        NA::ReductionAttributes => {
            let a = node
                .attributes_as_reduction_attributes()
                .expect("type checked");
            let cx = cx("reduction");
            let mode = a.mode();
            if !(1..=9).contains(&mode.0) {
                return Err(cx.refuse("mode", format!("{mode:?}")));
            }
            let (x, y) = (
                cx.t("in_tensor_uid", a.in_tensor_uid())?,
                cx.t("out_tensor_uid", a.out_tensor_uid())?,
            );
            if x.dims.len() != y.dims.len()
                || x.dims.iter().zip(&y.dims).any(|(&i, &o)| o != i && o != 1)
            {
                return Err(cx.bad(format!(
                    "output dims {:?} must equal input dims {:?} except reduced axes of 1",
                    y.dims, x.dims
                )));
            }
            Ok(Op::Reduction {
                mode,
                x: x.uid,
                y: y.uid,
            })
        }
        NA::ResampleFwdAttributes => {
            let a = node
                .attributes_as_resample_fwd_attributes()
                .expect("type checked");
            let cx = cx("resample_fwd");
            let x = cx.float("x_tensor_uid", a.x_tensor_uid())?;
            let y = cx.float("y_tensor_uid", a.y_tensor_uid())?;
            let r = x.dims.len();
            if !(3..=5).contains(&r) || y.dims.len() != r {
                return Err(cx.refuse("tensor rank", r));
            }
            let sp = r - 2;
            let geo = PoolGeometry {
                window: cx.spatial("window", a.window(), sp, 1)?,
                stride: cx.spatial("stride", a.stride(), sp, 1)?,
                pre: cx.spatial("pre_padding", a.pre_padding(), sp, 0)?,
                post: cx.spatial("post_padding", a.post_padding(), sp, 0)?,
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
                    out_size(
                        x.dims[d + 2],
                        geo.window[d],
                        geo.pre[d],
                        geo.post[d],
                        geo.stride[d],
                        1,
                    )
                    .ok_or_else(|| cx.bad("window does not fit the padded input"))?,
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
                cx.dims_eq("index_tensor_uid", &tensors[&u], &want)?;
            }
            Ok(Op::Resample {
                x: x.uid,
                y: y.uid,
                index,
                kind,
                geo,
            })
        }
        NA::SdpaAttributes => {
            let a = node.attributes_as_sdpa_attributes().expect("type checked");
            let cx = cx("sdpa");
            if let Some(p) = a.dropout_probability().filter(|&p| p != 0.0) {
                return Err(cx.refuse("dropout_probability", p));
            }
            for (attr, u) in [
                ("seq_len_q_tensor_uid", a.seq_len_q_tensor_uid()),
                ("seq_len_kv_tensor_uid", a.seq_len_kv_tensor_uid()),
                ("seed_tensor_uid", a.seed_tensor_uid()),
                ("offset_tensor_uid", a.offset_tensor_uid()),
                ("dropout_mask_tensor_uid", a.dropout_mask_tensor_uid()),
                ("dropout_scale_tensor_uid", a.dropout_scale_tensor_uid()),
                ("page_table_k_tensor_uid", a.page_table_k_tensor_uid()),
                ("page_table_v_tensor_uid", a.page_table_v_tensor_uid()),
                ("block_mask_tensor_uid", a.block_mask_tensor_uid()),
                ("sink_token_tensor_uid", a.sink_token_tensor_uid()),
                ("descale_q_tensor_uid", a.descale_q_tensor_uid()),
                ("descale_k_tensor_uid", a.descale_k_tensor_uid()),
                ("descale_v_tensor_uid", a.descale_v_tensor_uid()),
                ("descale_s_tensor_uid", a.descale_s_tensor_uid()),
                ("scale_s_tensor_uid", a.scale_s_tensor_uid()),
                ("scale_o_tensor_uid", a.scale_o_tensor_uid()),
                ("rng_dump_tensor_uid", a.rng_dump_tensor_uid()),
                ("amax_s_tensor_uid", a.amax_s_tensor_uid()),
                ("amax_o_tensor_uid", a.amax_o_tensor_uid()),
            ] {
                cx.refuse_set(attr, u)?;
            }
            if a.alibi_mask() {
                return Err(cx.refuse("alibi_mask", true));
            }
            if a.padding_mask() {
                return Err(cx.refuse("padding_mask", true));
            }
            let (q, k, v, o) = (
                cx.float("q_tensor_uid", a.q_tensor_uid())?,
                cx.float("k_tensor_uid", a.k_tensor_uid())?,
                cx.float("v_tensor_uid", a.v_tensor_uid())?,
                cx.float("o_tensor_uid", a.o_tensor_uid())?,
            );
            if [q, k, v, o].iter().any(|t| t.dims.len() != 4) {
                return Err(cx.bad("q, k, v and o must have 4 dims (B, H, S, D)"));
            }
            let (b, h, sq, d) = (q.dims[0], q.dims[1], q.dims[2], q.dims[3]);
            let (hk, skv) = (k.dims[1], k.dims[2]);
            if k.dims[0] != b
                || v.dims[0] != b
                || k.dims[3] != d
                || v.dims[1] != hk
                || v.dims[2] != skv
                || hk == 0
                || h % hk != 0
            {
                return Err(cx.bad(format!(
                    "dims do not agree: q {:?}, k {:?}, v {:?}",
                    q.dims, k.dims, v.dims
                )));
            }
            cx.dims_eq("o_tensor_uid", o, &[b, h, sq, v.dims[3]])?;
            let mask = cx.opt("attn_mask_tensor_uid", a.attn_mask_tensor_uid())?;
            if let Some(u) = mask {
                cx.bcast("attn_mask_tensor_uid", &tensors[&u], &[b, h, sq, skv])?;
            }
            let scale = match (a.attn_scale_value(), a.scale_tensor_uid()) {
                (Some(s), _) => Scalar::Value(s),
                (None, Some(u)) => {
                    cx.t("scale_tensor_uid", u)?;
                    Scalar::Tensor(u)
                }
                (None, None) => Scalar::Value(1.0),
            };
            let br = a.diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
            let mut band = Band {
                bottom_right: br,
                right: a.right_bound(),
                left: a.left_bound(),
            };
            if a.causal_mask() || a.causal_mask_bottom_right() {
                if a.causal_mask() && a.causal_mask_bottom_right() {
                    return Err(cx.bad("causal_mask and causal_mask_bottom_right are both set"));
                }
                band.bottom_right = a.causal_mask_bottom_right();
                band.right = Some(band.right.map_or(0, |r| r.min(0)));
            }
            let stats = cx.opt("stats_tensor_uid", a.stats_tensor_uid())?;
            if a.generate_stats() == Some(true) && stats.is_none() {
                return Err(cx.bad("generate_stats is set but stats_tensor_uid is absent"));
            }
            let max = cx.opt("max_tensor_uid", a.max_tensor_uid())?;
            let sum_exp = cx.opt("sum_exp_tensor_uid", a.sum_exp_tensor_uid())?;
            for u in stats.iter().chain(&max).chain(&sum_exp) {
                cx.dims_eq("statistics tensor", &tensors[u], &[b, h, sq, 1])?;
            }
            Ok(Op::Sdpa {
                q: q.uid,
                k: k.uid,
                v: v.uid,
                o: o.uid,
                mask,
                scale,
                band,
                stats,
                max,
                sum_exp,
            })
        }
        other => Err(na(format!(
            "node '{name}': operation {} is not supported by the CPU reference engine",
            other.variant_name().unwrap_or("NONE")
        ))),
    }
}

impl Plan {
    /// Parses and checks `graph` into a plan.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming the op, attribute and value for anything the engine cannot run
    /// (unsupported op, mode, data type, shape, a virtual tensor nobody produces, a cycle);
    /// `INVALID_VALUE` for an unreadable `TensorValue`.
    pub fn from_graph(graph: &Graph<'_>) -> PluginResult<Plan> {
        let tensors = read_tensors(graph)?;
        let mut ops = Vec::new();
        for node in graph.nodes().iter().flatten() {
            ops.push(Step {
                name: node.name().unwrap_or("").to_string(),
                op: parse_node(&node, &tensors)?,
            });
        }
        if ops.is_empty() {
            return Err(na("graph has no nodes".into()));
        }
        // Producers, and a stable topological order (Kahn, lowest node index first).
        let mut producer: HashMap<i64, usize> = HashMap::new();
        for (i, s) in ops.iter().enumerate() {
            for u in s.op.outputs() {
                if producer.insert(u, i).is_some() {
                    return Err(na(format!(
                        "node '{}': tensor uid {u} is written by two nodes",
                        s.name
                    )));
                }
                if tensors[&u].value.is_some() || tensors[&u].runtime_pass_by_value {
                    return Err(na(format!(
                        "node '{}': output tensor uid {u} is a pass-by-value scalar",
                        s.name
                    )));
                }
            }
        }
        let mut indeg = vec![0usize; ops.len()];
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
        for (i, s) in ops.iter().enumerate() {
            for u in s.op.inputs() {
                let t = &tensors[&u];
                match producer.get(&u) {
                    Some(&p) => {
                        indeg[i] += 1;
                        users[p].push(i);
                    }
                    None if t.is_virtual => {
                        return Err(na(format!(
                            "node '{}': virtual tensor uid {u} ('{}') is read but no node writes it",
                            s.name, t.name
                        )));
                    }
                    None => {}
                }
            }
        }
        let mut ready: BTreeMap<usize, ()> = (0..ops.len())
            .filter(|&i| indeg[i] == 0)
            .map(|i| (i, ()))
            .collect();
        let mut order = Vec::with_capacity(ops.len());
        while let Some((&i, _)) = ready.iter().next() {
            ready.remove(&i);
            order.push(i);
            for &u in &users[i] {
                indeg[u] -= 1;
                if indeg[u] == 0 {
                    ready.insert(u, ());
                }
            }
        }
        if order.len() != ops.len() {
            return Err(na("graph has a cycle".into()));
        }
        let steps = order.into_iter().map(|i| ops[i].clone()).collect();
        Ok(Plan { tensors, steps })
    }
}
