//! Engine-override files: upstream hipDNN's `SelectionHeuristic::Config` policy, the JSON
//! rules read through `HIPDNN_HEUR_CONFIG_PATH` that put a chosen engine first for graphs of a
//! given operation and shape — and the file autotuning writes its winners to (RFC 0013 § 6.5).
//!
//! # Format (upstream's, version 2)
//! ```json
//! { "version": 2,
//!   "engine_overrides": [
//!     { "op": "conv_fprop",
//!       "criteria": { "pointwise_mode": 1 },
//!       "engine_name": "hipkernel.ingestor.gpu",
//!       "tensors": [ { "tensor_id": "x_tensor_uid", "dim": [8, 64, 56, 56], "stride": [...] },
//!                    { "tensor_id": "w_tensor_uid", "dim": [64, 64, 3, 3] } ],
//!       "autotune_metadata": { "knobs": [ { "knob_id": "hipkernel.kernel", "type": "int",
//!                                            "value": 123 } ], ... } } ] }
//! ```
//! A graph's *match key* is built from its primary node (priority conv 70 > SDPA 60 > matmul
//! 50 > batchnorm 40 > norms 30 > reduction = resample 20 > pointwise 10; every node of the
//! highest priority present is tried in graph order): the op name, the criteria of that op
//! (norm phase, reduction/resample/padding/pointwise mode, as integers) and its tensors, named
//! by their schema field (`x_tensor_uid`, …). A rule matches when op and criteria are equal and
//! every tensor pattern matches the key tensor of the same `tensor_id` (order free; version 1
//! files, without `version`, match by position), `dim`/`stride` slot by slot with `-1` as a
//! wildcard and `stride` optional. Rules are tried in file order; the first match wins.
//!
//! # What hipdnn-rs adds (upstream's reader ignores these fields)
//! - `"device_arch"` on an entry: the rule applies only on a device of that architecture
//!   (`sm_90`, `gfx942`, or `cpu` for the CPU engine); absent, on any.
//! - `"data_type"` on a tensor pattern (schema name, e.g. `"HALF"`): absent, any.
//! - The winner's knobs (`autotune_metadata.knobs`, informational upstream) are applied: each
//!   `knob_id` must name a knob of the engine ([`crate::KnobInfo::name`]) with an `"int"` value
//!   in its range, else the rule is not used at all (never half-applied) and a warning says
//!   why.
//!
//! A file that cannot be read or parsed, or any entry of it that is malformed, makes the whole
//! file ignored with one warning per file content; builds then use the engines' own order.

use crate::engine::{Engine, EngineConfig};
use crate::graph::OperationGraph;
use hipdnn_schema::graph as fb;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

/// Environment variable naming the engine-override file (upstream's name).
pub const HEUR_CONFIG_ENV: &str = "HIPDNN_HEUR_CONFIG_PATH";

/// The file format version this reader understands best and the autotune writer emits
/// (upstream's `NAMED_TENSOR_IDS`).
pub const CURRENT_VERSION: i64 = 2;

/// `device_arch` value of rules for the CPU engine.
pub const CPU_ARCH: &str = "cpu";

/// One tensor of a graph's match key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTensor {
    /// Schema field naming the tensor's role, e.g. `x_tensor_uid`.
    pub tensor_id: &'static str,
    /// Dims.
    pub dims: Vec<i64>,
    /// Strides.
    pub strides: Vec<i64>,
    /// Schema name of the data type, e.g. `HALF`.
    pub data_type: &'static str,
}

/// The match key of one node of a graph (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchKey {
    /// Operation name, e.g. `conv_fprop`.
    pub op: &'static str,
    /// Criteria as `(name, value)`, sorted by name.
    pub criteria: Vec<(&'static str, i64)>,
    /// The tensors in upstream's order for the op.
    pub tensors: Vec<KeyTensor>,
    /// Priority of the op (conv 70 … pointwise 10).
    pub priority: u8,
}

