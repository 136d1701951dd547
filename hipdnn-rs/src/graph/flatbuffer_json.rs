//! The legacy JSON form of a graph ([`Graph::to_flatbuffer_json`] /
//! [`Graph::from_flatbuffer_json`]): this crate's format before it adopted upstream's (the
//! format of [`Graph::to_json`] / [`Graph::from_json`]). Kept as a documented legacy
//! reader/writer for files written by earlier versions and for comparison with `flatc`.
//!
//! A field-for-field image of the `Graph` schema in flatc's JSON conventions (enum and
//! union-type names as strings, union value under `attributes` / `value`, structs as objects),
//! plus the top-level keys `hipdnn_frontend_version` and `json_version`. It covers every node
//! kind of the schema (upstream's format covers the ones upstream's JSON converters have).
//!
//! The writer emits every field (absent optional fields as `null`) in schema order, tensors in
//! insertion order and nodes in topological order, so JSON → graph → JSON is identical. The
//! reader also accepts flatc's output (`flatc --json --strict-json --defaults-json`): a missing
//! key reads as the schema default, like a missing FlatBuffers field, except the keys a reader
//! requires (a tensor's `uid`, `dims`, `strides`; a node's tensor references), which flatc
//! omits at their default without `--defaults-json`. It is strict: unknown keys, duplicate
//! keys, missing required keys and wrong value types are refused (`InvalidValue`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::error::{Error, Result};
use super::kinds::{
    Rctx, Wctx, enum_from_json, enum_to_json, f32_to_json, f64_to_json, json_i64, json_to_f64,
};
use super::tensor::{TensorAttributes, TensorId, TensorValue};
use super::types::{DataType, EngineApiVersion};
use super::{Graph, Operation};

/// `json_version` written by [`Graph::to_flatbuffer_json`]; readers accept any `1.x`.
pub const JSON_VERSION: &str = "1.0";

const GRAPH_KEYS: &[&str] = &[
    "hipdnn_frontend_version",
    "json_version",
    "name",
    "compute_data_type",
    "intermediate_data_type",
    "io_data_type",
    "tensors",
    "nodes",
    "preferred_engine_id",
    "is_override_shape_enabled",
    "min_required_engine_api_version",
    "id",
];
const TENSOR_KEYS: &[&str] = &[
    "uid",
    "name",
    "data_type",
    "strides",
    "dims",
    "virtual",
    "value_type",
    "value",
    "is_runtime_pass_by_value",
    "ragged_offset_tensor_uid",
    "alignment",
];
/// Tensor keys a reader requires (a missing `uid` used to read as 0, aliasing tensor 0).
const REQUIRED_TENSOR_KEYS: &[&str] = &["uid", "dims", "strides"];

/// The first object key that occurs twice in one object of `json` (already valid JSON), at
/// any depth (serde_json keeps the last one silently). Keys are compared after unescaping.
fn duplicate_key(json: &str) -> Option<String> {
    // Per open container: `Some(keys)` for an object, `None` for an array.
    let mut stack: Vec<Option<Vec<String>>> = Vec::new();
    let mut expect_key = false;
    let b = json.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                stack.push(Some(Vec::new()));
                expect_key = true;
            }
            b'[' => {
                stack.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(stack.last(), Some(Some(_))),
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if expect_key && let Some(Some(keys)) = stack.last_mut() {
                    let raw = json.get(start..=i.min(b.len() - 1))?;
                    let key: String = serde_json::from_str(raw).ok()?;
                    if keys.contains(&key) {
                        return Some(key);
                    }
                    keys.push(key);
                }
                expect_key = false;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

const NODE_KEYS: &[&str] = &["name", "compute_data_type", "attributes_type", "attributes"];

fn value_json(v: Option<TensorValue>) -> (Value, Value) {
    let (ty, val) = match v {
        None => return (Value::from("NONE"), Value::Null),
        Some(TensorValue::Float32(x)) => ("Float32Value", f32_to_json(x)),
        Some(TensorValue::Float16(x)) => ("Float16Value", f32_to_json(x)),
        Some(TensorValue::BFloat16(x)) => ("BFloat16Value", f32_to_json(x)),
        Some(TensorValue::Float8(x)) => ("Float8Value", Value::from(x)),
        Some(TensorValue::Int32(x)) => ("Int32Value", Value::from(x)),
        Some(TensorValue::Float64(x)) => ("Float64Value", f64_to_json(x)),
        Some(TensorValue::Int64(x)) => ("Int64Value", Value::from(x)),
        Some(TensorValue::Bool(x)) => ("BoolValue", Value::from(x)),
    };
    let mut m = Map::new();
    m.insert("value".into(), val);
    (Value::from(ty), Value::Object(m))
}

fn obj<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::invalid(format!("JSON: {what} is not an object")))
}

