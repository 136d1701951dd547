//! Graph → execution DAG of the CPU reference engine: reads the `Graph` FlatBuffer once into
//! owned steps in topological order, checking every op, attribute, shape and data type.
//!
//! Owns applicability: anything the engine cannot run is refused here with
//! `NOT_APPLICABLE` and a message naming the op, the attribute and its value. It never
//! touches buffers (see [`super::exec`]). The per-op checks live in [`super::nodes`] (one
//! file per op kind, each checking through [`super::check::Cx`] and returning its own step
//! type); this file holds the tensor reading, the dispatcher that wraps each node's step in
//! its [`Op`], the topological sort, and the calls of the epilogue and softmax fusions
//! ([`super::fuse`]).

use super::check::{Cx, na};
use super::dtype::Elem;
use super::fuse::{fuse_epilogues, fuse_softmax};
use super::nodes::{block_scale, conv, gather, matmul, norm, pointwise, reduction, resample, sdpa};
use super::reshape;
use super::step::{Op, Step};
use super::tensor::{TensorDesc, tensor_value_f32};
use hipdnn_backend::{PluginError, PluginResult, ShapeOverride};
use hipdnn_schema::graph::{Graph, Node, NodeAttributes as NA};
use hipdnn_schema::tensor_value::read_tensor_value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The parsed graph: tensors by UID and steps in topological order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Every graph tensor by UID.
    pub tensors: HashMap<i64, TensorDesc>,
    /// Steps in execution order.
    pub steps: Vec<Step>,
    /// For each step, the UIDs whose last use it is (read or written by no later step): the
    /// executor drops their values right after it, so one layer's memory serves the next.
    pub last_use: Vec<Vec<i64>>,
    /// UIDs some step writes, sorted: a bound buffer among them must be writable.
    pub outputs: Vec<i64>,
    /// UIDs an execute must find in the variant pack (non-virtual tensors read or written by
    /// a step, except baked scalars that are not runtime pass-by-value), each once, in the
    /// order of the steps and, within a step, inputs then outputs: the executor checks them in
    /// this order, so the first missing one is the one named.
    pub needed: Vec<i64>,
    /// The plan's work ([`work`], summed over the steps) is at most [`INLINE_WORK`]: an execute
    /// runs its steps on the calling thread instead of handing them to the thread pool (the
    /// hand-off, two thread wake-ups, costs more than the work). Decided by the shapes alone;
    /// the results never depend on the thread that computes them.
    pub inline: bool,
}

/// Largest plan [`work`] that an execute runs on the calling thread ([`Plan::inline`]): 32 Ki
/// elements or multiply-adds, a few µs on one core, about what waking a pool thread and being
/// woken by it costs.
pub const INLINE_WORK: usize = 1 << 15;

/// A step's work in elements touched or multiply-adds, whichever is more: the volumes of its
/// inputs and outputs (a gather counts the rows it reads, not its table), and for the
/// contractions (matmul, convolution, SDPA) an estimate of their multiply-adds. Saturating.
pub fn work(op: &Op, tensors: &HashMap<i64, TensorDesc>) -> usize {
    let vol = |u: i64| tensors.get(&u).map_or(usize::MAX, TensorDesc::volume);
    let dim = |u: i64, i: usize| {
        tensors
            .get(&u)
            .and_then(|t| t.dims.get(i).copied())
            .unwrap_or(usize::MAX)
    };
    let last = |u: i64| {
        tensors
            .get(&u)
            .and_then(|t| t.dims.last().copied())
            .unwrap_or(usize::MAX)
    };
    let touched = match op {
        Op::Gather(g) => vol(g.index).saturating_add(vol(g.y).saturating_mul(2)),
        _ => op
            .inputs()
            .into_iter()
            .chain(op.outputs())
            .fold(0usize, |a, u| a.saturating_add(vol(u))),
    };
    let macs = match op {
        Op::Matmul(m) => vol(m.c).saturating_mul(last(m.a)),
        Op::ConvFprop(c) => vol(c.y).saturating_mul(vol(c.w) / dim(c.w, 0).max(1)),
        Op::ConvDgrad(c) => vol(c.dx).saturating_mul(vol(c.w) / dim(c.w, 1).max(1)),
        Op::ConvWgrad(c) => vol(c.dw).saturating_mul(vol(c.dy) / dim(c.dy, 1).max(1)),
        Op::Sdpa(a) => vol(a.q).saturating_mul(dim(a.k, 2)).saturating_mul(2),
        Op::SdpaBackward(a) => vol(a.q).saturating_mul(dim(a.k, 2)).saturating_mul(5),
        _ => 0,
    };
    touched.max(macs)
}