/// Something that may be a tensor UID: required fields are `i64`, optional ones `Option<i64>`.
trait MaybeUid {
    fn uid(self) -> Option<i64>;
}
impl MaybeUid for i64 {
    fn uid(self) -> Option<i64> {
        Some(self)
    }
}
impl MaybeUid for Option<i64> {
    fn uid(self) -> Option<i64> {
        self
    }
}

/// Builds one key: `req` tensors must exist, `opt` ones are added when present.
struct KeyBuilder<'g> {
    tensors: &'g HashMap<i64, KeyTensor>,
    key: MatchKey,
    ok: bool,
}

impl<'g> KeyBuilder<'g> {
    fn new(tensors: &'g HashMap<i64, KeyTensor>, op: &'static str, priority: u8) -> Self {
        KeyBuilder {
            tensors,
            key: MatchKey {
                op,
                criteria: Vec::new(),
                tensors: Vec::new(),
                priority,
            },
            ok: true,
        }
    }
    fn req(mut self, id: &'static str, uid: impl MaybeUid) -> Self {
        match uid.uid().and_then(|u| self.tensors.get(&u)) {
            Some(t) => self.key.tensors.push(KeyTensor {
                tensor_id: id,
                ..t.clone()
            }),
            None => self.ok = false,
        }
        self
    }
    fn opt(mut self, id: &'static str, uid: impl MaybeUid) -> Self {
        if let Some(u) = uid.uid() {
            match self.tensors.get(&u) {
                Some(t) => self.key.tensors.push(KeyTensor {
                    tensor_id: id,
                    ..t.clone()
                }),
                None => self.ok = false,
            }
        }
        self
    }
    fn criterion(mut self, name: &'static str, value: i64) -> Self {
        self.key.criteria.push((name, value));
        self
    }
    fn done(mut self) -> Option<MatchKey> {
        self.key.criteria.sort();
        self.ok.then_some(self.key)
    }
}