fn check_keys(m: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<()> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Error::invalid(format!("JSON: {what}: unknown key '{k}'"))),
        None => Ok(()),
    }
}

fn get<'m>(m: &'m Map<String, Value>, k: &str) -> Option<&'m Value> {
    m.get(k).filter(|v| !v.is_null())
}

fn bad(what: &str, k: &str, expected: &str) -> Error {
    Error::invalid(format!("JSON: {what}: '{k}': expected {expected}"))
}

fn opt_i64(m: &Map<String, Value>, k: &str, what: &str) -> Result<Option<i64>> {
    get(m, k)
        .map(|v| json_i64(v).ok_or_else(|| bad(what, k, "an integer")))
        .transpose()
}

fn bool_or(m: &Map<String, Value>, k: &str, what: &str, default: bool) -> Result<bool> {
    get(m, k).map_or(Ok(default), |v| {
        v.as_bool().ok_or_else(|| bad(what, k, "a boolean"))
    })
}

fn string(m: &Map<String, Value>, k: &str, what: &str) -> Result<String> {
    get(m, k).map_or(Ok(String::new()), |v| {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| bad(what, k, "a string"))
    })
}

fn i64_vec(m: &Map<String, Value>, k: &str, what: &str) -> Result<Vec<i64>> {
    match get(m, k) {
        None => Ok(Vec::new()),
        Some(v) => v
            .as_array()
            .ok_or_else(|| bad(what, k, "an array of integers"))?
            .iter()
            .map(|x| json_i64(x).ok_or_else(|| bad(what, k, "an array of integers")))
            .collect(),
    }
}

fn read_value(m: &Map<String, Value>, what: &str) -> Result<Option<TensorValue>> {
    let ty = get(m, "value_type").map_or(Ok("NONE"), |v| {
        v.as_str()
            .ok_or_else(|| bad(what, "value_type", "a union type name"))
    })?;
    let val = get(m, "value");
    if ty == "NONE" {
        return match val {
            None => Ok(None),
            Some(_) => Err(Error::invalid(format!(
                "JSON: {what}: 'value' is set but 'value_type' is NONE"
            ))),
        };
    }
    let inner = val
        .and_then(Value::as_object)
        .and_then(|o| o.get("value"))
        .ok_or_else(|| bad(what, "value", "an object {\"value\": ...}"))?;
    let e = || bad(what, "value", &format!("a {ty} value"));
    let f32v = || json_to_f64(inner).map(|x| x as f32).ok_or_else(e);
    Ok(Some(match ty {
        "Float32Value" => TensorValue::Float32(f32v()?),
        "Float16Value" => TensorValue::Float16(f32v()?),
        "BFloat16Value" => TensorValue::BFloat16(f32v()?),
        "Float8Value" => TensorValue::Float8(
            inner
                .as_u64()
                .and_then(|x| u8::try_from(x).ok())
                .ok_or_else(e)?,
        ),
        "Int32Value" => TensorValue::Int32(
            inner
                .as_i64()
                .and_then(|x| i32::try_from(x).ok())
                .ok_or_else(e)?,
        ),
        "Float64Value" => TensorValue::Float64(json_to_f64(inner).ok_or_else(e)?),
        "Int64Value" => TensorValue::Int64(inner.as_i64().ok_or_else(e)?),
        "BoolValue" => TensorValue::Bool(inner.as_bool().ok_or_else(e)?),
        other => {
            return Err(Error::invalid(format!(
                "JSON: {what}: value_type '{other}' is not a member of TensorValue"
            )));
        }
    }))
}