/// [`Plan::outputs`] and [`Plan::needed`] of `steps`.
fn bindings_of(steps: &[Step], tensors: &HashMap<i64, TensorDesc>) -> (Vec<i64>, Vec<i64>) {
    let mut outputs: Vec<i64> = steps.iter().flat_map(|s| s.op.outputs()).collect();
    outputs.sort_unstable();
    outputs.dedup();
    let (mut needed, mut seen) = (Vec::new(), HashSet::new());
    for s in steps {
        for u in s.op.inputs().into_iter().chain(s.op.outputs()) {
            let d = &tensors[&u];
            // A runtime pass-by-value scalar is bound at every execute, default or not: the
            // same rule as the SDK's built graph (issue 12: one rule for built and loaded
            // plans).
            let needs_buffer = !d.is_virtual
                && (d.value.is_none()
                    || d.runtime_pass_by_value
                    || outputs.binary_search(&u).is_ok());
            if needs_buffer && seen.insert(u) {
                needed.push(u);
            }
        }
    }
    (outputs, needed)
}

/// [`Plan::last_use`] of `steps`: each UID listed under the last step that reads or writes it.
fn last_uses(steps: &[Step]) -> Vec<Vec<i64>> {
    let mut last = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        for u in s.op.outputs().into_iter().chain(s.op.inputs()) {
            last.insert(u, i);
        }
    }
    let mut out: Vec<Vec<i64>> = vec![Vec::new(); steps.len()];
    for (u, i) in last {
        out[i].push(u);
    }
    out
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
        let desc = TensorDesc {
            uid,
            name,
            elem,
            dims: dims.iter().map(|&d| d as usize).collect(),
            strides: strides.iter().map(|&s| s as usize).collect(),
            is_virtual: t.virtual_(),
            runtime_pass_by_value: t.is_runtime_pass_by_value(),
            value,
        };
        desc.check_extents()?;
        out.insert(uid, desc);
    }
    Ok(out)
}

/// Every node of `graph` parsed and checked against `tensors`, in graph order.
fn parse_steps(graph: &Graph<'_>, tensors: &HashMap<i64, TensorDesc>) -> PluginResult<Vec<Step>> {
    let mut ops = Vec::new();
    for node in graph.nodes().iter().flatten() {
        ops.push(Step {
            name: node.name().unwrap_or("").to_string(),
            op: parse_node(&node, tensors)?,
        });
    }
    Ok(ops)
}