fn key_for_node(node: &fb::Node<'_>, t: &HashMap<i64, KeyTensor>) -> Option<MatchKey> {
    let k = |op, priority| KeyBuilder::new(t, op, priority);
    if let Some(a) = node.attributes_as_convolution_fwd_attributes() {
        return k("conv_fprop", 70)
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("w_tensor_uid", a.w_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_convolution_bwd_attributes() {
        return k("conv_dgrad", 70)
            .req("dy_tensor_uid", a.dy_tensor_uid())
            .req("w_tensor_uid", a.w_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_convolution_wrw_attributes() {
        return k("conv_wgrad", 70)
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("dy_tensor_uid", a.dy_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_sdpa_attributes() {
        return k("sdpa_fwd", 60)
            .req("q_tensor_uid", a.q_tensor_uid())
            .req("k_tensor_uid", a.k_tensor_uid())
            .req("v_tensor_uid", a.v_tensor_uid())
            .opt("scale_tensor_uid", a.scale_tensor_uid())
            .opt("attn_mask_tensor_uid", a.attn_mask_tensor_uid())
            .opt("seq_len_q_tensor_uid", a.seq_len_q_tensor_uid())
            .opt("seq_len_kv_tensor_uid", a.seq_len_kv_tensor_uid())
            .opt("seed_tensor_uid", a.seed_tensor_uid())
            .opt("offset_tensor_uid", a.offset_tensor_uid())
            .opt("dropout_mask_tensor_uid", a.dropout_mask_tensor_uid())
            .opt("dropout_scale_tensor_uid", a.dropout_scale_tensor_uid())
            .opt("page_table_k_tensor_uid", a.page_table_k_tensor_uid())
            .opt("page_table_v_tensor_uid", a.page_table_v_tensor_uid())
            .opt("block_mask_tensor_uid", a.block_mask_tensor_uid())
            .opt("sink_token_tensor_uid", a.sink_token_tensor_uid())
            .opt("descale_q_tensor_uid", a.descale_q_tensor_uid())
            .opt("descale_k_tensor_uid", a.descale_k_tensor_uid())
            .opt("descale_v_tensor_uid", a.descale_v_tensor_uid())
            .opt("descale_s_tensor_uid", a.descale_s_tensor_uid())
            .opt("scale_s_tensor_uid", a.scale_s_tensor_uid())
            .opt("scale_o_tensor_uid", a.scale_o_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_sdpa_backward_attributes() {
        return k("sdpa_bwd", 60)
            .req("q_tensor_uid", a.q_tensor_uid())
            .req("k_tensor_uid", a.k_tensor_uid())
            .req("v_tensor_uid", a.v_tensor_uid())
            .req("o_tensor_uid", a.o_tensor_uid())
            .req("do_tensor_uid", a.do_tensor_uid())
            .req("stats_tensor_uid", a.stats_tensor_uid())
            .opt("scale_tensor_uid", a.scale_tensor_uid())
            .opt("attn_mask_tensor_uid", a.attn_mask_tensor_uid())
            .opt("seq_len_q_tensor_uid", a.seq_len_q_tensor_uid())
            .opt("seq_len_kv_tensor_uid", a.seq_len_kv_tensor_uid())
            .opt("seed_tensor_uid", a.seed_tensor_uid())
            .opt("offset_tensor_uid", a.offset_tensor_uid())
            .opt("dropout_mask_tensor_uid", a.dropout_mask_tensor_uid())
            .opt("dropout_scale_tensor_uid", a.dropout_scale_tensor_uid())
            .opt(
                "dropout_scale_inv_tensor_uid",
                a.dropout_scale_inv_tensor_uid(),
            )
            .done();
    }
    if let Some(a) = node.attributes_as_matmul_attributes() {
        return k("matmul", 50)
            .req("a_tensor_uid", a.a_tensor_uid())
            .req("b_tensor_uid", a.b_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_batchnorm_attributes() {
        return k("batchnorm_training", 40)
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .req("bias_tensor_uid", a.bias_tensor_uid())
            .req("epsilon_tensor_uid", a.epsilon_tensor_uid())
            .opt(
                "prev_running_mean_tensor_uid",
                a.prev_running_mean_tensor_uid(),
            )
            .opt(
                "prev_running_variance_tensor_uid",
                a.prev_running_variance_tensor_uid(),
            )
            .opt("momentum_tensor_uid", a.momentum_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_batchnorm_inference_attributes() {
        return k("batchnorm_inference", 40)
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("mean_tensor_uid", a.mean_tensor_uid())
            .req("inv_variance_tensor_uid", a.inv_variance_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .req("bias_tensor_uid", a.bias_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_batchnorm_inference_attributes_variance_ext() {
        return k("batchnorm_inference_variance_ext", 40)
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("mean_tensor_uid", a.mean_tensor_uid())
            .req("variance_tensor_uid", a.variance_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .req("bias_tensor_uid", a.bias_tensor_uid())
            .req("epsilon_tensor_uid", a.epsilon_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_batchnorm_backward_attributes() {
        return k("batchnorm_backward", 40)
            .req("dy_tensor_uid", a.dy_tensor_uid())
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .opt("mean_tensor_uid", a.mean_tensor_uid())
            .opt("inv_variance_tensor_uid", a.inv_variance_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_layernorm_attributes() {
        return k("layernorm", 30)
            .criterion("norm_fwd_phase", i64::from(a.forward_phase().0))
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .req("bias_tensor_uid", a.bias_tensor_uid())
            .req("epsilon_tensor_uid", a.epsilon_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_rmsnorm_attributes() {
        return k("rmsnorm", 30)
            .criterion("norm_fwd_phase", i64::from(a.forward_phase().0))
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .req("epsilon_tensor_uid", a.epsilon_tensor_uid())
            .opt("bias_tensor_uid", a.bias_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_rmsnorm_backward_attributes() {
        return k("rmsnorm_backward", 30)
            .req("dy_tensor_uid", a.dy_tensor_uid())
            .req("x_tensor_uid", a.x_tensor_uid())
            .req("scale_tensor_uid", a.scale_tensor_uid())
            .req("inv_rms_tensor_uid", a.inv_rms_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_reduction_attributes() {
        return k("reduction", 20)
            .criterion("reduction_mode", i64::from(a.mode().0))
            .req("in_tensor_uid", a.in_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_resample_fwd_attributes() {
        return k("resample_fwd", 20)
            .criterion("resample_mode", i64::from(a.resample_mode().0))
            .criterion("padding_mode", i64::from(a.padding_mode().0))
            .req("x_tensor_uid", a.x_tensor_uid())
            .done();
    }
    if let Some(a) = node.attributes_as_pointwise_attributes() {
        return k("pointwise", 10)
            .criterion("pointwise_mode", i64::from(a.operation().0))
            .req("in_0_tensor_uid", a.in_0_tensor_uid())
            .opt("in_1_tensor_uid", a.in_1_tensor_uid())
            .opt("in_2_tensor_uid", a.in_2_tensor_uid())
            .done();
    }
    None
}

/// The match keys a rule is tried against for `graph`: those of every node of the highest
/// priority present, in graph order (the first one is the key autotuning writes). Empty when
/// no node has a key (block-scale, MoE and custom ops have none upstream either).
pub fn match_keys(graph: &OperationGraph) -> Vec<MatchKey> {
    let g = graph.graph();
    let mut tensors = HashMap::new();
    for t in g.tensors().into_iter().flatten() {
        tensors.insert(
            t.uid(),
            KeyTensor {
                tensor_id: "",
                dims: t.dims().map(|v| v.iter().collect()).unwrap_or_default(),
                strides: t.strides().map(|v| v.iter().collect()).unwrap_or_default(),
                data_type: t.data_type().variant_name().unwrap_or("UNKNOWN"),
            },
        );
    }
    let keys: Vec<MatchKey> = g
        .nodes()
        .into_iter()
        .flatten()
        .filter_map(|n| key_for_node(&n, &tensors))
        .collect();
    let best = keys.iter().map(|k| k.priority).max().unwrap_or(0);
    keys.into_iter().filter(|k| k.priority == best).collect()
}

/// One tensor pattern of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorPattern {
    /// Role name (`tensor_id`); `None` in version-1 files.
    pub tensor_id: Option<String>,
    /// Dims, `-1` = any.
    pub dims: Vec<i64>,
    /// Strides, `-1` = any; empty = not compared.
    pub strides: Vec<i64>,
    /// Data type schema name (hipdnn-rs extension); `None` = any.
    pub data_type: Option<String>,
}

impl TensorPattern {
    fn matches(&self, t: &KeyTensor) -> bool {
        let slots = |p: &[i64], v: &[i64]| {
            p.len() == v.len() && p.iter().zip(v).all(|(&p, &v)| p == -1 || p == v)
        };
        slots(&self.dims, &t.dims)
            && (self.strides.is_empty() || slots(&self.strides, &t.strides))
            && self.data_type.as_deref().is_none_or(|d| d == t.data_type)
    }
}

/// One knob of a rule's winner (`autotune_metadata.knobs[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct RuleKnob {
    /// `knob_id`: the knob's name.
    pub name: String,
    /// The value; only `"int"` knobs can be applied here.
    pub value: Value,
    /// `type`: `"int"`, `"double"` or `"string"`.
    pub kind: String,
}

/// One rule (an `engine_overrides` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct OverrideRule {
    /// Operation name.
    pub op: String,
    /// Engine name, or an engine id written as a decimal integer.
    pub engine_name: String,
    /// Criteria, sorted by name.
    pub criteria: Vec<(String, i64)>,
    /// Tensor patterns.
    pub tensors: Vec<TensorPattern>,
    /// Match tensors by `tensor_id` (version ≥ 2) rather than by position.
    pub named: bool,
    /// Device architecture the rule is for (extension); `None` = any.
    pub device_arch: Option<String>,
    /// The winner's knobs.
    pub knobs: Vec<RuleKnob>,
}

impl OverrideRule {
    /// True when this rule matches `key` on a device of `arch`.
    pub fn matches(&self, key: &MatchKey, arch: Option<&str>) -> bool {
        if self.op != key.op
            || self.criteria.len() != key.criteria.len()
            || self.tensors.len() != key.tensors.len()
            || self
                .criteria
                .iter()
                .zip(&key.criteria)
                .any(|(a, b)| a.0 != b.0 || a.1 != b.1)
        {
            return false;
        }
        if let Some(want) = &self.device_arch
            && arch.is_none_or(|a| a != want)
        {
            return false;
        }
        if !self.named {
            return self
                .tensors
                .iter()
                .zip(&key.tensors)
                .all(|(p, t)| p.matches(t));
        }
        let mut used = vec![false; key.tensors.len()];
        self.tensors.iter().all(|p| {
            let Some(id) = &p.tensor_id else { return false };
            let hit = key
                .tensors
                .iter()
                .enumerate()
                .find(|(i, t)| !used[*i] && t.tensor_id == id && p.matches(t));
            hit.map(|(i, _)| used[i] = true).is_some()
        })
    }

    /// The engine config this rule asks for on `engines`: the engine named (by name or decimal
    /// id) and the rule's knobs as its knob choices.
    ///
    /// # Errors
    /// A sentence saying why the rule cannot be applied: no such engine among `engines`, or a
    /// knob the engine does not have, of a type other than `int`, or out of its range.
    pub fn engine_config(
        &self,
        engines: &[Arc<dyn Engine>],
        graph: &OperationGraph,
    ) -> Result<EngineConfig, String> {
        let engine = engines
            .iter()
            .find(|e| e.name() == self.engine_name || self.engine_name.parse() == Ok(e.id()))
            .ok_or_else(|| {
                format!(
                    "it names engine \"{}\", which does not serve this graph on this handle",
                    self.engine_name
                )
            })?;
        let offered = engine.knobs(graph);
        let mut knob_choices = Vec::new();
        for k in &self.knobs {
            let info = offered.iter().find(|i| i.name == k.name).ok_or_else(|| {
                format!(
                    "knob \"{}\" is not a knob of engine \"{}\"",
                    k.name,
                    engine.name()
                )
            })?;
            let v = match (k.kind.as_str(), k.value.as_i64()) {
                ("int", Some(v)) if (info.min..=info.max).contains(&v) => v,
                _ => {
                    return Err(format!(
                        "knob \"{}\" = {} ({}) is not an int in [{}, {}]",
                        k.name, k.value, k.kind, info.min, info.max
                    ));
                }
            };
            knob_choices.push((info.knob_type, v));
        }
        Ok(EngineConfig {
            engine_id: engine.id(),
            knob_choices,
        })
    }
}

/// A parsed engine-override file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EngineOverrideConfig {
    /// The file's `version` (1 when absent).
    pub version: i64,
    /// The rules in file order.
    pub rules: Vec<OverrideRule>,
}

fn field<'v>(v: &'v Value, key: &str, at: &str) -> Result<&'v Value, String> {
    v.get(key)
        .ok_or_else(|| format!("{at}: the \"{key}\" field is missing"))
}

fn str_field(v: &Value, key: &str, at: &str) -> Result<String, String> {
    field(v, key, at)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{at}: \"{key}\" is not a string"))
}

fn int_list(v: &Value, key: &str, at: &str) -> Result<Vec<i64>, String> {
    field(v, key, at)?
        .as_array()
        .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| format!("{at}: \"{key}\" is not a list of integers"))
}

impl EngineOverrideConfig {
    /// Parses a whole file.
    ///
    /// # Errors
    /// A message naming the first problem: not JSON, no `engine_overrides` list, a `version`
    /// that is not an integer or is newer than [`CURRENT_VERSION`], or an entry without `op`,
    /// `engine_name` or `tensors`, with a non-object `criteria`, a criterion that is not an
    /// integer, a tensor without an integer `dim` list, or a malformed knob. The file is then
    /// used not at all.
    pub fn parse(text: &str) -> Result<Self, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let version = match root.get("version") {
            None => 1,
            Some(v) => v
                .as_i64()
                .ok_or_else(|| "\"version\" is not an integer".to_string())?,
        };
        if !(1..=CURRENT_VERSION).contains(&version) {
            return Err(format!(
                "version {version} is not one this build reads (1 to {CURRENT_VERSION})"
            ));
        }
        let entries = root
            .get("engine_overrides")
            .and_then(Value::as_array)
            .ok_or_else(|| "the \"engine_overrides\" list is missing".to_string())?;
        let mut rules = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let at = format!("engine_overrides[{i}]");
            let mut criteria = Vec::new();
            if let Some(c) = e.get("criteria") {
                let c = c
                    .as_object()
                    .ok_or_else(|| format!("{at}: \"criteria\" is not an object"))?;
                for (k, v) in c {
                    let v = v
                        .as_i64()
                        .ok_or_else(|| format!("{at}: criterion \"{k}\" is not an integer"))?;
                    criteria.push((k.clone(), v));
                }
            }
            criteria.sort();
            let mut tensors = Vec::new();
            let list = field(e, "tensors", &at)?
                .as_array()
                .ok_or_else(|| format!("{at}: \"tensors\" is not a list"))?;
            for (j, t) in list.iter().enumerate() {
                let at = format!("{at}.tensors[{j}]");
                tensors.push(TensorPattern {
                    tensor_id: match t.get("tensor_id") {
                        None => None,
                        Some(_) => Some(str_field(t, "tensor_id", &at)?),
                    },
                    dims: int_list(t, "dim", &at)?,
                    strides: match t.get("stride") {
                        None => Vec::new(),
                        Some(_) => int_list(t, "stride", &at)?,
                    },
                    data_type: match t.get("data_type") {
                        None => None,
                        Some(_) => Some(str_field(t, "data_type", &at)?),
                    },
                });
            }
            let mut knobs = Vec::new();
            if let Some(list) = e.get("autotune_metadata").and_then(|m| m.get("knobs")) {
                let list = list
                    .as_array()
                    .ok_or_else(|| format!("{at}: \"autotune_metadata.knobs\" is not a list"))?;
                for (j, k) in list.iter().enumerate() {
                    let at = format!("{at}.autotune_metadata.knobs[{j}]");
                    knobs.push(RuleKnob {
                        name: str_field(k, "knob_id", &at)?,
                        kind: str_field(k, "type", &at)?,
                        value: field(k, "value", &at)?.clone(),
                    });
                }
            }
            rules.push(OverrideRule {
                op: str_field(e, "op", &at)?,
                engine_name: str_field(e, "engine_name", &at)?,
                criteria,
                tensors,
                named: version >= 2,
                device_arch: match e.get("device_arch") {
                    None => None,
                    Some(_) => Some(str_field(e, "device_arch", &at)?),
                },
                knobs,
            });
        }
        Ok(EngineOverrideConfig { version, rules })
    }

    /// The first rule matching one of `keys` (tried in order) on a device of `arch`.
    pub fn find(&self, keys: &[MatchKey], arch: Option<&str>) -> Option<(usize, &OverrideRule)> {
        keys.iter().find_map(|k| {
            self.rules
                .iter()
                .enumerate()
                .find(|(_, r)| r.matches(k, arch))
        })
    }
}

/// Where a handle reads its engine-override file from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OverrideSource {
    /// The file [`HEUR_CONFIG_ENV`] names at each heuristic query (none when unset or empty;
    /// the default, as upstream).
    #[default]
    Environment,
    /// This file.
    File(PathBuf),
    /// No file.
    Disabled,
}

impl OverrideSource {
    /// The path this source names now, if any.
    pub fn path(&self) -> Option<PathBuf> {
        match self {
            OverrideSource::Environment => std::env::var_os(HEUR_CONFIG_ENV)
                .map(PathBuf::from)
                .filter(|p| !p.as_os_str().is_empty()),
            OverrideSource::File(p) => Some(p.clone()),
            OverrideSource::Disabled => None,
        }
    }
}

type Loaded = Option<Arc<EngineOverrideConfig>>;

/// Parsed files by path, with the exact bytes they were parsed from: a file is parsed, and a
/// damaged one warned about, once per content. The key is the content itself, not a file
/// stamp: a file rewritten in place with the same length within one timestamp tick is still
/// seen (a cache key that misses a property is issue 37's class 7).
static CACHE: LazyLock<Mutex<ParsedFiles>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// (path, reason) of unreadable files already warned about.
static UNREADABLE: LazyLock<Mutex<std::collections::HashSet<(PathBuf, String)>>> =
    LazyLock::new(|| Mutex::new(std::collections::HashSet::new()));

/// Path → (the bytes parsed, what they parsed to).
type ParsedFiles = HashMap<PathBuf, (Vec<u8>, Loaded)>;

/// The parsed file at `path`, or `None` when it is missing or empty (logged at DEBUG: no
/// rules), unreadable (a directory, no permission: a WARN, once per path and reason) or
/// damaged (a WARN naming the problem, once per content). Reads the file on every call (one
/// small read per build) and parses it only when its bytes changed.
pub fn load(path: &Path) -> Option<Arc<EngineOverrideConfig>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log::debug!(
                "hipdnn: engine-override file {} does not exist (yet): no rules",
                path.display()
            );
            return None;
        }
        Err(e) => {
            let why = format!("cannot be read: {e}");
            let mut warned = UNREADABLE.lock().unwrap_or_else(|p| p.into_inner());
            if warned.insert((path.to_path_buf(), why.clone())) {
                log::warn!(
                    "hipdnn: engine-override file {} ignored ({HEUR_CONFIG_ENV}): {why}",
                    path.display()
                );
            }
            return None;
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        log::debug!(
            "hipdnn: engine-override file {} is empty: no rules",
            path.display()
        );
        return None;
    }
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((seen, loaded)) = cache.get(path)
        && *seen == bytes
    {
        return loaded.clone();
    }
    let parsed = match std::str::from_utf8(&bytes) {
        Err(e) => Err(format!("not UTF-8: {e}")),
        Ok(text) => EngineOverrideConfig::parse(text),
    };
    let loaded = match parsed {
        Ok(c) => Some(Arc::new(c)),
        Err(why) => {
            log::warn!(
                "hipdnn: engine-override file {} ignored ({HEUR_CONFIG_ENV}): {why}",
                path.display()
            );
            None
        }
    };
    cache.insert(path.to_path_buf(), (bytes, loaded.clone()));
    loaded
}

/// Applies the override file of `source` to `configs` (the engines' order for `graph`): the
/// engine of the first matching rule moves to the front with the rule's knobs. A rule that
/// cannot be applied leaves `configs` as they were, with a WARN naming the rule and why.
pub(crate) fn apply(
    source: &OverrideSource,
    arch: Option<&str>,
    engines: &[Arc<dyn Engine>],
    graph: &OperationGraph,
    configs: &mut Vec<EngineConfig>,
) {
    let Some(path) = source.path() else { return };
    let Some(file) = load(&path) else { return };
    let keys = match_keys(graph);
    let Some((i, rule)) = file.find(&keys, arch) else {
        return;
    };
    let serving: Vec<Arc<dyn Engine>> = engines
        .iter()
        .filter(|e| configs.iter().any(|c| c.engine_id == e.id()))
        .cloned()
        .collect();
    match rule.engine_config(&serving, graph) {
        Ok(config) => {
            log::info!(
                "hipdnn: engine-override file {}: rule engine_overrides[{i}] ({}) picks engine \"{}\"{}",
                path.display(),
                rule.op,
                rule.engine_name,
                if config.knob_choices.is_empty() {
                    String::new()
                } else {
                    format!(" with knobs {:?}", config.knob_choices)
                }
            );
            if config.knob_choices.is_empty() {
                configs.retain(|c| c.engine_id != config.engine_id);
            }
            configs.insert(0, config);
        }
        Err(why) => log::warn!(
            "hipdnn: engine-override file {}: rule engine_overrides[{i}] ({}) not applied: {why}",
            path.display(),
            rule.op
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MatchKey {
        MatchKey {
            op: "conv_fprop",
            criteria: vec![],
            tensors: vec![
                KeyTensor {
                    tensor_id: "x_tensor_uid",
                    dims: vec![8, 64, 56, 56],
                    strides: vec![200704, 1, 3584, 64],
                    data_type: "HALF",
                },
                KeyTensor {
                    tensor_id: "w_tensor_uid",
                    dims: vec![64, 64, 3, 3],
                    strides: vec![576, 1, 192, 64],
                    data_type: "HALF",
                },
            ],
            priority: 70,
        }
    }

    fn rule(text: &str) -> OverrideRule {
        EngineOverrideConfig::parse(text).unwrap().rules.remove(0)
    }

    #[test]
    fn named_tensors_match_in_any_order_with_wildcards_and_the_extensions() {
        let r = rule(
            r#"{"version": 2, "engine_overrides": [{"op": "conv_fprop", "engine_name": "e",
                "tensors": [{"tensor_id": "w_tensor_uid", "dim": [64, -1, 3, 3]},
                            {"tensor_id": "x_tensor_uid", "dim": [-1, 64, 56, 56],
                             "stride": [200704, 1, -1, 64], "data_type": "HALF"}]}]}"#,
        );
        assert!(r.matches(&key(), None));
        let mut k = key();
        k.tensors[0].data_type = "FLOAT";
        assert!(!r.matches(&k, None), "data_type differs");
        let mut k = key();
        k.tensors[0].strides[3] = 1;
        assert!(!r.matches(&k, None), "stride differs");
        let mut k = key();
        k.op = "conv_dgrad";
        assert!(!r.matches(&k, None), "op differs");
        let arch = rule(
            r#"{"version": 2, "engine_overrides": [{"op": "conv_fprop", "engine_name": "e",
                "device_arch": "sm_90",
                "tensors": [{"tensor_id": "x_tensor_uid", "dim": [-1, -1, -1, -1]},
                            {"tensor_id": "w_tensor_uid", "dim": [-1, -1, -1, -1]}]}]}"#,
        );
        assert!(arch.matches(&key(), Some("sm_90")));
        assert!(!arch.matches(&key(), Some("gfx942")));
        assert!(!arch.matches(&key(), None));
    }

    #[test]
    fn version_1_files_match_by_position_and_criteria_must_be_equal() {
        let v1 = rule(
            r#"{"engine_overrides": [{"op": "conv_fprop", "engine_name": "e",
                "tensors": [{"dim": [64, 64, 3, 3]}, {"dim": [8, 64, 56, 56]}]}]}"#,
        );
        assert!(!v1.named);
        assert!(!v1.matches(&key(), None), "swapped positions");
        let v1 = rule(
            r#"{"engine_overrides": [{"op": "conv_fprop", "engine_name": "e",
                "tensors": [{"dim": [8, 64, 56, 56]}, {"dim": [64, 64, 3, 3]}]}]}"#,
        );
        assert!(v1.matches(&key(), None));
        let crit = rule(
            r#"{"version": 2, "engine_overrides": [{"op": "conv_fprop", "engine_name": "e",
                "criteria": {"pointwise_mode": 1},
                "tensors": [{"tensor_id": "x_tensor_uid", "dim": [8, 64, 56, 56]},
                            {"tensor_id": "w_tensor_uid", "dim": [64, 64, 3, 3]}]}]}"#,
        );
        assert!(!crit.matches(&key(), None));
        let mut k = key();
        k.criteria = vec![("pointwise_mode", 1)];
        assert!(crit.matches(&k, None));
    }

    #[test]
    fn a_malformed_file_names_its_first_problem() {
        for (text, why) in [
            ("{", "not JSON: "),
            ("{}", "the \"engine_overrides\" list is missing"),
            (
                r#"{"version": 3, "engine_overrides": []}"#,
                "version 3 is not one this build reads (1 to 2)",
            ),
            (
                r#"{"engine_overrides": [{"op": "matmul", "engine_name": "e", "tensors": [{"dim": [1, "2"]}]}]}"#,
                "engine_overrides[0].tensors[0]: \"dim\" is not a list of integers",
            ),
            (
                r#"{"engine_overrides": [{"op": "matmul", "engine_name": "e", "tensors": [],
                    "criteria": {"pointwise_mode": "ADD"}}]}"#,
                "engine_overrides[0]: criterion \"pointwise_mode\" is not an integer",
            ),
        ] {
            let e = EngineOverrideConfig::parse(text).unwrap_err();
            assert!(e.starts_with(why), "{e:?} vs {why:?}");
        }
    }
}