impl Graph {
    /// The graph as JSON (pretty-printed): upstream's field names, a field-for-field image of
    /// the schema plus `hipdnn_frontend_version` (this crate's version) and `json_version`
    /// ([`JSON_VERSION`]). Deterministic; `Graph::from_flatbuffer_json(&s)?.to_flatbuffer_json()? == s`.
    ///
    /// # Errors
    /// Same as [`Graph::to_graph_bytes`]: missing UIDs or required node tensors
    /// (`AttributeNotSet`), duplicate UIDs, foreign handles or a cycle (`InvalidValue`).
    pub fn to_flatbuffer_json(&self) -> Result<String> {
        let v = self.to_flatbuffer_json_value()?;
        serde_json::to_string_pretty(&v).map_err(|e| Error::invalid(format!("JSON: {e}")))
    }

    /// [`Graph::to_flatbuffer_json`] as a `serde_json::Value`.
    ///
    /// # Errors
    /// As [`Graph::to_flatbuffer_json`].
    pub fn to_flatbuffer_json_value(&self) -> Result<Value> {
        let uids = self.checked_uids()?;
        let order = self.topological_order()?;
        let mut tensors = Vec::with_capacity(self.tensors.len());
        for (i, t) in self.tensors.iter().enumerate() {
            let mut m = Map::new();
            m.insert("uid".into(), Value::from(uids[i]));
            m.insert("name".into(), Value::from(t.name.as_str()));
            m.insert("data_type".into(), enum_to_json(t.data_type));
            m.insert("strides".into(), Value::from(t.strides.clone()));
            m.insert("dims".into(), Value::from(t.dims.clone()));
            m.insert("virtual".into(), Value::from(t.is_virtual));
            let (ty, val) = value_json(t.value);
            m.insert("value_type".into(), ty);
            m.insert("value".into(), val);
            m.insert(
                "is_runtime_pass_by_value".into(),
                Value::from(t.is_runtime_pass_by_value),
            );
            let ragged = match t.ragged_offset {
                None => Value::Null,
                Some(r) => Value::from(*uids.get(r.index()).ok_or_else(|| {
                    Error::invalid(format!("tensor #{i} '{}': ragged offset refers to tensor #{} which is not in this graph", t.name, r.index()))
                })?),
            };
            m.insert("ragged_offset_tensor_uid".into(), ragged);
            m.insert("alignment".into(), Value::from(t.alignment));
            tensors.push(Value::Object(m));
        }
        let mut nodes = Vec::with_capacity(order.len());
        for n in order {
            let op = &self.nodes[n.index()];
            let label = format!("{} '{}'", op.method(), op.name());
            let c = Wctx {
                uids: &uids,
                label: &label,
            };
            let mut m = Map::new();
            m.insert("name".into(), Value::from(op.name()));
            m.insert(
                "compute_data_type".into(),
                enum_to_json(op.compute_data_type()),
            );
            m.insert("attributes_type".into(), Value::from(op.schema_table()));
            m.insert("attributes".into(), Value::Object(op.json_write(&c)?));
            nodes.push(Value::Object(m));
        }
        let mut g = Map::new();
        g.insert(
            "hipdnn_frontend_version".into(),
            Value::from(env!("CARGO_PKG_VERSION")),
        );
        g.insert("json_version".into(), Value::from(JSON_VERSION));
        g.insert("name".into(), Value::from(self.name.as_str()));
        g.insert(
            "compute_data_type".into(),
            enum_to_json(self.compute_data_type),
        );
        g.insert(
            "intermediate_data_type".into(),
            enum_to_json(self.intermediate_data_type),
        );
        g.insert("io_data_type".into(), enum_to_json(self.io_data_type));
        g.insert("tensors".into(), Value::Array(tensors));
        g.insert("nodes".into(), Value::Array(nodes));
        g.insert(
            "preferred_engine_id".into(),
            self.preferred_engine_id.map_or(Value::Null, Value::from),
        );
        g.insert(
            "is_override_shape_enabled".into(),
            Value::from(self.override_shape_enabled),
        );
        g.insert(
            "min_required_engine_api_version".into(),
            self.min_required_engine_api_version.map_or(
                Value::Null,
                |v| serde_json::json!({ "major": v.major, "minor": v.minor, "patch": v.patch }),
            ),
        );
        g.insert(
            "id".into(),
            self.id
                .map_or(Value::Null, |b| serde_json::json!({ "bytes": b.to_vec() })),
        );
        Ok(Value::Object(g))
    }

