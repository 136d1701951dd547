//! Graph → execution DAG of the CPU reference engine: reads the `Graph` FlatBuffer once into
//! owned steps in topological order, checking every op, attribute, shape and data type.
//!
//! Owns applicability: anything the engine cannot run is refused here with
//! `NOT_APPLICABLE` and a message naming the op, the attribute and its value. It never
//! touches buffers (see [`super::exec`]). The per-op checks live in [`super::nodes`] (one
//! file per op kind); this file holds the step list, the shared checking context [`Cx`], the
//! dispatcher and the topological sort.

use super::dtype::Elem;
use super::nodes::conv::{ConvDgradStep, ConvFpropStep, ConvWgradStep};
use super::nodes::gather::GatherStep;
use super::nodes::matmul::MatmulStep;
use super::nodes::norm::{BnInferenceStep, BnTrainingStep, LayernormStep, RmsnormStep};
use super::nodes::pointwise::PointwiseStep;
use super::nodes::reduction::ReductionStep;
use super::nodes::resample::ResampleStep;
use super::nodes::sdpa::SdpaStep;
use super::nodes::{conv, gather, matmul, norm, pointwise, reduction, resample, sdpa};
use super::tensor::{TensorDesc, tensor_value_f32};
use hipdnn_backend::ops::broadcast::broadcasts_to;
use hipdnn_backend::ops::conv::SpatialAttr;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::{Graph, Node, NodeAttributes as NA};
use hipdnn_schema::tensor_value::read_tensor_value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;

/// One op of the execution DAG, with tensor UIDs (the step types live in [`super::nodes`]).
#[derive(Debug, Clone)]
pub enum Op {
    /// Pointwise.
    Pointwise(PointwiseStep),
    /// Convolution forward.
    ConvFprop(ConvFpropStep),
    /// Convolution data gradient.
    ConvDgrad(ConvDgradStep),
    /// Convolution filter gradient.
    ConvWgrad(ConvWgradStep),
    /// Matmul.
    Matmul(MatmulStep),
    /// Batchnorm inference.
    BnInference(BnInferenceStep),
    /// Batchnorm training forward.
    BnTraining(BnTrainingStep),
    /// Layernorm forward.
    Layernorm(LayernormStep),
    /// RMSNorm forward.
    Rmsnorm(RmsnormStep),
    /// Reduction.
    Reduction(ReductionStep),
    /// Resample (pooling) forward.
    Resample(ResampleStep),
    /// SDPA forward.
    Sdpa(SdpaStep),
    /// Row gather (the `hipdnn_rs.gather` custom op).
    Gather(GatherStep),
}

macro_rules! each_step {
    ($op:expr, $s:ident => $e:expr) => {
        match $op {
            Op::Pointwise($s) => $e,
            Op::ConvFprop($s) => $e,
            Op::ConvDgrad($s) => $e,
            Op::ConvWgrad($s) => $e,
            Op::Matmul($s) => $e,
            Op::BnInference($s) => $e,
            Op::BnTraining($s) => $e,
            Op::Layernorm($s) => $e,
            Op::Rmsnorm($s) => $e,
            Op::Reduction($s) => $e,
            Op::Resample($s) => $e,
            Op::Sdpa($s) => $e,
            Op::Gather($s) => $e,
        }
    };
}

impl Op {
    /// UIDs this op reads.
    pub fn inputs(&self) -> Vec<i64> {
        each_step!(self, s => s.inputs())
    }