fn parse_node(node: &Node<'_>, tensors: &HashMap<i64, TensorDesc>) -> PluginResult<Op> {
    let name = node.name().unwrap_or("").to_string();
    let cx = |op: &'static str| Cx::new(tensors, op, name.clone());
    match node.attributes_type() {
        NA::PointwiseAttributes => pointwise::parse(node, &cx("pointwise")).map(Op::Pointwise),
        NA::ConvolutionFwdAttributes => {
            conv::parse_fprop(node, &cx("conv_fprop")).map(Op::ConvFprop)
        }
        NA::ConvolutionBwdAttributes => {
            conv::parse_dgrad(node, &cx("conv_dgrad")).map(Op::ConvDgrad)
        }
        NA::ConvolutionWrwAttributes => {
            conv::parse_wgrad(node, &cx("conv_wgrad")).map(Op::ConvWgrad)
        }
        NA::MatmulAttributes => matmul::parse(node, &cx("matmul")).map(Op::Matmul),
        NA::BatchnormInferenceAttributes | NA::BatchnormInferenceAttributesVarianceExt => {
            norm::parse_batchnorm_inference(node, &cx("batchnorm_inference")).map(Op::BnInference)
        }
        NA::BatchnormAttributes => {
            norm::parse_batchnorm(node, &cx("batchnorm")).map(Op::BnTraining)
        }
        NA::LayernormAttributes => norm::parse_layernorm(node, &cx("layernorm")).map(Op::Layernorm),
        NA::RMSNormAttributes => norm::parse_rmsnorm(node, &cx("rmsnorm")).map(Op::Rmsnorm),
        NA::BatchnormBackwardAttributes => {
            norm::parse_batchnorm_backward(node, &cx("batchnorm_backward")).map(Op::NormBackward)
        }
        NA::LayernormBackwardAttributes => {
            norm::parse_layernorm_backward(node, &cx("layernorm_backward")).map(Op::NormBackward)
        }
        NA::RMSNormBackwardAttributes => {
            norm::parse_rmsnorm_backward(node, &cx("rmsnorm_backward")).map(Op::NormBackward)
        }
        NA::ReductionAttributes => reduction::parse(node, &cx("reduction")).map(Op::Reduction),
        NA::ResampleFwdAttributes => resample::parse(node, &cx("resample_fwd")).map(Op::Resample),
        NA::ResampleBwdAttributes => {
            resample::parse_bwd(node, &cx("resample_bwd")).map(Op::ResampleBwd)
        }
        NA::SdpaAttributes => sdpa::parse(node, &cx("sdpa")).map(Op::Sdpa),
        NA::SdpaBackwardAttributes => {
            sdpa::parse_backward(node, &cx("sdpa_backward")).map(Op::SdpaBackward)
        }
        NA::CustomOpAttributes => gather::parse(node, &cx("custom_op")).map(Op::Gather),
        NA::BlockScaleQuantizeAttributes => {
            block_scale::parse_quantize(node, &cx("block_scale_quantize")).map(Op::BlockQuantize)
        }
        NA::BlockScaleDequantizeAttributes => {
            block_scale::parse_dequantize(node, &cx("block_scale_dequantize"))
                .map(Op::BlockDequantize)
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
    /// `INVALID_VALUE` for an unreadable `TensorValue` or a tensor whose dims × strides
    /// overflow ([`TensorDesc::check_extents`], naming the tensor).
    /// Whether a conv fprop or dgrad step may run Winograd
    /// ([`crate::reference::ops::conv::may_use_winograd`] on its filter's dims): the engine's
    /// `WINOGRAD` numerical note.
    pub fn may_use_winograd(&self) -> bool {
        use crate::reference::ops::conv::may_use_winograd;
        self.steps.iter().any(|s| {
            let (geo, x, w) = match &s.op {
                Op::ConvFprop(c) => (&c.geo, c.x, c.w),
                Op::ConvDgrad(c) => (&c.geo, c.dx, c.w),
                _ => return false,
            };
            let (xd, wd) = (&self.tensors[&x].dims, &self.tensors[&w].dims);
            if xd.len() != 4 || wd.len() != 4 || wd[1] == 0 {
                return false;
            }
            may_use_winograd(geo, xd[1], wd[0], xd[1] / wd[1], &wd[2..])
        })
    }

    pub fn from_graph(graph: &Graph<'_>) -> PluginResult<Plan> {
        let tensors = read_tensors(graph)?;
        Self::from_tensors(graph, tensors)
    }

    /// The plan of `graph` at the shapes one execute gives (RFC 0008 phase 1): `overrides` are
    /// checked against the built shapes ([`reshape::check`]), applied, every virtual tensor is
    /// derived again ([`reshape::apply`]), and the graph is parsed at those shapes as
    /// [`Plan::from_graph`] parses it at the built ones (same steps, tiling and fusion rules, so
    /// the same bits as a build at those shapes).
    ///
    /// # Errors
    /// `BAD_PARAM` with a message starting `shape override` for an override that breaks a rule,
    /// a virtual shape this engine does not derive, or shapes a node refuses (its message
    /// kept); the errors of [`Plan::from_graph`] for the built graph.
    pub fn with_overrides(graph: &Graph<'_>, overrides: &[ShapeOverride]) -> PluginResult<Plan> {
        let mut tensors = read_tensors(graph)?;
        reshape::check(&tensors, overrides)?;
        let steps = parse_steps(graph, &tensors)?;
        reshape::apply(&steps, &mut tensors, overrides)?;
        Self::from_tensors(graph, tensors).map_err(|e| {
            PluginError::bad_param(format!(
                "shape override: the graph does not run at these shapes: {}",
                e.message
            ))
        })
    }

    fn from_tensors(graph: &Graph<'_>, tensors: HashMap<i64, TensorDesc>) -> PluginResult<Plan> {
        let ops = parse_steps(graph, &tensors)?;
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
        let steps = fuse_epilogues(steps, &tensors);
        let steps = fuse_softmax(steps, &tensors);
        let last_use = last_uses(&steps);
        let (outputs, needed) = bindings_of(&steps, &tensors);
        let inline = steps
            .iter()
            .fold(0usize, |a, s| a.saturating_add(work(&s.op, &tensors)))
            <= INLINE_WORK;
        Ok(Plan {
            tensors,
            steps,
            last_use,
            outputs,
            needed,
            inline,
        })
    }
}