    /// Loads a graph from JSON written by [`Graph::to_flatbuffer_json`] or by
    /// `flatc --json --strict-json --defaults-json graph.fbs` (missing keys read as schema
    /// defaults, except the required ones: module docs).
    ///
    /// # Errors
    /// `InvalidValue` for malformed JSON, an unknown key, a wrong value type, an unknown enum
    /// or union name, a `json_version` other than `1.x`, duplicate UIDs ("Duplicate tensor UIDs
    /// found in the graph"), or a node referencing a UID no tensor has.
    pub fn from_flatbuffer_json(json: &str) -> Result<Graph> {
        let v: Value =
            serde_json::from_str(json).map_err(|e| Error::invalid(format!("JSON: {e}")))?;
        if let Some(k) = duplicate_key(json) {
            return Err(Error::invalid(format!(
                "JSON: an object holds the key '{k}' twice"
            )));
        }
        Self::from_flatbuffer_json_value(&v)
    }

    /// [`Graph::from_flatbuffer_json`] from a parsed `serde_json::Value`.
    ///
    /// # Errors
    /// As [`Graph::from_flatbuffer_json`].
    pub fn from_flatbuffer_json_value(v: &Value) -> Result<Graph> {
        let g = obj(v, "the graph")?;
        check_keys(g, GRAPH_KEYS, "graph")?;
        if let Some(ver) = get(g, "json_version") {
            let s = ver
                .as_str()
                .ok_or_else(|| bad("graph", "json_version", "a string"))?;
            if !s.starts_with("1.") {
                return Err(Error::invalid(format!(
                    "JSON: json_version '{s}' is not supported (expected 1.x)"
                )));
            }
        }
        let gl = "graph";
        let tensors_json: &[Value] = match get(g, "tensors") {
            None => &[],
            Some(t) => t.as_array().ok_or_else(|| bad(gl, "tensors", "an array"))?,
        };
        let mut by_uid = HashMap::with_capacity(tensors_json.len());
        let mut raw = Vec::with_capacity(tensors_json.len());
        for (i, t) in tensors_json.iter().enumerate() {
            let what = format!("tensor #{i}");
            let m = obj(t, &what)?;
            check_keys(m, TENSOR_KEYS, &what)?;
            for k in REQUIRED_TENSOR_KEYS {
                if get(m, k).is_none() {
                    return Err(Error::invalid(format!(
                        "JSON: {what}: required key '{k}' is missing"
                    )));
                }
            }
            let uid = opt_i64(m, "uid", &what)?.unwrap_or(0);
            if by_uid.insert(uid, TensorId(i as u32)).is_some() {
                return Err(Error::invalid(format!(
                    "Duplicate tensor UIDs found in the graph (UID {uid} at tensor #{i})"
                )));
            }
            raw.push((uid, m, what));
        }
        let raw_uids: Vec<i64> = raw.iter().map(|(u, _, _)| *u).collect();
        let mut tensors = Vec::with_capacity(raw.len());
        for (uid, m, what) in raw {
            let ragged_offset = match opt_i64(m, "ragged_offset_tensor_uid", &what)? {
                None => None,
                Some(u) => Some(*by_uid.get(&u).ok_or_else(|| {
                    Error::invalid(format!("JSON: {what}: 'ragged_offset_tensor_uid' references UID {u} which no tensor of the graph has"))
                })?),
            };
            tensors.push(TensorAttributes {
                uid: Some(uid),
                name: string(m, "name", &what)?,
                data_type: enum_from_json::<DataType>(m.get("data_type"), &what, "data_type")?,
                dims: i64_vec(m, "dims", &what)?,
                strides: i64_vec(m, "strides", &what)?,
                is_virtual: bool_or(m, "virtual", &what, false)?,
                value: read_value(m, &what)?,
                is_runtime_pass_by_value: bool_or(m, "is_runtime_pass_by_value", &what, false)?,
                ragged_offset,
                alignment: opt_i64(m, "alignment", &what)?
                    .unwrap_or(super::tensor::DEFAULT_ALIGNMENT),
            });
        }
        let nodes_json: &[Value] = match get(g, "nodes") {
            None => &[],
            Some(n) => n.as_array().ok_or_else(|| bad(gl, "nodes", "an array"))?,
        };
        let mut nodes = Vec::with_capacity(nodes_json.len());
        for (i, n) in nodes_json.iter().enumerate() {
            let m = obj(n, &format!("node #{i}"))?;
            let name = string(m, "name", &format!("node #{i}"))?;
            let label = format!("node #{i} '{name}'");
            check_keys(m, NODE_KEYS, &label)?;
            let compute = enum_from_json::<DataType>(
                m.get("compute_data_type"),
                &label,
                "compute_data_type",
            )?;
            let ty = get(m, "attributes_type")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(&label, "attributes_type", "a NodeAttributes member name"))?;
            let empty = Map::new();
            let attrs = match get(m, "attributes") {
                None => &empty,
                Some(a) => obj(a, &format!("{label} attributes"))?,
            };
            let c = Rctx {
                by_uid: &by_uid,
                label: &label,
            };
            let op = Operation::json_read(ty, name, compute, attrs, &c).map_err(|e| {
                // A missing reference reads as UID 0; name the missing key instead.
                let missing = e
                    .message
                    .split_once("attribute '")
                    .and_then(|(_, r)| r.split_once("' references UID"))
                    .map(|(k, _)| k.to_string())
                    .filter(|k| get(attrs, k).is_none());
                match missing {
                    Some(k) => Error::invalid(format!(
                        "JSON: {label}: required key 'attributes.{k}' is missing"
                    )),
                    None => e,
                }
            })?;
            // Required tensor references: every `*_tensor_uid` key the writer emits with a
            // value for this node must be in the input (a missing one used to read as UID 0).
            let w = Wctx {
                uids: &raw_uids,
                label: &label,
            };
            for (k, v) in op.json_write(&w)? {
                if k.ends_with("tensor_uid") && !v.is_null() && get(attrs, &k).is_none() {
                    return Err(Error::invalid(format!(
                        "JSON: {label}: required key 'attributes.{k}' is missing"
                    )));
                }
            }
            nodes.push(op);
        }
        let version = match get(g, "min_required_engine_api_version") {
            None => None,
            Some(v) => {
                let m = obj(v, "min_required_engine_api_version")?;
                let part = |k: &str| -> Result<u32> {
                    get(m, k).map_or(Ok(0), |x| {
                        x.as_u64()
                            .and_then(|x| u32::try_from(x).ok())
                            .ok_or_else(|| {
                                bad(
                                    "min_required_engine_api_version",
                                    k,
                                    "a 32-bit unsigned integer",
                                )
                            })
                    })
                };
                Some(EngineApiVersion {
                    major: part("major")?,
                    minor: part("minor")?,
                    patch: part("patch")?,
                })
            }
        };
        let id = match get(g, "id") {
            None => None,
            Some(v) => {
                let bytes = obj(v, "id")?
                    .get("bytes")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad(gl, "id", "{\"bytes\": [16 bytes]}"))?;
                let mut b = [0u8; 16];
                if bytes.len() != 16 {
                    return Err(bad(gl, "id", "{\"bytes\": [16 bytes]}"));
                }
                for (dst, src) in b.iter_mut().zip(bytes) {
                    *dst = src
                        .as_u64()
                        .and_then(|x| u8::try_from(x).ok())
                        .ok_or_else(|| bad(gl, "id", "bytes 0..=255"))?;
                }
                Some(b)
            }
        };
        Ok(Graph {
            name: string(g, "name", gl)?,
            compute_data_type: enum_from_json(g.get("compute_data_type"), gl, "compute_data_type")?,
            intermediate_data_type: enum_from_json(
                g.get("intermediate_data_type"),
                gl,
                "intermediate_data_type",
            )?,
            io_data_type: enum_from_json(g.get("io_data_type"), gl, "io_data_type")?,
            tensors,
            nodes,
            preferred_engine_id: opt_i64(g, "preferred_engine_id", gl)?,
            override_shape_enabled: bool_or(g, "is_override_shape_enabled", gl, false)?,
            min_required_engine_api_version: version,
            id,
            compiled: Default::default(),
            filter: Default::default(),
        })
    }
}