    /// UIDs this op writes.
    pub fn outputs(&self) -> Vec<i64> {
        each_step!(self, s => s.outputs())
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

/// Checking context of one node: the graph's tensors, the op's name for messages (`conv_fprop`)
/// and the node's name. Every refusal it builds is `NOT_APPLICABLE`.
pub(super) struct Cx<'a> {
    /// Every graph tensor by UID.
    pub(super) tensors: &'a HashMap<i64, TensorDesc>,
    op: &'static str,
    name: String,
}

impl Cx<'_> {
    /// `<op> '<name>': <attr> <value> is not supported by the CPU reference engine`.
    pub(super) fn refuse(&self, attr: &str, value: impl Display) -> PluginError {
        na(format!(
            "{} '{}': {attr} {value} is not supported by the CPU reference engine",
            self.op, self.name
        ))
    }
    /// `<op> '<name>': <what>`.
    pub(super) fn bad(&self, what: impl Display) -> PluginError {
        na(format!("{} '{}': {what}", self.op, self.name))
    }
    /// The tensor `uid`, refused when the graph has none.
    pub(super) fn t(&self, attr: &str, uid: i64) -> PluginResult<&TensorDesc> {
        self.tensors
            .get(&uid)
            .ok_or_else(|| self.bad(format!("{attr} {uid} names no tensor of the graph")))
    }
    /// As [`Cx::t`], refused unless the tensor's data type is a float type.
    pub(super) fn float(&self, attr: &str, uid: i64) -> PluginResult<&TensorDesc> {
        let t = self.t(attr, uid)?;
        if !t.elem.is_float() {
            return Err(self.refuse(
                &format!("{attr} (uid {uid}) data_type"),
                format!("{:?}", t.elem),
            ));
        }
        Ok(t)
    }
    /// An optional tensor UID, checked when present.
    pub(super) fn opt(&self, attr: &str, uid: Option<i64>) -> PluginResult<Option<i64>> {
        match uid {
            Some(u) => self.t(attr, u).map(|_| Some(u)),
            None => Ok(None),
        }
    }
    /// Refuses an attribute the engine does not implement when it is set.
    pub(super) fn refuse_set(&self, attr: &str, uid: Option<i64>) -> PluginResult<()> {
        match uid {
            Some(u) => Err(self.refuse(attr, format!("(uid {u})"))),
            None => Ok(()),
        }
    }
    /// Refuses a tensor whose dims differ from `want`.
    pub(super) fn dims_eq(&self, attr: &str, t: &TensorDesc, want: &[usize]) -> PluginResult<()> {
        if t.dims != want {
            return Err(self.bad(format!(
                "{attr} (uid {}) dims {:?} differ from the expected {want:?}",
                t.uid, t.dims
            )));
        }
        Ok(())
    }
    /// Refuses a tensor whose dims do not broadcast to `to` (op table rule).
    pub(super) fn bcast(&self, attr: &str, t: &TensorDesc, to: &[usize]) -> PluginResult<()> {
        if !broadcasts_to(&t.dims, to) {
            return Err(self.bad(format!(
                "{attr} (uid {}) dims {:?} do not broadcast to {to:?}",
                t.uid, t.dims
            )));
        }
        Ok(())
    }
    /// A spatial list attribute: `n` entries, each at least the op table's minimum; the
    /// table's default entry for every dim when the list is absent.
    pub(super) fn spatial(
        &self,
        attr: SpatialAttr,
        v: Option<flatbuffers::Vector<'_, i64>>,
        n: usize,
    ) -> PluginResult<Vec<usize>> {
        let Some(v) = v else {
            return Ok(vec![attr.default_entry() as usize; n]);
        };
        let vals: Vec<i64> = v.iter().collect();
        if vals.len() != n {
            return Err(self.bad(format!(
                "{} {vals:?} has {} entries, expected {n} (one per spatial dim)",
                attr.name(),
                vals.len()
            )));
        }
        if attr.first_bad_entry(&vals).is_some() {
            return Err(self.refuse(attr.name(), format!("{vals:?}")));
        }
        Ok(vals.into_iter().map(|x| x as usize).collect())
    }
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

fn parse_node(node: &Node<'_>, tensors: &HashMap<i64, TensorDesc>) -> PluginResult<Op> {
    let name = node.name().unwrap_or("").to_string();
    let cx = |op: &'static str| Cx {
        tensors,
        op,
        name: name.clone(),
    };
    match node.attributes_type() {
        NA::PointwiseAttributes => pointwise::parse(node, &cx("pointwise")),
        NA::ConvolutionFwdAttributes => conv::parse_fprop(node, &cx("conv_fprop")),
        NA::ConvolutionBwdAttributes => conv::parse_dgrad(node, &cx("conv_dgrad")),
        NA::ConvolutionWrwAttributes => conv::parse_wgrad(node, &cx("conv_wgrad")),
        NA::MatmulAttributes => matmul::parse(node, &cx("matmul")),
        NA::BatchnormInferenceAttributes | NA::BatchnormInferenceAttributesVarianceExt => {
            norm::parse_batchnorm_inference(node, &cx("batchnorm_inference"))
        }
        NA::BatchnormAttributes => norm::parse_batchnorm(node, &cx("batchnorm")),
        NA::LayernormAttributes => norm::parse_layernorm(node, &cx("layernorm")),
        NA::RMSNormAttributes => norm::parse_rmsnorm(node, &cx("rmsnorm")),
        NA::ReductionAttributes => reduction::parse(node, &cx("reduction")),
        NA::ResampleFwdAttributes => resample::parse(node, &cx("resample_fwd")),
        NA::SdpaAttributes => sdpa::parse(node, &cx("sdpa")),
        NA::CustomOpAttributes => gather::parse(node, &cx("custom_op")),
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
        let steps = conv::fuse_epilogues(steps, &tensors);
        Ok(Plan { tensors, steps })
    }
}
